"""Submissions as real front ends and older nbgrader versions write them (issue 21): cell metadata
an editor dropped (versions of VS Code drop it from every cell they run) recovered from the
release, or the file refused with the reason when nothing matches; every cell nbgrader put back
reported with what was wrong, unlocked test cells included; no note for metadata keys that only
nbgrader versions write differently; nbgrader's markers in a student's text made inert, so that
student gets feedback.

The graded tests share one real `course grade` run (the command in the test's interpreter, real
kernels, real nbgrader) of assignment 01 in a copy of the course whose test cells test_square_grad
and test_sum_squared_grad are marked unlocked (nbgrader still restores them: they are graded
cells) and which has a task cell, and one run that only refuses (no kernel starts). 01's cells:
set-up; four exercises, each an answer cell, a locked check cell and a graded test cell (2, 2, 3, 3
points); prose and demonstrations between.
"""
import copy
import csv
from pathlib import Path

import nbformat
import pytest

from autograder.grading.demo.samples import solution_answers
from autograder.grading.distribute.release import release
from autograder.grading.failures import Outcome
from autograder.grading.intake.submissions import find_submissions, stage
from autograder.grading.run.pipeline import grade_class
from tests import mutate
from tests.test_grading_samples import _hashes
from tests.conftest import grading_workers, shared_scheduler
from tests.instructor_course import run_command

ROOT = Path(__file__).resolve().parents[1]
A = "01_gradient_tape"
FULL = {"test_square_grad": 2.0, "test_sum_squared_grad": 2.0, "test_train_step": 3.0,
        "test_fit_line": 3.0}
UNLOCKED_TESTS = ("test_square_grad", "test_sum_squared_grad")
TASK = nbformat.v4.new_markdown_cell(
    "**Task (1 point, graded by hand).** Say in one sentence why `tape.gradient` gave `None` "
    "for `x = tf.constant(3)`.", metadata={"nbgrader": {
        "grade": False, "solution": False, "locked": True, "task": True, "points": 1,
        "grade_id": "explain_none", "schema_version": 3}})


