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
    assert nbformat.read(folder / f"{A}.ipynb", as_version=4).cells[-1].outputs[0]["text"] == "wrote\n"
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
