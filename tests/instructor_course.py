"""A tiny instructor's own nbgrader course, for tests that grade it with the real `course grade`
(real nbgrader, real kernels, the real sandbox): no TensorFlow in its cells, so a run is short."""
from __future__ import annotations

import csv
import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import nbformat

from autograder.grading.distribute.release import release
from tests.conftest import grading_workers, shared_scheduler

_META = {"schema_version": 3, "locked": False, "grade": False, "solution": False, "task": False}


def cell(source: str, grade_id: str | None = None, *, answer: bool = False, points: int = 0,
         locked: bool = False):
    """A code cell: an answer cell (``answer``), a test cell (``points``), a locked cell, or plain."""
    made = nbformat.v4.new_code_cell(source)
    if grade_id:
        made.metadata["nbgrader"] = {**_META, "grade_id": grade_id, "solution": answer,
                                     "grade": bool(points), "locked": locked or bool(points),
                                     **({"points": points} if points else {})}
    return made


def make_course(root: Path, notebooks: dict[str, list]) -> Path:
    """``root/solutions/<assignment>/<assignment>.ipynb`` for each assignment of ``notebooks``
    (its cells after a locked set-up cell); returns ``root``."""
    for assignment, cells in notebooks.items():
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python",
                                     "name": "python3"}
        nb.cells = [cell("import os", "setup", locked=True), *cells]
        (root / "solutions" / assignment).mkdir(parents=True)
        nbformat.write(nb, root / "solutions" / assignment / f"{assignment}.ipynb")
    return root


def released(course: Path, assignments: list[str], folder: Path) -> dict[str, Path]:
    """The release of ``assignments`` into ``folder``: assignment -> its notebook."""
    paths = release(assignments, root=course, release_dir=folder, db_path=folder / "gradebook.db")
    return {p.parent.name: p for p in paths}


def answered(notebook: Path, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released ``notebook`` with the answer cells of ``answers`` (grade_id -> source) set."""
    nb = nbformat.read(notebook, as_version=4)
    for c in nb.cells:
        grade_id = c.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            c.source = answers[grade_id]
    return nb


def run_command(argv: list[str]) -> subprocess.CompletedProcess:
    """``course <argv>`` as ``python -m autograder.cli <argv>`` runs it (``sys.exit(main())``),
    but in this interpreter: no second import of nbgrader and the grading code (seconds a run).
    Returns what a finished process gives: the exit code ``main`` returned (or raised, as
    SystemExit) and what the command printed to sys.stdout and sys.stderr. What the cluster's
    worker processes write to their own stderr is not in it: a test that reads the whole run's
    stderr (a traceback from anywhere in it) runs the command in a fresh interpreter."""
    from autograder.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            code = main(argv)
        except SystemExit as stop:
            code = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
    return subprocess.CompletedProcess(["course", *argv], code, stdout.getvalue(), stderr.getvalue())


def course_grade(submitted: Path, out: Path, course: Path, *extra: str, feedback: bool = False,
                 fresh_interpreter: bool = False):
    """Run `course grade` (the command: :func:`run_command`, on the session's shared cluster,
    or with ``fresh_interpreter`` a process of its own with its own cluster); returns the process,
    the rows of ``scores_by_exercise.csv`` by (folder, grade_id) and of ``grades.csv`` by (folder,
    assignment)."""
    argv = ["grade", str(submitted), "--out", str(out), "--course-root", str(course),
            "--workers", str(grading_workers(1)), *([] if feedback else ["--no-feedback"]), *extra]
    if fresh_interpreter:
        proc = subprocess.run([sys.executable, "-m", "autograder.cli", *argv], capture_output=True,
                              text=True, timeout=1200)
    else:
        proc = run_command([*argv, "--scheduler", shared_scheduler()])
    with open(out / "scores_by_exercise.csv", newline="") as handle:
        cells = {(r["folder"], r["grade_id"]): r for r in csv.DictReader(handle)}
    with open(out / "grades.csv", newline="") as handle:
        rows = {(r.get("folder") or r["student_id"], r["assignment"]): r
                for r in csv.DictReader(handle)}
    return proc, cells, rows
