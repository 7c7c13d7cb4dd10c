"""environment.yml (conda, for students) installs what pyproject.toml declares."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pip_requirements_of_environment_yml() -> set[str]:
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\s*- pip:\s*$", line))
    reqs = set()
    for line in lines[start + 1:]:
        m = re.match(r"\s{6,}- (.+?)\s*$", line)
        if not m:
            break
        reqs.add(m.group(1))
    return reqs - {"-e ."}


def test_environment_yml_lists_exactly_the_pyproject_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set(project["dependencies"]) | set(project["optional-dependencies"]["test"])
    assert _pip_requirements_of_environment_yml() == declared


def test_environment_yml_installs_the_workbook_itself():
    assert re.search(r"^\s+- -e \.\s*$", (ROOT / "environment.yml").read_text(), re.M)
