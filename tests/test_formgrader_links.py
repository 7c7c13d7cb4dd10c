"""Manage Assignments' link to an assignment's source opens (issue 29, item 6): nbgrader links
``/tree/<source_path>``, the source folder relative to the course root, and the Jupyter server
serves only inside its root (the graded class's folder), so the course's solutions/ is reached
there through a link. Real nbgrader (a release into the folder, its API reading the folder's
nbgrader_config.py as the formgrader does) and jupyter_server's own contents manager."""
from __future__ import annotations

from jupyter_server.services.contents.filemanager import FileContentsManager
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader

from autograder.grading.distribute.formgrader import SOURCE_LINK, write_course_config
from tests.instructor_course import cell, make_course, released

A = "linked"


def _graded_folder(tmp_path):
    """A one-assignment course and the folder the formgrader opens on it, as `course grade`
    leaves it (a release, its gradebook.db, the formgrader's nbgrader_config.py): (course, out)."""
    course = make_course(tmp_path / "course", {A: [cell("x = 1", "answer", answer=True)]})
    out = tmp_path / "graded"
    out.mkdir()
    released(course, [A], out / "release")
    (out / "release" / "gradebook.db").rename(out / "gradebook.db")
    write_course_config(out, course)
    return course, out


def test_the_assignment_link_of_manage_assignments_opens_its_source(tmp_path):
    course, out = _graded_folder(tmp_path)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(out)).load_config()
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    source_path = api.get_assignment(A)["source_path"]
    assert source_path == f"{SOURCE_LINK}/{A}"
    listing = FileContentsManager(root_dir=str(out)).get(source_path)
    assert [c["name"] for c in listing["content"]] == [f"{A}.ipynb"]
    # Written again (a second `course formgrader`), the link stays; a folder of the
    # instructor's own named so is never replaced: the absolute path is used.
    write_course_config(out, course)
    assert (out / SOURCE_LINK).resolve() == (course / "solutions").resolve()
    (out / SOURCE_LINK).unlink()
    (out / SOURCE_LINK).mkdir()
    write_course_config(out, course)
    assert (out / SOURCE_LINK).is_dir() and not (out / SOURCE_LINK).is_symlink()
    assert repr(str((course / "solutions").resolve())) in (out / "nbgrader_config.py").read_text()


def test_the_formgraders_autograde_of_an_unreadable_file_gives_the_courses_message(tmp_path):
    """Autograde from the formgrader (nbgrader's API, as its button calls it) on a file that is
    not a notebook (an HTML page saved as .ipynb): the dialog's log says which file and why, in
    the course's words (G05), not nbformat's traceback from inside json; the file is unchanged and
    nothing is graded. Another error's traceback is still logged whole."""
    import logging

    from autograder.grading.preprocessors.readable import ShortUnreadableTracebacks

    _, out = _graded_folder(tmp_path)
    page = b"<!DOCTYPE html><html><body>Sign in to continue</body></html>"
    (out / "submitted" / "sam" / A).mkdir(parents=True)
    (out / "submitted" / "sam" / A / f"{A}.ipynb").write_bytes(page)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(out)).load_config()
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    result = api.autograde(A, "sam")
    assert result["success"] is False
    assert f"{A}.ipynb was not graded: not a valid notebook" in result["log"], result["log"]
    assert "(G05)" in result["log"]
    assert "Traceback" not in result["log"] and "json" not in result["log"], result["log"]
    assert (out / "submitted" / "sam" / A / f"{A}.ipynb").read_bytes() == page
    assert not (out / "autograded" / "sam" / A).exists()

    record = logging.LogRecord("nbgrader", logging.ERROR, __file__, 1,
                               "Traceback (most recent call last):\n  File ...\nKeyError: 'x'",
                               (), None)
    assert ShortUnreadableTracebacks().filter(record) and record.msg.endswith("KeyError: 'x'")
    assert record.msg.startswith("Traceback")
