"""notebooks/ is exactly what nbgrader generates from solutions/, with nothing to hide in it."""
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.grading.course import assignments
from autograder.grading.distribute.release import release_to_temp

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = assignments(ROOT)


@pytest.fixture(scope="module")
def fresh_release() -> Path:
    out = release_to_temp(ASSIGNMENTS, root=ROOT)
    yield out
    shutil.rmtree(out, ignore_errors=True)


def test_every_solution_has_a_release():
    released = sorted(p.relative_to(ROOT / "notebooks") for p in (ROOT / "notebooks").glob("*/*.ipynb"))
    sources = sorted(p.relative_to(ROOT / "solutions") for p in (ROOT / "solutions").glob("*/*.ipynb"))
    assert released == sources and len(ASSIGNMENTS) >= 2


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_committed_release_equals_generated_release(fresh_release, assignment_id):
    for generated in sorted((fresh_release / assignment_id).glob("*.ipynb")):
        committed = ROOT / "notebooks" / assignment_id / generated.name
        assert committed.read_text() == generated.read_text(), (
            f"{committed} is out of date: run `course release {assignment_id}`")


def _hidden_test_lines(solution: Path) -> list[str]:
    lines, inside = [], False
    for cell in nbformat.read(solution, as_version=4).cells:
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) > 8:
                lines.append(line.strip())
    return lines


def _solution_lines(solution: Path) -> list[str]:
    lines = []
    for cell in nbformat.read(solution, as_version=4).cells:
        inside = False
        for line in cell.source.splitlines():
            if "BEGIN SOLUTION" in line:
                inside = True
            elif "END SOLUTION" in line:
                inside = False
            elif inside and len(line.strip()) > 12 and not line.strip().startswith("#"):
                lines.append(line.strip())
    return lines


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_release_has_no_outputs_solutions_or_hidden_tests(assignment_id):
    solution = ROOT / "solutions" / assignment_id / f"{assignment_id}.ipynb"
    released = ROOT / "notebooks" / assignment_id / f"{assignment_id}.ipynb"
    nb = nbformat.read(released, as_version=4)
    text = "\n".join(cell.source for cell in nb.cells)
    assert not re.search(r"BEGIN (SOLUTION|HIDDEN TESTS)|END (SOLUTION|HIDDEN TESTS)", text)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")
    hidden = _hidden_test_lines(solution)
    assert hidden, "every assignment has hidden tests"
    assert [line for line in hidden if line in text] == []
    # Solution lines that also appear in the released prose or scaffolding are not leaks.
    scaffold = "\n".join(c.source for c in nb.cells if not c.metadata.get("nbgrader", {}).get("solution"))
    leaked = [line for line in _solution_lines(solution)
              if line in text and line not in scaffold]
    assert leaked == []


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_every_graded_cell_has_points_and_a_visible_check(assignment_id):
    nb = nbformat.read(ROOT / "solutions" / assignment_id / f"{assignment_id}.ipynb", as_version=4)
    meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
    graded = [m for m in meta if m.get("grade")]
    assert len(graded) >= 4
    assert all(m.get("points", 0) > 0 for m in graded)
    ids = {m.get("grade_id") for m in meta}
    for m in graded:
        name = m["grade_id"].removeprefix("test_")
        assert name in ids and f"{name}_check" in ids, f"{name}: exercise and visible check cells"


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_a_visible_check_and_its_graded_cell_say_which_is_which(assignment_id):
    # the two run the same check call: their first lines tell a student which one grades
    nb = nbformat.read(ROOT / "notebooks" / assignment_id / f"{assignment_id}.ipynb", as_version=4)
    firsts = {}
    for c in nb.cells:
        meta = c.metadata.get("nbgrader", {})
        kind = "visible" if meta.get("grade_id", "").endswith("_check") else \
            "graded" if meta.get("grade") and not meta.get("solution") else None
        if kind:
            firsts.setdefault(kind, set()).add(c.source.splitlines()[0])
    assert firsts["visible"] == {"# Check your answer: run this cell after each change; it names "
                                 "the first problem it finds."}
    assert firsts["graded"] == {"# Graded cell (read-only): the check above again; when your "
                                "instructor grades, it also runs hidden cases."}


def test_solutions_are_executed_with_the_cpu_a_student_has():
    """Grading kernels split the CPU in two for 08's checks; the stored outputs come from kernels
    without that split, so a notebook that lists its devices shows what a student's kernel has."""
    from autograder.grading.defaults import KERNEL_ENV
    from autograder.grading.distribute.release import SolutionKernelManager

    env = SolutionKernelManager().launch_env({})
    assert "WORKBOOK_LOGICAL_CPUS" not in env
    assert env == {k: v for k, v in KERNEL_ENV.items() if k != "WORKBOOK_LOGICAL_CPUS"}
    for solution in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        code = [cell for cell in nbformat.read(solution, as_version=4).cells if cell.cell_type == "code"]
        stored = "".join(str(output.get("text", "")) for cell in code for output in cell.outputs)
        asks_for_two = any('os.environ["WORKBOOK_LOGICAL_CPUS"] = "2"' in cell.source for cell in code)
        assert ("/CPU:1" in stored) == asks_for_two, solution.name
