"""The students' JupyterLab set-up never starts where the hidden tests can be read.

``jupyter-config/student.py`` refuses, with the reason, in a checkout that holds ``solutions/``
(a Terminal or a notebook cell could open every hidden test there), unless an instructor says
``WORKBOOK_INSTRUCTOR_PREVIEW=1``; in the student bundle's layout (no ``solutions/``) it loads.
The real ``jupyter lab`` command is run, as the README gives it.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JUPYTER = str(Path(sys.executable).parent / "jupyter")


def _lab(config: Path, cwd: Path, **env) -> subprocess.CompletedProcess:
    # --help-all loads the config files and exits without serving: enough to see a refusal.
    environ = {k: v for k, v in os.environ.items() if k != "WORKBOOK_INSTRUCTOR_PREVIEW"} | env
    return subprocess.run([JUPYTER, "lab", f"--config={config}", "--no-browser", "--port=0",
                           "--ServerApp.open_browser=False", "--show-config"],
                          cwd=cwd, env=environ, capture_output=True, text=True, timeout=300)


def test_refuses_in_the_instructors_checkout_and_says_why():
    run = _lab(ROOT / "jupyter-config" / "student.py", ROOT)
    assert run.returncode != 0
    assert f"{ROOT / 'solutions'}" in run.stderr and "student bundle" in run.stderr


def test_a_bundle_started_from_inside_the_checkout_refuses_too(tmp_path):
    # The bundle's own config, but the server's folder is under the instructor's checkout.
    (tmp_path / "jupyter-config").mkdir()
    shutil.copy(ROOT / "jupyter-config" / "student.py", tmp_path / "jupyter-config")
    run = _lab(tmp_path / "jupyter-config" / "student.py", ROOT / "notebooks")
    assert run.returncode != 0 and "WORKBOOK_INSTRUCTOR_PREVIEW=1" in run.stderr


def test_an_instructor_preview_starts_in_the_checkout():
    run = _lab(ROOT / "jupyter-config" / "student.py", ROOT, WORKBOOK_INSTRUCTOR_PREVIEW="1")
    assert run.returncode == 0, run.stderr
    assert "validate_assignment" in run.stdout


def test_starts_in_the_bundles_layout_without_solutions(tmp_path):
    course = tmp_path / "tf-autodiff-workbook"
    (course / "jupyter-config").mkdir(parents=True)
    shutil.copy(ROOT / "jupyter-config" / "student.py", course / "jupyter-config")
    shutil.copytree(ROOT / "notebooks", course / "notebooks")
    run = _lab(course / "jupyter-config" / "student.py", course)
    assert run.returncode == 0, run.stderr
    assert "formgrader" in run.stdout      # the extension listed, switched off
