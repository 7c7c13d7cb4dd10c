"""A notebook in the sandbox reads the files beside it as under plain `nbgrader autograde` (issue
29): the data files nbgrader copies from the course's source folder (subfolders included) and the
files the student submitted beside the notebook are placed in the kernel's private working folder
before the first cell; a .py file the student submitted is not (code the scan never reads), and
that is noted. An instructor's own tiny course, graded by the real `course grade` (real nbgrader,
a real kernel in the real sandbox)."""
from __future__ import annotations

import os

import nbformat
import pytest

from autograder.grading.kernels.bwrap import sandbox_problem
from autograder.grading.preprocessors.placed import MAX_DEPTH, files_to_place
from tests.instructor_course import answered, cell, course_grade, make_course, released

A = "data_course"
BINARY = bytes(range(256)) * 9000  # 2.3 MB: more than one piece through the kernel's door


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if sandbox_problem():
        pytest.skip(sandbox_problem())
    course = make_course(tmp_path_factory.mktemp("course"), {A: [
        cell("### BEGIN SOLUTION\nrows = open('data.csv').read().splitlines()\n### END SOLUTION",
             "answer", answer=True),
        cell("assert rows == ['x,y', '1,2'], rows", "test_rows", points=1),
        cell("assert open('data/more/inner.txt').read() == 'deeper'", "test_folder", points=1),
        cell("assert open('weights.bin', 'rb').read() == bytes(range(256)) * 9000", "test_binary",
             points=1),
        cell("assert open('mine.txt').read() == 'my own notes'", "test_submitted", points=1),
        cell("import importlib.util\nassert importlib.util.find_spec('helper') is None",
             "test_no_python", points=1),
    ]})
    source = course / "solutions" / A
    (source / "data.csv").write_text("x,y\n1,2\n")
    (source / "data" / "more").mkdir(parents=True)
    (source / "data" / "more" / "inner.txt").write_text("deeper")
    (source / "weights.bin").write_bytes(BINARY)
    notebook = released(course, [A], tmp_path_factory.mktemp("release"))[A]
    submitted = tmp_path_factory.mktemp("class")
    folder = submitted / "ada" / A
    folder.mkdir(parents=True)
    nbformat.write(answered(notebook, {"answer": "rows = open('data.csv').read().splitlines()"}),
                   folder / f"{A}.ipynb")
    (folder / "mine.txt").write_text("my own notes")
    (folder / "helper.py").write_text("print('not scanned')\n")
    out = tmp_path_factory.mktemp("out")
    proc, cells, _ = course_grade(submitted, out, course)
    return proc, cells, out / "autograded" / "ada" / A


def test_the_notebook_reads_the_source_data_and_the_submitted_files_and_scores_full(graded):
    proc, cells, _ = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for grade_id in ("test_rows", "test_folder", "test_binary", "test_submitted", "test_no_python"):
        assert float(cells["ada", grade_id]["score"]) == 1.0, (grade_id, cells["ada", grade_id])


def test_a_submitted_python_file_is_not_placed_and_that_is_noted(graded):
    _, cells, folder = graded
    notes = cells["ada", "test_rows"]["notes"]
    assert "left out of the sandbox's working folder 'helper.py' (a kind of file that acts" in notes
    # Placed files are not copied back as files the notebook wrote, nor noted as such.
    assert "data.csv" not in notes and "weights.bin" not in notes
    assert (folder / "data.csv").read_text() == "x,y\n1,2\n"


def test_what_is_placed_is_chosen_by_name_kind_and_depth(tmp_path):
    (tmp_path / "nb.ipynb").write_text("{}")
    (tmp_path / "timestamp.txt").write_text("2026-12-01 10:00:00")
    (tmp_path / "ok.csv").write_text("1")
    (tmp_path / ".hidden").write_text("dot")
    (tmp_path / "odd\tname.txt").write_text("tab")
    (tmp_path / "conf.py").write_text("code")
    os.symlink(tmp_path / "ok.csv", tmp_path / "link.csv")
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_DEPTH + 1)])
    deep.mkdir(parents=True)
    (deep / "too_deep.txt").write_text("deep")
    (deep.parent / "deep_enough.txt").write_text("ok")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nb.ipynb").write_text("{}")  # a notebook below the top is data
    chosen, notes = files_to_place(tmp_path, {"ok.csv": b"other", "results.txt": b"from nb 1"})
    assert set(chosen) == {"ok.csv", "results.txt", "d0/d1/d2/d3/deep_enough.txt"}
    assert chosen["results.txt"] == b"from nb 1" and chosen["ok.csv"] == tmp_path / "ok.csv"
    assert any("'conf.py' (a kind of file" in n for n in notes)
    assert any("'sub/nb.ipynb' (a kind of file" in n for n in notes)
    assert any("'link.csv' (not a regular file)" in n for n in notes)
    assert any("odd\\tname.txt" in n and "characters" in n for n in notes)
    assert not any("timestamp" in n or "hidden" in n or "too_deep" in n for n in notes)
