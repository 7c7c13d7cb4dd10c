"""Files a notebook writes in its working folder end beside its autograded notebook, as plain
`nbgrader autograde` leaves them (issue 29, item 1): an instructor's own tiny course graded by the
real `course grade` (real nbgrader, a real kernel in the real sandbox). Only regular files with
plain names come back, at most MAX_WRITTEN_FILES of them within the size limit; the autograded
notebook and the submission's own files are never replaced; what was left out is noted."""
from __future__ import annotations

import nbformat
import pytest

from autograder.grading.defaults import MAX_OTHER_FILES_BYTES, MAX_WRITTEN_FILES
from autograder.grading.kernels.bwrap import sandbox_problem
from autograder.grading.preprocessors.written import left_out
from tests.instructor_course import answered, cell, course_grade, make_course, released

A = "plots"
PLOT = bytes(range(256)) * 40 + b"\x00end"  # binary, every byte value
WRITES = "\n".join([
    "open('results.csv', 'w').write('x,y\\n1,2\\n')",
    f"open('plot.png', 'wb').write({PLOT!r})",
    "os.symlink('results.csv', 'link.csv')",
    "os.mkdir('folder'); open('folder/inner.txt', 'w').write('in a folder')",
    "open('tab\\there.txt', 'w').write('odd name')",
    f"open('{A}.ipynb', 'w').write('not the notebook')",  # the autograded notebook's name
    "open('data.csv', 'w').write('overwritten')",  # the name of a file the student submitted
    "open('.hidden', 'w').write('dot file')",
    f"for i in range({MAX_WRITTEN_FILES}): open(f'zz{{i:02d}}.txt', 'w').write(str(i))",
    "print('wrote')",
])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if sandbox_problem():
        pytest.skip(sandbox_problem())
    course = make_course(tmp_path_factory.mktemp("course"), {A: [
        cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", answer=True),
        cell("assert x == 1", "test_x", points=1),
        cell(WRITES, "writes", locked=True),
    ]})
    notebook = released(course, [A], tmp_path_factory.mktemp("release"))[A]
    submitted = tmp_path_factory.mktemp("class")
    (submitted / "ada" / A).mkdir(parents=True)
    nbformat.write(answered(notebook, {"answer": "x = 1"}), submitted / "ada" / A / f"{A}.ipynb")
    (submitted / "ada" / A / "data.csv").write_text("submitted data\n")
    out = tmp_path_factory.mktemp("out")
    proc, cells, _ = course_grade(submitted, out, course)
    return proc, cells, out / "autograded" / "ada" / A


def test_files_the_notebook_wrote_are_beside_its_autograded_notebook(graded):
    proc, cells, folder = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert float(cells["ada", "test_x"]["score"]) == 1.0
    assert (folder / "results.csv").read_text() == "x,y\n1,2\n"
    assert (folder / "plot.png").read_bytes() == PLOT
    # The autograded notebook and the submitted file are the grader's, not the kernel's.
    printed = nbformat.read(folder / f"{A}.ipynb", as_version=4).cells[-1].outputs
    assert "".join(o["text"] for o in printed) == "wrote\n"  # one print, 1 or 2 stream messages
    assert (folder / "data.csv").read_text() == "submitted data\n"


def test_links_folders_odd_names_and_files_past_the_count_are_left_out_and_noted(graded):
    _, cells, folder = graded
    names = sorted(p.name for p in folder.iterdir())
    kept = sorted(n for n in names if n.startswith("zz"))
    # By name: plot.png and results.csv first, then the zz files up to the count.
    assert len(kept) == MAX_WRITTEN_FILES - 2 and kept[-1] == f"zz{MAX_WRITTEN_FILES - 3:02d}.txt"
    assert not {"link.csv", "folder", "tab\there.txt", ".hidden"} & set(names)
    assert all(p.is_file() and not p.is_symlink() for p in folder.iterdir())
    notes = cells["ada", "test_x"]["notes"]
    for name, why in [("link.csv", "a symbolic link"), ("folder", "a folder"),
                      ("tab\\there.txt", "a name with characters"),
                      (f"{A}.ipynb", "a file of the submission has that name"),
                      ("data.csv", "a file of the submission has that name"),
                      (f"zz{MAX_WRITTEN_FILES - 1:02d}.txt", f"past the {MAX_WRITTEN_FILES} files")]:
        assert f"left out '{name}', a file it wrote ({why}" in notes, (name, notes)
    assert ".hidden" not in notes


def test_a_file_past_the_size_limit_is_left_out():
    assert left_out("big.bin", "file", MAX_OTHER_FILES_BYTES + 1, set()).startswith(
        f"{MAX_OTHER_FILES_BYTES + 1:,} bytes, past the 50 MiB")
    assert left_out("ok.bin", "file", MAX_OTHER_FILES_BYTES, set()) is None
    assert left_out("x", "other", 0, set()) == "not a regular file"
    assert left_out("timestamp.txt", "file", 10, set()) == "a file of the submission has that name"


