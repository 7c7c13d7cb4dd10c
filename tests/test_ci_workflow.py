"""The CI workflow an instructor keeps for a fork is valid GitHub Actions and runs what .ci/run runs.

Checked with check-jsonschema against the GitHub workflow schema it ships (no download), then
read: the job runs ``.ci/run``, whose last command is the README's test command.
"""
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def test_the_workflow_is_valid_for_github_actions():
    run = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                          "vendor.github-workflows", str(WORKFLOW)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_workflow_with_a_typo_is_refused(tmp_path):
    broken = tmp_path / "ci.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "run-on:"))
    run = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                          "vendor.github-workflows", str(broken)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0


def test_the_workflow_runs_ci_run_which_runs_the_readmes_test_command():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert ".ci/run" in steps
    last = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    readme = (ROOT / "README.md").read_text()
    command = last.split("&&")[-1].strip()
    assert command.startswith(".venv/bin/pytest") and command in readme
