"""Benchmark: plain serial ``nbgrader autograde`` vs ``course grade`` on a synthetic class.

    python -m autograder.grading.demo.benchmark [--students 20] [--workers N] [--parallel-only]

Builds a class of ``--students`` students from the sample submissions (the sample class of
:mod:`autograder.grading.demo.samples`, its invalid files left out; student *k* gets sample *k mod
n* of assignment *k mod 6*, so the class spans every assignment), grades it

  (a) with nbgrader's own command line, ``nbgrader autograde ASSIGNMENT --force``, one assignment
      after another, in a course folder configured with this course's ``nbgrader_config.py`` but
      as before warm kernels and grading-only execution: each kernel starts cold (Python, then
      ``import tensorflow``) and every cell runs;
  (a') the same with the course's defaults, as plain ``nbgrader`` users of this course now get
      them: warm kernels, demonstration cells skipped;
  (b) with :func:`autograder.grading.run.pipeline.grade_class` on ``--workers`` Dask workers (warm
      kernels, demonstration cells skipped, every kernel sandboxed);

checks that all give the same score for every student and graded cell, and prints notebooks per
minute, the ratios, the floor (graded cells' own seconds over the workers) and each run as a
multiple of it, where (b)'s time goes per notebook (kernel start, integrity checks, set-up
cell, graded cells, other cells, the rest of nbgrader's autograde on the worker, recording into
the gradebook and writing feedback on the client), and each worker's peak memory (PSS of the worker and every
process under it: kernel template, kernels). Then it times a cold kernel: start, ``import
tensorflow`` and the full solution's cells. Prints figures; asserts nothing about speed.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

from autograder.grading.course import REPO_ROOT, assignments
from autograder.grading.defaults import GRADEBOOK_FILE, KERNEL_NAME, SOURCE_DIR
from autograder.grading.demo.samples import build_sample_class
from autograder.grading.intake.submissions import Submission
from autograder.grading.jobs.cluster import default_workers
from autograder.grading.kernels.managers import grading_env
from autograder.grading.nbgrader_api import nbgrader_config, put_scripts_on_path, sqlite_url
from autograder.grading.run.gradebook import write_feedback
from autograder.grading.run.pipeline import grade_class


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


# Appended to the course's nbgrader_config.py for (a): cold kernels, every cell run.
AS_BEFORE = "\nc.SandboxedKernelManager.warm = False\nc.GradingExecute.demo_sha256 = []\n"


def serial_nbgrader(course: Path, submitted: Path, ids: list[str], extra_config: str = "") -> dict:
    """Grade with plain ``nbgrader autograde`` in a fresh course folder whose
    ``nbgrader_config.py`` is the course's plus ``extra_config``; returns the scores."""
    shutil.copytree(REPO_ROOT / SOURCE_DIR, course / SOURCE_DIR)
    (course / "nbgrader_config.py").write_text(
        (REPO_ROOT / "nbgrader_config.py").read_text() + extra_config)
    shutil.copytree(submitted, course / "submitted")
    nbgrader = [sys.executable, "-m", "nbgrader"]
    db = f"--CourseDirectory.db_url={sqlite_url(course / GRADEBOOK_FILE)}"
    for assignment_id in ids:
        subprocess.run(nbgrader + ["generate_assignment", assignment_id, "--force", db],
                       cwd=course, check=True, capture_output=True)
    for assignment_id in ids:
        subprocess.run(nbgrader + ["autograde", assignment_id, "--force", db],
                       cwd=course, check=True, capture_output=True)
    return read_scores(sqlite_url(course / GRADEBOOK_FILE))


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


STEPS = ("kernel start", "integrity checks", "set-up cell", "graded cells", "other cells",
         "nbgrader", "record", "feedback")


