"""A kernel that dies before any cell of the student's ran is the grader's failure, never a grade.

`course grade` refuses a memory limit under which no kernel can import TensorFlow (no kernel is
started for that); a kernel that dies before it answers, or while the course's set-up runs, is
noted as the grader's failure, graded again cold, then not recorded, with the limit to raise; one
that dies in a student's cell stays the student's. Real kernels in the real sandbox, real
nbgrader (a course whose set-up cell ends its kernel, as too small a limit does).
"""
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import DeadKernelError
from nbgrader.api import Gradebook, MissingEntry
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from autograder.cli import main
from autograder.grading.defaults import COURSE_ID, MIN_MEMORY_LIMIT_MB
from autograder.grading.failures import MACHINERY_FAILURES
from autograder.grading.kernels.bwrap import sandbox_problem
from autograder.grading.kernels.managers import SandboxedKernelManager
from autograder.grading.nbgrader_api import sqlite_url
from autograder.grading.preprocessors.execute import GradingExecute
from autograder.grading.run.pipeline import memory_limit_problem
from tests.test_sandbox import run_in_kernel

needs_sandbox = pytest.mark.skipif(sandbox_problem() is not None,
                                   reason=f"no sandbox on this host: {sandbox_problem()}")
ROBUST = Path(__file__).resolve().parent / "robustness"
EXIT = "import os\nos._exit(1)"
LOCKED = {"schema_version": 3, "grade": False, "solution": False, "task": False, "locked": True}


def test_course_grade_refuses_a_memory_limit_no_kernel_can_import_tensorflow_under(tmp_path, capsys):
    submitted, out = tmp_path / "submitted", tmp_path / "out"
    shutil.copytree(ROBUST / "submitted" / "full", submitted / "full")
    code = main(["grade", str(submitted), "--out", str(out), "--course-root",
                 str(ROBUST / "course"), "--memory-limit-mb", "1024"])
    err = capsys.readouterr().err
    assert code == 2
    assert "course grade: --memory-limit-mb 1024 is too small" in err
    assert f"give at least {MIN_MEMORY_LIMIT_MB}" in err and "Nothing was graded" in err
    assert not out.exists()  # refused before anything was released, staged or graded
    assert memory_limit_problem(MIN_MEMORY_LIMIT_MB - 1) is not None
    assert memory_limit_problem(MIN_MEMORY_LIMIT_MB) is None and memory_limit_problem(0) is None


@needs_sandbox
def test_a_kernel_that_dies_before_it_answers_is_the_graders_failure():
    MACHINERY_FAILURES.clear()
    # A warm kernel inherits its template's 2.3 GiB of address space: under 1 GiB it cannot start.
    with pytest.raises(RuntimeError, match="Kernel died before replying to kernel_info"):
        run_in_kernel(["print(1)"], memory_limit_bytes=1024 * 2**20)
    assert MACHINERY_FAILURES == ["the kernel died before it answered, before any cell of the "
                                  "student's: under --memory-limit-mb 1024, raise it if the set-up "
                                  "needs more memory"]


def _execute(setup: str, answer: str) -> None:
    """Run a notebook (a locked set-up cell, then a cell the student can edit) as grading does,
    with GradingExecute in a sandboxed kernel, under a 4096 MiB limit."""
    nb = new_notebook(cells=[
        new_code_cell(setup, metadata={"nbgrader": {**LOCKED, "grade_id": "setup"}}),
        new_code_cell(answer, metadata={"nbgrader": {**LOCKED, "locked": False, "solution": True,
                                                     "grade_id": "answer"}})])
    config = Config({"LimitedKernelManager": {"memory_limit_bytes": 4096 * 2**20}})
    GradingExecute(kernel_name="python3", timeout=120, startup_timeout=300, config=config,
                   kernel_manager_class=SandboxedKernelManager).preprocess(nb, {})


@needs_sandbox
def test_a_kernel_that_dies_in_the_set_up_is_the_graders_failure_in_a_students_cell_the_students():
    MACHINERY_FAILURES.clear()
    with pytest.raises(DeadKernelError):
        _execute(EXIT, "x = 1")
    assert MACHINERY_FAILURES == ["the kernel died while the course's set-up ran, before any "
                                  "cell of the student's: under --memory-limit-mb 4096, raise it "
                                  "if the set-up needs more memory"]
    MACHINERY_FAILURES.clear()
    with pytest.raises(DeadKernelError):
        _execute("import os", "os._exit(1)")
    assert MACHINERY_FAILURES == []  # the student's: 0, "the kernel died"


def _with_dying_set_up(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    setup, = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup"]
    setup.source = EXIT
    nbformat.write(nb, path)


@needs_sandbox
def test_a_class_whose_kernels_die_in_the_set_up_is_not_graded_and_says_which_limit(tmp_path,
                                                                                    capsys):
    course, submitted, out = tmp_path / "course", tmp_path / "submitted", tmp_path / "out"
    shutil.copytree(ROBUST / "course", course)
    shutil.copytree(ROBUST / "submitted" / "full", submitted / "full")
    for notebook in (course / "solutions" / "robust" / "robust.ipynb",
                     submitted / "full" / "robust" / "robust.ipynb"):
        _with_dying_set_up(notebook)
    code = main(["grade", str(submitted), "--out", str(out), "--course-root", str(course),
                 "--no-feedback", "--workers", "1", "--memory-limit-mb", str(MIN_MEMORY_LIMIT_MB)])
    printed = capsys.readouterr().out
    assert code == 1  # needs attention
    problem = ("not graded: the grader failed twice (the kernel died while the course's set-up "
               f"ran, before any cell of the student's: under --memory-limit-mb "
               f"{MIN_MEMORY_LIMIT_MB}, raise it if the set-up needs more memory); run again")
    assert problem in printed and problem in (out / "summary.txt").read_text()
    record = json.loads((out / "records" / "full" / "robust.json").read_text())
    assert record["sha256"] is None and record["outcome"] == "grader_failed"  # the next run grades it
    with Gradebook(sqlite_url(out / "gradebook.db"), COURSE_ID) as gradebook:
        with pytest.raises(MissingEntry):
            gradebook.find_submission("robust", "full")