def test_without_the_sandbox_the_new_files_of_the_notebooks_folder_are_read(tmp_path):
    # --no-sandbox: the kernel works in the notebook's own folder, beside the submission's files,
    # which stay as they are; only what the notebook added is read back (a real kernel).
    from autograder.grading.preprocessors import written
    from autograder.grading.preprocessors.execute import GradingExecute

    (tmp_path / "data.csv").write_text("submitted\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "open('out.txt', 'w').write('new'); open('data.csv', 'w').write('changed')")]
    written.WRITTEN.clear()
    written.NOTES.clear()
    GradingExecute(timeout=120, startup_timeout=300).preprocess(
        nb, {"metadata": {"path": str(tmp_path)}, "unique_key": "nb"})
    assert written.WRITTEN == {"out.txt": b"new"} and written.NOTES == []


# A red team's routes (issue 29 item 1): the student's code rewrites what the kernel side of the
# copy-back sees or answers. Each must cost only that student, with the limits holding on the host.
FORGED_LONG_NAME = r'''
import os
_scandir, _open = os.scandir, os.open
LONG = "\u4e00" * 90 + ".txt"      # 94 characters, 274 bytes in UTF-8: past a file name's 255
open("real.txt", "w").write("payload")
class _Entry:
    def __init__(self, name): self.name = name
    def stat(self, follow_symlinks=True): return os.stat("real.txt")
class _Listing:
    def __enter__(self): return iter([_Entry(LONG), _Entry("real.txt")])
    def __exit__(self, *exc): return False
os.scandir = lambda path=".": _Listing() if str(path) == os.getcwd() else _scandir(path)
os.open = lambda path, *a, **k: _open("real.txt" if str(path).endswith(LONG) else path, *a, **k)
x = 1
'''
FORGED_FLOOD = r'''
import ast
_shell = get_ipython()
_user_expressions = _shell.user_expressions
def _forge(expressions):
    out = _user_expressions(expressions)
    for key, source in expressions.items():
        if "copying back the files" in source and "None, 0, 0," in source:
            try:
                addresses, _ = ast.literal_eval(out[key]["data"]["text/plain"])
                out[key]["data"]["text/plain"] = repr((addresses, [(f"L{i:06d}", "link", 0)
                                                                   for i in range(20000)]))
            except Exception:
                pass
    return out
_shell.user_expressions = _forge
x = 1
'''
DRIP = r'''
import os
open("drip.txt", "wb").write(b"D" * 3000)
_read, _lseek, _fresh = os.read, os.lseek, set()
def _seek(fd, offset, how):
    _fresh.add(fd)
    return _lseek(fd, offset, how)
def _one_byte(fd, n):                             # one byte per request, then "end of file"
    if fd not in _fresh:
        return b""
    _fresh.discard(fd)
    return _read(fd, 1)
os.lseek, os.read = _seek, _one_byte
x = 1
'''
BY_LOCATION = r'''
import json
empty = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
for name in ("zzz.ipynb", "conftest.py", "nbgrader_config.py", "jupyter_server_config.json"):
    open(name, "w").write(json.dumps(empty))
open("kept.txt", "w").write("kept")
x = 1
'''


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    if sandbox_problem():
        pytest.skip(sandbox_problem())
    course = make_course(tmp_path_factory.mktemp("course"), {A: [
        cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", answer=True),
        cell("assert x == 1", "test_x", points=1),
    ]})
    notebook = released(course, [A], tmp_path_factory.mktemp("release"))[A]
    submitted = tmp_path_factory.mktemp("class")
    for student, answer in (("bob", FORGED_LONG_NAME), ("eve", FORGED_FLOOD), ("hank", DRIP),
                            ("frank", BY_LOCATION), ("ada", "x = 1")):
        (submitted / student / A).mkdir(parents=True)
        nbformat.write(answered(notebook, {"answer": answer}), submitted / student / A / f"{A}.ipynb")
    out = tmp_path_factory.mktemp("out")
    # A process of its own: the first test reads the whole run's stderr (its workers' too).
    proc, cells, _ = course_grade(submitted, out, course, feedback=True, fresh_interpreter=True)
    return proc, cells, out


def test_a_forged_name_no_file_system_takes_costs_nothing_and_the_class_is_graded(attacked):
    proc, cells, out = attacked
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for student in ("bob", "eve", "hank", "frank", "ada"):
        assert float(cells[student, "test_x"]["score"]) == 1.0, student   # x = 1 is right
    folder = out / "autograded" / "bob" / A
    assert (folder / "real.txt").read_text() == "payload"
    assert "a name with characters the grader does not copy" in cells["bob", "test_x"]["notes"]
    assert (out / "summary.txt").is_file() and (out / "grades.csv").is_file()


def test_a_forged_listing_of_thousands_of_entries_leaves_a_few_notes(attacked):
    _, cells, out = attacked
    notes = cells["eve", "test_x"]["notes"]
    assert len(notes) < 5000 and notes.count("a symbolic link") <= 10
    assert "more files it wrote left out" in notes
    assert (out / "scores_by_exercise.csv").stat().st_size < 200_000


def test_a_kernel_that_answers_byte_by_byte_gets_its_file_left_out(attacked):
    _, cells, out = attacked
    assert not (out / "autograded" / "hank" / A / "drip.txt").exists()
    assert "left out 'drip.txt', a file it wrote (it could not be read whole" in cells["hank", "test_x"]["notes"]


def test_notebooks_python_and_config_files_are_not_copied_and_feedback_is_written(attacked):
    proc, cells, out = attacked
    folder = out / "autograded" / "frank" / A
    assert (folder / "kept.txt").read_text() == "kept"
    for name in ("zzz.ipynb", "conftest.py", "nbgrader_config.py", "jupyter_server_config.json"):
        assert not (folder / name).exists()
        assert f"left out '{name}', a file it wrote (a kind of file that acts by where it lies" \
            in cells["frank", "test_x"]["notes"]
    assert list((out / "feedback" / "frank" / A).glob("*.html")), proc.stdout[-3000:]