def _gid(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def _index(nb, grade_id: str) -> int:
    return [_gid(c) for c in nb.cells].index(grade_id)


def _answered(course: Path):
    """The release of 01 in ``course`` with the solution's answers, as a full submission."""
    nb = nbformat.read(course / "notebooks" / A / f"{A}.ipynb", as_version=4)
    for grade_id, source in solution_answers(course, A).items():
        nb.cells[_index(nb, grade_id)].source = source
    return nb


def _stripped(nb, upto: str | None = None):
    """``nb`` with the metadata of every cell dropped, or (``upto``) of the code cells up to the
    cell ``upto``, as an editor leaves the cells a student ran from the top."""
    nb = copy.deepcopy(nb)
    stop = _index(nb, upto) + 1 if upto else len(nb.cells)
    for cell in nb.cells[:stop]:
        if upto is None or cell.cell_type == "code":
            cell.metadata = {}
    return nb


def _tests_emptied_and_commented(nb):
    nb = copy.deepcopy(nb)
    nb.cells[_index(nb, "test_square_grad")].source = ""
    cell = nb.cells[_index(nb, "test_sum_squared_grad")]
    cell.source = "\n".join("# " + line for line in cell.source.splitlines())
    return nb


def _older_nbgrader(nb):
    """``nb`` as a release of an older nbgrader left it: no ``cell_type`` nor ``checksum`` in any
    cell's nbgrader metadata (the task cell's included)."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        for key in ("cell_type", "checksum"):
            cell.metadata.get("nbgrader", {}).pop(key, None)
    return nb


def _with_markers(nb):
    """Nbgrader's markers in an answer's comments (twice), in a markdown cell of notes and in a
    string an ordinary cell prints."""
    nb = mutate.hidden_test_markers(nb)
    at = _index(nb, "square_grad") + 1
    nb.cells.insert(at, nbformat.v4.new_markdown_cell(
        "Note to self: the instructor's test cells have ### BEGIN HIDDEN TESTS and "
        "### END HIDDEN TESTS, and answers ### BEGIN SOLUTION"))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell('print("### END HIDDEN TESTS")'))
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the course's 01, its first two test cells unlocked and a task cell added,
    released into ``<course>/notebooks``."""
    root = tmp_path_factory.mktemp("course")
    (root / "solutions" / A).mkdir(parents=True)
    solution = nbformat.read(ROOT / "solutions" / A / f"{A}.ipynb", as_version=4)
    for grade_id in UNLOCKED_TESTS:
        solution.cells[_index(solution, grade_id)].metadata["nbgrader"]["locked"] = False
    solution.cells.insert(_index(solution, "test_fit_line") + 1, copy.deepcopy(TASK))
    nbformat.write(solution, root / "solutions" / A / f"{A}.ipynb")
    release([A], root=root)
    return root


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    full = _answered(course)
    submitted = mutate.write_class(tmp_path_factory.mktemp("class"), A, {
        "all_stripped": _stripped(full),
        "some_stripped": _stripped(full, upto="test_sum_squared_grad"),
        "tests_emptied_commented": _tests_emptied_and_commented(full),
        "older_nbgrader": _older_nbgrader(full),
        "markers": _with_markers(full),
    })
    before = _hashes(submitted)
    out = tmp_path_factory.mktemp("out")
    # The command in this interpreter (tests/instructor_course.py): its exit code and printout.
    proc = run_command(["grade", str(submitted), "--out", str(out), "--course-root", str(course),
                        "--workers", str(grading_workers()), "--assignment", A,
                        "--scheduler", shared_scheduler()])
    with open(out / "scores_by_exercise.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by: dict[str, dict] = {}
    for row in rows:
        by.setdefault(row["student_id"], {})[row["grade_id"]] = row
    return proc, out, by, submitted, before


def _points(rows: dict) -> dict[str, float]:
    return {cell: float(row["score"]) for cell, row in rows.items() if cell in FULL}


def _one(rows: dict, column: str) -> str:
    [value] = {row[column] for row in rows.values()}
    return value


def test_every_front_end_variant_is_graded_with_full_marks_and_the_run_exits_0(graded):
    proc, out, by, submitted, before = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Needs attention" not in proc.stdout
    for student, rows in by.items():
        assert _points(rows) == FULL, (student, rows)
        assert _one(rows, "problem") == "" and _one(rows, "failed_steps") == "", rows
        assert rows["explain_none"]["max_score"] == "1"  # the task cell, left to a person
    assert sorted(by) == ["all_stripped", "markers", "older_nbgrader", "some_stripped",
                          "tests_emptied_commented"]
    assert _hashes(submitted) == before


@pytest.mark.parametrize("student,recovered", [
    # 13 nbgrader cells of 01 and the task cell; the markdown task cell is found by its source.
    ("all_stripped", "nbgrader metadata of 14 cells recovered from the release"),
    # Set-up, 2 answers, 2 checks and 2 tests: before, the lost test cells were put back above
    # the set-up cell and failed with NameError: name 'checks' is not defined.
    ("some_stripped", "nbgrader metadata of 7 cells recovered from the release"),
])
def test_cells_that_lost_their_nbgrader_metadata_are_recovered_and_noted(graded, student, recovered):
    _, out, by, _, _ = graded
    notes = _one(by[student], "notes")
    assert notes.startswith(recovered) and "put back" not in notes, notes
    assert _one(by[student], "restored_cells") == ""
    nb = nbformat.read(out / "autograded" / student / A / f"{A}.ipynb", as_version=4)
    release = nbformat.read(out / "release" / A / f"{A}.ipynb", as_version=4)
    assert [_gid(c) for c in nb.cells if _gid(c)] == [_gid(c) for c in release.cells if _gid(c)]


def test_emptied_and_commented_out_unlocked_test_cells_are_restored_and_reported(graded):
    _, _, by, _, _ = graded
    rows = by["tests_emptied_commented"]
    assert _points(rows) == FULL
    assert _one(rows, "restored_cells") == "test_square_grad (emptied); test_sum_squared_grad (edited)"


def test_metadata_as_older_nbgrader_wrote_it_gets_no_note(graded):
    _, _, by, _, _ = graded
    rows = by["older_nbgrader"]
    assert _one(rows, "notes") == "" and _one(rows, "restored_cells") == ""


def test_nbgrader_markers_in_a_students_text_are_made_inert_and_feedback_is_written(graded):
    _, out, by, _, _ = graded
    notes = _one(by["markers"], "notes")
    assert "nbgrader's markers ('BEGIN HIDDEN TESTS', 'END HIDDEN TESTS', 'BEGIN SOLUTION') in the " \
           "student's text of cells 19, 20, 21 were rewritten so that nbgrader does not read them" \
           in notes, notes
    html = (out / "feedback" / "markers" / A / f"{A}.html").read_text()
    # The student's text is there; the instructor's hidden tests (their markers too) are not.
    assert "my notes" in html and "Note to self" in html and "BEGIN HIDDEN TESTS" not in html
    # The rewritten string prints what the student wrote.
    nb = nbformat.read(out / "autograded" / "markers" / A / f"{A}.ipynb", as_version=4)
    [printed] = [c for c in nb.cells if c.source == 'print("### END HIDDEN\\x20TESTS")']
    # A loaded kernel may send one print as two stream messages: what matters is the text.
    assert [o.output_type for o in printed.outputs] == ["stream"] * len(printed.outputs)
    assert "".join(o.text for o in printed.outputs) == "### END HIDDEN TESTS\n"


def test_a_notebook_that_cannot_be_aligned_is_refused_with_the_reason(course, tmp_path):
    # Answers copied into a new notebook, and another assignment's notebook without its
    # metadata: refused before any kernel starts, each with the reason.
    answers = solution_answers(course, A)
    other = nbformat.read(ROOT / "notebooks" / "02_persistent_nested_tapes" /
                          "02_persistent_nested_tapes.ipynb", as_version=4)
    submitted = mutate.write_class(tmp_path / "class", A, {
        "new_notebook": nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell(source) for source in answers.values()]),
        "other_assignment": _stripped(other),
    })
    before = _hashes(submitted)
    run = grade_class(submitted, tmp_path / "out", root=course, workers=1, progress=False,
                      feedback=False, scheduler=shared_scheduler())
    assert sorted(g.student_id for g in run.grades) == ["new_notebook", "other_assignment"]
    for grade in run.grades:
        assert "its nbgrader cell metadata was stripped, and none of its cells is a locked cell " \
               "of the release" in grade.problem, grade.problem
        assert grade.outcome is Outcome.UNREADABLE and not grade.executed and grade.score == 0
    assert run.graded_now == 0 and _hashes(submitted) == before


