"""Benchmark: plain serial ``nbgrader autograde`` vs ``course grade`` on a synthetic class.

    python -m autograder.grading.benchmark [--students 20] [--workers N]

Builds a class of ``--students`` students from the sample submissions (the sample class of
:mod:`autograder.grading.samples`, its invalid files left out; student *k* gets sample *k mod n* of
assignment *k mod 6*, so the class spans every assignment), grades it

  (a) with nbgrader's own command line, ``nbgrader autograde ASSIGNMENT --force``, one assignment
      after another, in a course folder configured with this course's ``nbgrader_config.py``;
  (b) with :func:`autograder.grading.grade.grade_class` and ``--workers`` processes;
  (c) with :func:`~autograder.grading.grade.grade_class` and one worker, which separates what
      parallelism alone gives ((b) vs (c)) from the pipeline's other differences ((c) vs (a));
  (d) as (b) without the kernel sandbox, which gives the sandbox's cost per notebook;

checks that all three give the same score for every student and graded cell, and prints notebooks
per minute for each and the ratios. Then it times where one notebook's grading goes: kernel start,
``import tensorflow``, and the notebook's own cells. Prints figures; asserts nothing about speed.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from .course import REPO_ROOT, assignments, sqlite_url
from .grade import grade_class
from .cluster import default_workers
from .samples import build_sample_class
from .kernels import grading_env
from .settings import KERNEL_NAME, put_scripts_on_path


def build_class(dest: Path, n_students: int) -> list[tuple[str, str]]:
    """Copy sample submissions (built from the current release, invalid files left out) into
    ``dest/<student>/<assignment>/`` for ``n_students`` synthetic students; returns the
    (student_id, assignment_id) pairs."""
    ids = assignments()
    pairs = []
    with tempfile.TemporaryDirectory(prefix="samples-") as tmp:
        no_invalid = Path(tmp) / "invalid"
        no_invalid.mkdir()
        built = build_sample_class(Path(tmp) / "class", invalid_dir=no_invalid)
        for k in range(n_students):
            assignment_id = ids[k % len(ids)]
            samples = sorted(built.glob(f"*/{assignment_id}"))
            source = samples[(k // len(ids)) % len(samples)]
            student_id = f"student{k + 1:03d}"
            shutil.copytree(source, dest / student_id / assignment_id)
            pairs.append((student_id, assignment_id))
    return pairs


def serial_nbgrader(course: Path, submitted: Path, ids: list[str]) -> dict:
    """Grade with plain ``nbgrader autograde`` in a fresh course folder; returns the scores."""
    shutil.copytree(REPO_ROOT / "solutions", course / "solutions")
    shutil.copy(REPO_ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copytree(submitted, course / "submitted")
    nbgrader = [sys.executable, "-m", "nbgrader"]
    db = f"--CourseDirectory.db_url={sqlite_url(course / 'gradebook.db')}"
    for assignment_id in ids:
        subprocess.run(nbgrader + ["generate_assignment", assignment_id, "--force", db],
                       cwd=course, check=True, capture_output=True)
    for assignment_id in ids:
        subprocess.run(nbgrader + ["autograde", assignment_id, "--force", db],
                       cwd=course, check=True, capture_output=True)
    return read_scores(sqlite_url(course / "gradebook.db"))


def read_scores(db_url: str) -> dict[tuple[str, str, str], float]:
    """(student_id, assignment_id, grade_id) -> score, from an nbgrader gradebook."""
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(db_url) as gb:
        for assignment in gb.assignments:
            for sub in gb.assignment_submissions(assignment.name):
                for notebook in sub.notebooks:
                    for grade in notebook.grades:
                        if grade.max_score:
                            scores[(sub.student.id, assignment.name, grade.name)] = grade.score
    return scores


def time_one_notebook(path: Path) -> dict[str, float]:
    """Seconds spent starting a kernel, importing TensorFlow in it, and running the notebook's
    own code cells (TensorFlow already imported)."""
    from jupyter_client.manager import start_new_kernel

    nb = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    manager, client = start_new_kernel(kernel_name=KERNEL_NAME, cwd=str(path.parent),
                                       env=grading_env(), stderr=subprocess.DEVNULL)
    kernel_ready = time.perf_counter()
    try:
        client.execute_interactive("import tensorflow as tf", timeout=300, output_hook=_quiet)
        tf_ready = time.perf_counter()
        for cell in nb.cells:
            if cell.cell_type == "code":
                client.execute_interactive(cell.source, timeout=600, output_hook=_quiet)
        done = time.perf_counter()
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return {"kernel start": kernel_ready - started, "TensorFlow import": tf_ready - kernel_ready,
            "notebook cells": done - tf_ready}


def _quiet(message) -> None:
    """Output hook that drops the kernel's output (the benchmark prints only its figures)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--workers", type=int, default=default_workers())
    args = parser.parse_args(argv)
    put_scripts_on_path()  # plain nbgrader (a) makes gradebooks with alembic
    ids = assignments()
    with tempfile.TemporaryDirectory(prefix="grading-benchmark-") as tmp:
        tmp = Path(tmp)
        pairs = build_class(tmp / "class", args.students)
        n = len(pairs)
        print(f"class: {args.students} students, {n} notebooks across {len(ids)} assignments")

        started = time.perf_counter()
        serial = serial_nbgrader(tmp / "serial", tmp / "class", ids)
        serial_s = time.perf_counter() - started
        print(f"(a) serial nbgrader autograde: {serial_s:7.1f} s  {60 * n / serial_s:5.2f} notebooks/min")

        run = grade_class(tmp / "class", tmp / "parallel", workers=args.workers, feedback=False)
        parallel = read_scores(sqlite_url(tmp / "parallel" / "gradebook.db"))
        print(f"(b) course grade, {args.workers} workers: {run.seconds:7.1f} s  "
              f"{60 * n / run.seconds:5.2f} notebooks/min")
        one = grade_class(tmp / "class", tmp / "one", workers=1, feedback=False, progress=False)
        one_worker = read_scores(sqlite_url(tmp / "one" / "gradebook.db"))
        print(f"(c) course grade, 1 worker:  {one.seconds:7.1f} s  "
              f"{60 * n / one.seconds:5.2f} notebooks/min")
        bare = grade_class(tmp / "class", tmp / "bare", workers=args.workers, feedback=False,
                           progress=False, sandbox=False)
        print(f"(d) course grade, {args.workers} workers, --no-sandbox: {bare.seconds:7.1f} s  "
              f"{60 * n / bare.seconds:5.2f} notebooks/min")
        print(f"sandbox: {run.seconds / n:.2f} s per notebook with it (b), {bare.seconds / n:.2f} s "
              f"without (d): {(run.seconds - bare.seconds) / n:+.2f} s per notebook")
        print(f"speed-up (b)/(a): {serial_s / run.seconds:.2f}x   from parallelism alone (b)/(c): "
              f"{one.seconds / run.seconds:.2f}x   pipeline vs plain nbgrader (c)/(a): "
              f"{serial_s / one.seconds:.2f}x")
        bare_scores = read_scores(sqlite_url(tmp / "bare" / "gradebook.db"))
        same = serial == parallel == one_worker == bare_scores and len(serial) > 0
        print(f"scores identical: {same} ({len(serial)} graded cells)")
        if not same:
            for key in sorted(set(serial) | set(parallel)):
                if serial.get(key) != parallel.get(key):
                    print(f"  differs: {key}: serial {serial.get(key)} vs parallel {parallel.get(key)}")

        print("where one notebook's time goes (full solution, one kernel, nothing else running):")
        for assignment_id in ids:
            path = REPO_ROOT / "solutions" / assignment_id / f"{assignment_id}.ipynb"
            parts = time_one_notebook(path)
            print(f"  {assignment_id:<28} " + "  ".join(f"{k} {v:5.1f} s" for k, v in parts.items()))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