def floor_seconds(timings: dict[str, dict[str, float]], workers: int) -> float:
    """The floor of a grading run: its graded cells' own computation (the seconds the graded
    cells took on the workers, summed over every notebook) divided by the workers, in seconds.
    No grader can take less, whatever it does with the rest; what a run takes above it is the
    pipeline's cost (kernels, integrity checks, nbgrader, recording, feedback)."""
    return sum(t.get("graded cells", 0.0) for t in timings.values()) / max(1, workers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--parallel-only", action="store_true",
                        help="grade only with course grade (b): its time against the floor, for a "
                             "class too large to grade serially in reasonable time (--students 60)")
    args = parser.parse_args(argv)
    put_scripts_on_path()  # plain nbgrader (a) makes gradebooks with alembic
    ids = assignments()
    with tempfile.TemporaryDirectory(prefix="grading-benchmark-") as tmp:
        tmp = Path(tmp)
        pairs = build_class(tmp / "class", args.students)
        n = len(pairs)
        print(f"class: {args.students} students, {n} notebooks across {len(ids)} assignments")

        if not args.parallel_only:
            started = time.perf_counter()
            serial = serial_nbgrader(tmp / "serial", tmp / "class", ids, AS_BEFORE)
            serial_s = time.perf_counter() - started
            print(f"(a)  serial nbgrader autograde, cold kernels, every cell: {serial_s:7.1f} s  "
                  f"{60 * n / serial_s:6.2f} notebooks/min")
            started = time.perf_counter()
            serial_warm = serial_nbgrader(tmp / "serial-warm", tmp / "class", ids)
            serial_warm_s = time.perf_counter() - started
            print(f"(a') serial nbgrader autograde, course defaults:         {serial_warm_s:7.1f} s  "
                  f"{60 * n / serial_warm_s:6.2f} notebooks/min")

        with PeakMemory() as memory:
            run = grade_class(tmp / "class", tmp / "parallel", workers=args.workers,
                              feedback=False)
        parallel = read_scores(sqlite_url(tmp / "parallel" / GRADEBOOK_FILE))
        print(f"(b)  course grade, {args.workers} workers:                        "
              f"{run.seconds:7.1f} s  {60 * n / run.seconds:6.2f} notebooks/min")
        floor = floor_seconds(run.timings, args.workers)
        print(f"floor (graded cells' own seconds / {args.workers} workers): {floor:.1f} s; (b) is "
              f"{run.seconds / floor:.2f}x the floor" if floor else "floor: no graded cell was timed")
        same = True
        if not args.parallel_only:
            print(f"speed-up (a)/(b): {serial_s / run.seconds:.2f}x   (a)/(a'): "
                  f"{serial_s / serial_warm_s:.2f}x   (a')/(b): {serial_warm_s / run.seconds:.2f}x")
            if floor:
                print(f"(a) is {serial_s / floor:.2f}x the floor, (a') {serial_warm_s / floor:.2f}x")
            same = serial == serial_warm == parallel and len(serial) > 0
            print(f"scores identical: {same} ({len(serial)} graded cells)")
            if not same:
                for key in sorted(set(serial) | set(parallel) | set(serial_warm)):
                    if not serial.get(key) == serial_warm.get(key) == parallel.get(key):
                        print(f"  differs: {key}: (a) {serial.get(key)} (a') {serial_warm.get(key)} "
                              f"(b) {parallel.get(key)}")

        feedback_seconds(run, tmp / "parallel", tmp / "class")
        print("where (b)'s time goes, seconds per notebook (mean by assignment; record and "
              "feedback on the client, the rest on a worker):")
        print(f"  {'':<28}" + "".join(f"{step:>17}" for step in STEPS))
        for assignment_id in ids:
            rows = [t for key, t in run.timings.items() if key.endswith("/" + assignment_id)]
            if rows:
                print(f"  {assignment_id:<28}" + "".join(
                    f"{sum(t.get(step, 0.0) for t in rows) / len(rows):17.2f}" for step in STEPS))
        for worker, peak in sorted(memory.peaks.items()):
            print(f"peak memory of grading worker {worker} (with its template and kernels): "
                  f"{peak / 2**20:.0f} MiB")

        print("a cold kernel, one notebook at a time (full solution, nothing else running):")
        for assignment_id in ids:
            path = REPO_ROOT / SOURCE_DIR / assignment_id / f"{assignment_id}.ipynb"
            parts = time_one_notebook(path)
            print(f"  {assignment_id:<28} " + "  ".join(f"{k} {v:5.1f} s" for k, v in parts.items()))
    return 0 if same else 1


def feedback_seconds(run, out: Path, submitted: Path) -> None:
    """Write the feedback of each notebook graded in ``run`` as ``course grade`` does after
    grading (:func:`~.run.gradebook.write_feedback`), which puts its seconds in ``run.timings``."""

    config = nbgrader_config(REPO_ROOT, db_path=out / GRADEBOOK_FILE, workdir=out,
                             submitted_dir=submitted)
    write_feedback(config, [Submission(*key.split("/"), submitted / key) for key in run.timings],
                   run.timings)


class PeakMemory:
    """Samples, twice a second while in its ``with`` block, the memory of each Dask worker of this
    process's ``LocalCluster``: the PSS (proportional set size: shared pages split among the processes that
    share them) of the worker and every process under it. ``peaks`` maps worker pid -> bytes."""

    def __init__(self, interval_s: float = 0.5):
        self.interval_s, self.peaks = interval_s, {}
        self._stop = threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.wait(self.interval_s):
            for worker in _dask_workers(me):
                total = 0
                for process in [worker] + worker.children(recursive=True):
                    try:
                        total += process.memory_full_info().pss
                    except psutil.Error:
                        pass
                self.peaks[worker.pid] = max(self.peaks.get(worker.pid, 0), total)


def _dask_workers(me) -> list:
    """This process's Dask worker processes: the nannies of a ``LocalCluster`` live in this
    process and spawn each worker as a child of it (``multiprocessing.spawn``)."""
    import psutil

    workers = []
    for child in me.children():
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                workers.append(child)
        except psutil.Error:
            pass
    return workers


if __name__ == "__main__":
    sys.exit(main())
