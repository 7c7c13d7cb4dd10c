"""``out/submitted``, the formgrader's view of a graded class (``link_submitted``): nbgrader counts
and reads the submissions through it, a ``timestamp.txt`` nbgrader cannot read is left out of it
(the formgrader's pages would fail on it), and the submitted files are never written.
The browser test (tests/test_browser.py) shows the count on the formgrader's page.
"""
import hashlib
import os

from traitlets.config import Config

from autograder.grading.distribute.formgrader import VIEW_MARK, link_submitted
from autograder.grading.nbgrader_api import nbgrader_api

A = "01_gradient_tape"


def _hashes(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _class(root):
    stamps = {"kim": "2026-12-01 21:30:00.000000 UTC", "lee": "next friday", "max": "",
              "kim[2]": None}
    for student, stamp in stamps.items():
        folder = root / student / A
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text("{}")
        if stamp is not None:
            (folder / "timestamp.txt").write_text(stamp)
    os.symlink(root / "kim", root / "sym")  # a student folder that is a link: never followed
    return root


def _api(out):
    c = Config()
    c.CourseDirectory.root = str(out)
    return nbgrader_api(c)


def test_view_counts_the_class_and_leaves_out_what_nbgrader_cannot_read(tmp_path):
    submitted = _class(tmp_path / "class")
    before = _hashes(submitted)
    out = tmp_path / "graded"
    view = link_submitted(out, submitted)
    assert view == out / "submitted" and (view / VIEW_MARK).is_file()
    assert (view / "kim" / A).is_symlink() and (view / "kim" / A).resolve() == submitted / "kim" / A
    for student in ("lee", "max"):  # a folder of links, without the timestamp nbgrader refuses
        assert not (view / student / A).is_symlink()
        assert sorted(p.name for p in (view / student / A).iterdir()) == [f"{A}.ipynb"]
        assert (view / student / A / f"{A}.ipynb").resolve() == submitted / student / A / f"{A}.ipynb"
    api = _api(out)
    assert api.get_submitted_students(A) == {"kim", "lee", "max"}
    assert [api.get_submitted_timestamp(A, s) for s in ("lee", "max")] == [None, None]
    assert api.get_submitted_timestamp(A, "kim").isoformat() == "2026-12-01T21:30:00"
    assert _hashes(submitted) == before and not list(submitted.rglob(VIEW_MARK))

    # Graded again with a student more: the view is made again, the class still untouched.
    (submitted / "noa" / A).mkdir(parents=True)
    link_submitted(out, submitted)
    assert _api(out).get_submitted_students(A) == {"kim", "lee", "max", "noa"}
    assert _hashes(submitted) == before


def test_a_real_submitted_folder_is_left_as_it_is(tmp_path):
    # course demo builds its class in OUT/submitted: that folder is the view already.
    demo = _class(tmp_path / "demo" / "submitted")
    before = _hashes(demo)
    assert link_submitted(tmp_path / "demo", demo) == demo
    # Another folder of the instructor's own at OUT/submitted: not replaced.
    other = _class(tmp_path / "other")
    assert link_submitted(tmp_path / "demo", other) is None
    assert _hashes(demo) == before and not (demo / VIEW_MARK).exists()
