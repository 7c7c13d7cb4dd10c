"""A grading job on a worker: data in, data out, so that it runs on any Dask worker (no shared
file system).

The client builds a :class:`Job` per submission (its staged files as bytes, the assignment's
scratch gradebook as bytes, the settings); :func:`grade_job` runs on a worker, in a private scratch
course, nbgrader's own ``autograde`` (its kernel in the sandbox, see :mod:`.kernels.bwrap`),
and returns a :class:`JobResult` with the executed notebooks as bytes. Every failure becomes the
result's ``kind`` (an :class:`~.failures.Outcome`) and ``problem``: a job never raises. A
failure of the grader's own machinery (no kernel could be started, its cgroup could not be made,
the warm-kernel template died, a kernel died before any cell of the student's ran: before it
answered, or in the course's set-up, under the run's memory limit) is graded again once, with
cold kernels; if it fails again the result is ``Outcome.GRADER_FAILED``, which the client never
records as the student's grade. A kernel that dies later is the student's (``KERNEL_DIED``).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import warnings
from pathlib import Path

from autograder.grading.defaults import GRADEBOOK_FILE, SOURCE_DIR, WORKER_ENV
from autograder.grading.failures import MACHINERY_FAILURES, OUT_OF_MEMORY, Outcome
from autograder.grading.jobs.job import Job, JobResult
from autograder.grading.kernels.cgroups import missing_limits_lines
from autograder.grading.nbgrader_api import nbgrader_api, nbgrader_config, read_failure
from autograder.grading.preprocessors import written
from autograder.grading.preprocessors.execute import TIMINGS


def grade_job(job: Job) -> JobResult:
    """Autograde ``job`` in a private scratch course; never raises (see :class:`JobResult`)."""

    started = time.perf_counter()
    os.environ.update(WORKER_ENV)
    # nbgrader's gradebook code trips SQLAlchemy's autoflush warnings; they are not news.
    warnings.filterwarnings("ignore", message=".*not in session.*")
    timer = threading.Timer(job.timeout_s, _kill_kernels)
    timer.start()
    try:
        notes = ""
        for attempt, warm in enumerate((True, False), 1):
            MACHINERY_FAILURES.clear()
            OUT_OF_MEMORY.clear()
            result = _attempt(job, warm)
            failures = list(MACHINERY_FAILURES)
            if result.success or not failures or timer.finished.is_set():
                break
            # The grader failed, not the submission: once more, with cold kernels.
            notes += f"--- attempt {attempt} ({'warm' if warm else 'cold'} kernels): the " \
                f"grader failed: {'; '.join(failures)}\n"
        result.log = notes + result.log
        if not result.success and failures and not timer.finished.is_set():
            result = JobResult(job.key, Outcome.GRADER_FAILED,
                               "not graded: the grader failed twice (" + "; ".join(failures)[:300] +
                               "); run again", result.executed, result.log, timings=result.timings)
        elif not result.success and OUT_OF_MEMORY:
            result.kind, result.problem = Outcome.OUT_OF_MEMORY, OUT_OF_MEMORY[0]
        result.missing_limits = missing_limits_lines() if job.sandbox else []
    finally:
        timer.cancel()
    if timer.finished.is_set() and time.perf_counter() - started >= job.timeout_s:
        result.kind = Outcome.TIMED_OUT
        result.problem = f"grading took longer than {job.timeout_s:.0f} s and was stopped"
    result.seconds = time.perf_counter() - started
    return result


def _attempt(job: Job, warm: bool) -> JobResult:
    """One autograde of ``job`` in a fresh scratch course (warm or cold kernels)."""
    scratch = Path(tempfile.mkdtemp(prefix="grading-job-"))
    try:
        return _autograde(job, scratch, warm)
    except Exception as error:  # a broken job must not end the worker
        return JobResult(job.key, Outcome.FAILED, f"{type(error).__name__}: {error}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _autograde(job: Job, scratch: Path, warm: bool = True) -> JobResult:

    submitted = scratch / "submitted" / job.student_id / job.assignment_id
    submitted.mkdir(parents=True)
    for name, data in job.files.items():
        (submitted / Path(name).name).write_bytes(data)
    source = scratch / SOURCE_DIR / job.assignment_id  # nbgrader copies its other files
    source.mkdir(parents=True)
    for name, data in job.source_files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    (scratch / GRADEBOOK_FILE).write_bytes(job.gradebook)
    config = nbgrader_config(scratch, db_path=scratch / GRADEBOOK_FILE,
                             submitted_dir=scratch / "submitted", workdir=scratch,
                             cell_timeout_s=job.cell_timeout_s, sandbox=job.sandbox,
                             memory_limit_bytes=job.memory_limit_bytes,
                             demo_sha256=list(job.demo_sha256))  # the client's, not this host's
    kernel_log = scratch / "kernel-output.log"
    config.LimitedKernelManager.output_log = str(kernel_log)
    if not warm:
        config.SandboxedKernelManager.warm = False
    TIMINGS.clear()
    written.WRITTEN.clear()
    written.NOTES.clear()
    started = time.perf_counter()
    outcome = nbgrader_api(config).autograde(job.assignment_id, job.student_id, force=True,
                                             create=True)
    timings = dict(TIMINGS)
    timings["nbgrader"] = time.perf_counter() - started - sum(TIMINGS.values())
    executed = {p.stem: p.read_bytes() for p in
                (scratch / "autograded" / job.student_id / job.assignment_id).glob("*.ipynb")}
    log = outcome.get("log", "") or ""
    kind, problem = (Outcome.GRADED, "") if outcome.get("success") else \
        read_failure(outcome.get("error", "") or "", log)
    if kernel_log.exists():  # its last lines: why a kernel did not start, what a library said
        tail = kernel_log.read_bytes()[-4000:].decode("utf-8", "replace")
        log += f"\n--- the kernel's own stdout and stderr (last lines) ---\n{tail}"
    files, notes = dict(written.WRITTEN), list(written.NOTES)
    return JobResult(job.key, kind, "" if outcome.get("success") else problem, executed, log,
                     timings=timings, files=files, notes=notes)


def _kill_kernels() -> None:
    """Kill every process this worker started (its kernels and their sandboxes): the job ran past
    its time limit. A worker runs one job at a time, so they are all this job's."""
    import psutil

    for child in psutil.Process(os.getpid()).children(recursive=True):
        try:
            child.kill()
        except psutil.Error:
            pass
