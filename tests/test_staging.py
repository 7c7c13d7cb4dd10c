"""Staging makes what front ends and students write gradable, and refuses only what cannot be:
cell ids, widget state, copied and deleted cells (G11, G12, G14), student ids (G15)."""
import copy

import nbformat
import pytest

from autograder.grading.intake.submissions import find_submissions, stage, student_id_problem
from autograder.grading.intake.reading import read_notebook
from autograder.grading.intake.repair import repair_grade_cells
from tests import mutate

from tests.test_submissions import _release_notebook


def _ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


@pytest.mark.parametrize("student_id", ["ada", "kim_2", "maría.lópez", "o-neil+1", "s123@uni",
                                        "kim[2]", "a b", "x*?", "o'neil"])
def test_ordinary_student_ids_are_accepted(student_id):
    # Names nbgrader cannot use as ids are graded under a safe id (tests/test_reports_ids.py).
    assert student_id_problem(student_id) is None


@pytest.mark.parametrize("student_id,shown,safe", [
    (".hidden", "'.'", "hidden"), ("tab\tname", "'\\t'", "tab_name"),
    ("evil\u202egnp", "'\\u202e'", "evil_gnp"),
])
def test_hidden_and_disguised_student_folders_are_refused_with_a_safe_name(student_id, shown, safe):
    problem = student_id_problem(student_id)
    assert f"characters {shown}" in problem and f"for example to '{safe}'" in problem


def test_old_format_and_duplicated_ids_are_normalized_to_valid_4_5(tmp_path):
    nb = nbformat.read(_release_notebook(), as_version=4)
    for bad in (mutate.old_format(nb), mutate.duplicated_cell_ids(nb), mutate.colab_widget_state(nb)):
        mutate.write_class(tmp_path, "a", {"s": bad})
        fixed = read_notebook(tmp_path / "s" / "a" / "a.ipynb")
        nbformat.validate(fixed)
        assert fixed.nbformat_minor == 5 and "widgets" not in fixed.metadata
        assert len({c.id for c in fixed.cells}) == len(fixed.cells)
        again = read_notebook(tmp_path / "s" / "a" / "a.ipynb")  # ids derived, so resume works
        assert [c.id for c in again.cells] == [c.id for c in fixed.cells]


def test_copied_answer_cell_keeps_its_grade_id_on_the_answered_copy():
    release = nbformat.read(_release_notebook(), as_version=4)
    answer = mutate.first_answer_id(release)
    nb = mutate.duplicated_answer_cell(release)
    nb.cells[_ids(nb).index(answer) + 1].source = "def f():\n    return 1"  # the original, answered
    notes = repair_grade_cells(nb, release)
    assert _ids(nb).count(answer) == 1
    assert nb.cells[_ids(nb).index(answer)].source == "def f():\n    return 1"
    assert notes and f"cell '{answer}' appeared 2 times" in notes[0]


def test_deleted_locked_cells_return_in_the_release_order_after_their_neighbour():
    release = nbformat.read(_release_notebook(), as_version=4)
    # A check cell and the test cell after it, right after a cell with a grade_id (a repair
    # places a restored cell after its nearest graded or locked neighbour; a reveal cell without
    # nbgrader metadata between the answer and its check gives it nothing to place against).
    ids = _ids(release)
    check = next(g for i, g in enumerate(ids) if g and g.endswith("_check") and ids[i - 1])
    test = "test_" + check.removesuffix("_check")
    assert _ids(release).index(test) == _ids(release).index(check) + 1
    nb = mutate.deleted_cell(mutate.deleted_cell(release, test), check)
    assert repair_grade_cells(nb, release) == []
    assert _ids(nb) == _ids(release)


def test_repair_leaves_an_intact_submission_as_it_is():
    release = nbformat.read(_release_notebook(), as_version=4)
    nb = copy.deepcopy(release)
    assert repair_grade_cells(nb, release) == [] and nb == release


def test_changed_nbgrader_metadata_is_put_back_as_released_and_noted():
    release = nbformat.read(_release_notebook(), as_version=4)
    nb = copy.deepcopy(release)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.metadata["nbgrader"].update(grade=True, points=10)  # an answer cell made worth 10 points
    stranger = nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {
        "grade": True, "grade_id": "extra_credit", "points": 5, "solution": False, "locked": False}})
    nb.cells.append(stranger)
    notes = repair_grade_cells(nb, release)
    assert [c.metadata for c in nb.cells[:-1]] == [c.metadata for c in release.cells]
    assert "nbgrader" not in nb.cells[-1].metadata
    assert any("had its nbgrader metadata changed: put back" in n for n in notes)
    assert any("carried nbgrader metadata the assignment does not have" in n for n in notes)


def test_staging_the_same_submission_twice_gives_the_same_bytes(tmp_path):
    # Resume compares staged files: ids made up for cells (none in nbformat 4.4, duplicated, or a
    # restored cell) must be the same each time, or an unchanged notebook is graded again.
    release = nbformat.read(_release_notebook(), as_version=4)
    test_id = next(c.metadata["nbgrader"]["grade_id"] for c in release.cells
                   if c.metadata.get("nbgrader", {}).get("grade"))
    nb = mutate.deleted_cell(mutate.duplicated_cell_ids(mutate.old_format(release)), test_id)
    mutate.write_class(tmp_path / "class", "a1", {"erin": nb})
    release_dir = tmp_path / "release" / "a1"
    release_dir.mkdir(parents=True)
    nbformat.write(release, release_dir / "a1.ipynb")
    staged = []
    for attempt in range(2):
        [sub] = find_submissions(tmp_path / "class", {"a1": ["a1"]})
        folder = stage(sub, tmp_path / f"staged{attempt}", release_dir=tmp_path / "release")
        staged.append((folder / "a1.ipynb").read_bytes())
    assert staged[0] == staged[1]
