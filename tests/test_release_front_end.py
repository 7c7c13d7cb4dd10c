"""`course release` does not refuse a notebook the student only opened (issue 29, item 5): what a
front end writes on its own (JupyterLab rewrites the kernelspec to the installed kernel's, here
"Python 3 (ipykernel)" where the release says what its source says; running adds language_info,
outputs and counts) is not saved work. A real release (nbgrader) of an instructor's tiny course, the
installed kernelspec as jupyter_client reads it, the notebook run by a real kernel (nbclient)."""
from __future__ import annotations

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from autograder.grading.defaults import KERNEL_NAME
from autograder.grading.distribute.release import (
    RELEASE_WORK_RECORD,
    SavedWorkError,
    release_notebooks,
    work_digest,
)
from tests.instructor_course import cell, make_course

A = "opened"


def _add_note(course, text):
    path = course / "solutions" / A / f"{A}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(text))
    nbformat.write(nb, path)


def _open_and_run(path):
    """As JupyterLab does: the installed kernel's kernelspec written in, every cell run."""
    nb = nbformat.read(path, as_version=4)
    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    nb.metadata["kernelspec"] = {"display_name": spec.display_name, "language": spec.language,
                                 "name": KERNEL_NAME}
    NotebookClient(nb, timeout=120, kernel_name=KERNEL_NAME, allow_errors=True).execute()
    nbformat.write(nb, path)
    return nb


@pytest.fixture
def course(tmp_path):
    return make_course(tmp_path, {A: [
        cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", answer=True),
        cell("assert x == 1", "test_x", points=1), cell("print('hello')")]})


def test_a_notebook_only_opened_and_run_is_released_over(course):
    [notebook] = release_notebooks([A], root=course)
    before = notebook.read_bytes()
    nb = _open_and_run(notebook)
    assert notebook.read_bytes() != before and nb.metadata["language_info"]["name"] == "python"
    assert any(c.get("outputs") for c in nb.cells)
    assert work_digest(notebook.read_bytes(), notebook.name) == work_digest(before, notebook.name)
    _add_note(course, "A new closing note.")
    assert release_notebooks([A], root=course) == [notebook]  # not refused
    assert "A new closing note." in notebook.read_text()
    assert (course / "notebooks" / RELEASE_WORK_RECORD).is_file()


def test_an_answer_saved_in_an_opened_notebook_is_still_refused(course):
    [notebook] = release_notebooks([A], root=course)
    nb = _open_and_run(notebook)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.source = "x = 1  # mine"
    nbformat.write(nb, notebook)
    saved = notebook.read_bytes()
    _add_note(course, "A new closing note.")
    with pytest.raises(SavedWorkError) as refused:
        release_notebooks([A], root=course)
    assert refused.value.changed == [notebook] and notebook.read_bytes() == saved