# Staging alone (no kernel): where recovered cells go, and which cell an answer is.

def _stage(tmp_path, nb, release_dir=ROOT / "notebooks"):
    mutate.write_class(tmp_path / "class", A, {"erin": nb})
    [sub] = find_submissions(tmp_path / "class", {A: [A]})
    folder = stage(sub, tmp_path / "staged", release_dir=release_dir)
    return nbformat.read(folder / f"{A}.ipynb", as_version=4), sub


def _repo_full():
    nb = nbformat.read(ROOT / "notebooks" / A / f"{A}.ipynb", as_version=4)
    for grade_id, source in solution_answers(ROOT, A).items():
        nb.cells[_index(nb, grade_id)].source = source
    return nb


def test_recovered_cells_keep_the_release_order(tmp_path):
    full = _repo_full()
    staged, sub = _stage(tmp_path, _stripped(full, upto="test_sum_squared_grad"))
    assert [_gid(c) for c in staged.cells] == [_gid(c) for c in full.cells]
    assert [c.source for c in staged.cells] == [c.source for c in full.cells]


def test_an_answer_beside_a_scratch_cell_is_told_by_its_likeness_to_the_release(tmp_path):
    full = _repo_full()
    nb = _stripped(full)
    at = _index(full, "square_grad")
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell("print(square_grad(tf.constant(2.0)))"))
    nb.cells.insert(at, nbformat.v4.new_code_cell("x = 1"))
    staged, sub = _stage(tmp_path, nb)
    assert staged.cells[_index(staged, "square_grad")].source == full.cells[at].source
    assert not sub.problems and "nbgrader metadata of 13 cells recovered" in sub.notes[0]


def test_a_marker_in_a_raw_string_is_left_as_it_is_and_noted(tmp_path):
    nb = _repo_full()
    nb.cells.insert(3, nbformat.v4.new_code_cell('pattern = r"### BEGIN SOLUTION"'))
    staged, sub = _stage(tmp_path, nb)
    assert staged.cells[3].source == 'pattern = r"### BEGIN SOLUTION"'
    assert sub.notes == ["cell 4 holds nbgrader's markers where they cannot be rewritten without "
                         "changing the code (a raw string?): the feedback may fail"]


def test_stage_refuses_what_cannot_be_aligned_and_keeps_the_reason(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def square_grad(x):\n    pass")])
    mutate.write_class(tmp_path / "class", A, {"erin": nb})
    [sub] = find_submissions(tmp_path / "class", {A: [A]})
    assert not sub.problems  # decided against the release, when staging
    with pytest.raises(ValueError, match="cannot be matched with the release's"):
        stage(sub, tmp_path / "staged", release_dir=ROOT / "notebooks")
    assert "cannot be matched with the release's" in sub.problems[A]
    assert not (tmp_path / "staged" / "erin" / A / f"{A}.ipynb").exists()
