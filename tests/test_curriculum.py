"""CURRICULUM.md keeps in step with the solution notebooks (JSON only: no TensorFlow, no kernel).

Every assignment folder of solutions/ has a section `## <id>: ...`; every value quoted in
backticks in a section's "**Values**" list is printed, as stored, by a cell of that notebook
tagged `nbval-check-output` (the cells nbval compares); the section's table of graded cells
lists exactly the notebook's graded cells, with their points.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CURRICULUM = ROOT / "CURRICULUM.md"
ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir()
                     if (p / f"{p.name}.ipynb").is_file())


def _sections() -> dict[str, str]:
    """Assignment id -> the text of its `## <id>...` section."""
    text = CURRICULUM.read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    return {re.match(r"[\w]+", part).group(0).rstrip(":"): part for part in parts}


def _values(section: str) -> list[str]:
    """The backticked values of the section's "**Values**" list (its `- ` items)."""
    lines = section.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("**Values**")), None)
    if start is None:
        return []
    values = []
    for line in lines[start + 1:]:
        if not line.startswith("- "):
            break
        values += re.findall(r"`([^`]+)`", line)
    return values


def _notebook(assignment: str) -> dict:
    path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))


def _checked_outputs(notebook: dict) -> list[str]:
    """The stored text output of each cell tagged nbval-check-output (its streams joined)."""
    texts = []
    for cell in notebook["cells"]:
        if "nbval-check-output" not in cell.get("metadata", {}).get("tags", []):
            continue
        text = ""
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                chunk = output.get("text", "")
            else:
                chunk = output.get("data", {}).get("text/plain", "")
            text += chunk if isinstance(chunk, str) else "".join(chunk)
        texts.append(text)
    return texts


def _graded_cells(notebook: dict) -> dict[str, int]:
    cells = {}
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            cells[meta["grade_id"]] = meta.get("points")
    return cells


def test_every_assignment_has_a_section():
    assert len(ASSIGNMENTS) >= 7
    missing = [a for a in ASSIGNMENTS if a not in _sections()]
    assert not missing, f"CURRICULUM.md has no `## <id>: ...` section for {missing}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_quoted_values_are_in_the_stored_outputs(assignment):
    section = _sections().get(assignment)
    if section is None:
        pytest.fail(f"CURRICULUM.md has no section for {assignment}")
    values = _values(section)
    assert values, f"the section of {assignment} quotes no value in a **Values** list"
    outputs = _checked_outputs(_notebook(assignment))
    missing = [v for v in values if not any(v in text for text in outputs)]
    assert not missing, (
        f"values quoted for {assignment} that no cell tagged nbval-check-output prints "
        f"(as stored): {missing}")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_graded_cells_and_points(assignment):
    section = _sections().get(assignment)
    if section is None:
        pytest.fail(f"CURRICULUM.md has no section for {assignment}")
    listed = {m.group(1): int(m.group(2))
              for m in re.finditer(r"^\| `(\w+)` \| (\d+) \|", section, flags=re.MULTILINE)}
    assert listed == _graded_cells(_notebook(assignment)), (
        f"the graded cells of {assignment} in CURRICULUM.md differ from the notebook's")
