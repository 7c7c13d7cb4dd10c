"""``course release`` never overwrites a student's saved answers in ``notebooks/``: it stops, writes
nothing and lists the changed files, unless ``--force``; a notebook left as the last release wrote
it is replaced by the new release (real nbgrader, in a course root of its own).
"""
import hashlib
import shutil

import nbformat
import pytest

from autograder.grading.course import REPO_ROOT
from autograder.grading.distribute.release import RELEASE_RECORD, SavedWorkError, release_notebooks

IDS = ["01_gradient_tape", "02_persistent_nested_tapes"]


def _edit_solution(root, assignment_id, text):
    path = root / "solutions" / assignment_id / f"{assignment_id}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(text))
    nbformat.write(nb, path)


def _answer(path, source):
    """Save an answer in the first answer cell, as JupyterLab would."""
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    cell.source = source
    nbformat.write(nb, path)


@pytest.fixture
def course(tmp_path):
    for assignment_id in IDS:
        shutil.copytree(REPO_ROOT / "solutions" / assignment_id, tmp_path / "solutions" / assignment_id)
    return tmp_path


def test_release_stops_on_saved_answers_and_force_overwrites_only_what_it_writes(course):
    first, second = (course / "notebooks" / a / f"{a}.ipynb" for a in IDS)
    assert release_notebooks(IDS, root=course) == [first, second]
    # What nbgrader generates, as committed; and the record of what was written.
    assert first.read_bytes() == (REPO_ROOT / "notebooks" / IDS[0] / first.name).read_bytes()
    record = (course / "notebooks" / RELEASE_RECORD).read_text()
    assert f"{hashlib.sha256(first.read_bytes()).hexdigest()}  {IDS[0]}/{first.name}" in record

    _answer(first, "def square_grad(x):\n    return 2 * x  # my answer")
    saved, untouched = first.read_bytes(), second.read_bytes()
    (first.parent / "my_notes.txt").write_text("mine")
    _edit_solution(course, IDS[0], "A new closing note.")
    _edit_solution(course, IDS[1], "A new closing note.")
    with pytest.raises(SavedWorkError) as refused:
        release_notebooks(IDS, root=course)
    assert refused.value.changed == [first] and str(first) in str(refused.value)
    assert first.read_bytes() == saved and second.read_bytes() == untouched  # nothing written

    assert release_notebooks(IDS, root=course, force=True) == [first, second]
    assert "A new closing note." in first.read_text() and "my answer" not in first.read_text()
    assert "A new closing note." in second.read_text()
    assert (first.parent / "my_notes.txt").read_text() == "mine"  # not the release's: kept

    # Untouched since the last release: the next release replaces it without --force.
    _edit_solution(course, IDS[1], "Another note.")
    release_notebooks([IDS[1]], root=course)
    assert "Another note." in second.read_text()


def test_a_notebook_equal_to_the_new_release_needs_no_record(course):
    # A fresh clone: notebooks/ as committed, no record of the last release.
    shutil.copytree(REPO_ROOT / "notebooks" / IDS[0], course / "notebooks" / IDS[0])
    assert not (course / "notebooks" / RELEASE_RECORD).exists()
    release_notebooks([IDS[0]], root=course)
    assert (course / "notebooks" / RELEASE_RECORD).is_file()
