"""Run grading jobs on a few long-lived worker processes, with a progress bar.

Each worker is a ``python -m autograder.grading.worker`` process (:mod:`.worker`) in its own
process group: a student's kernel runs under it, never in this process. A worker that hangs past
the job's time limit or dies is killed with its group and replaced; the job is reported as failed
and the other jobs go on.

Jobs and results travel on two pipes of their own (file descriptors 3 and up), which the worker
marks not inheritable: kernels, shell commands and C libraries write to the worker's stdout and
stderr, which go to its log file and are never read as a message.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tqdm.auto import tqdm


@dataclass
class WorkerResult:
    """What a worker reported for one job: success, nbgrader's error text and log."""
    key: str
    success: bool
    error: str = ""
    log: str = ""


def default_workers() -> int:
    """The number of cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Worker:
    """One worker process; :meth:`grade` sends it a job file and waits for its answer."""

    def __init__(self, log_path: Path, memory_limit_bytes: int | None):
        self.log_path, self.memory_limit_bytes = log_path, memory_limit_bytes
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        jobs_read, jobs_write = os.pipe()
        results_read, results_write = os.pipe()
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "autograder.grading.worker",
                 "--memory-limit-bytes", str(self.memory_limit_bytes or 0),
                 "--jobs-fd", str(jobs_read), "--results-fd", str(results_write)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(jobs_read, results_write), start_new_session=True)
        os.close(jobs_read)
        os.close(results_write)
        self.jobs = os.fdopen(jobs_write, "w")
        self.results = os.fdopen(results_read, "r")

    def grade(self, key: str, job_file: Path, timeout_s: float) -> WorkerResult:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        answer: queue.Queue = queue.Queue()
        try:
            self.jobs.write(f"{job_file}\n")
            self.jobs.flush()
        except (BrokenPipeError, OSError):
            return self._fail(key, "the grading worker stopped before it got the job")
        results = self.results
        reader = threading.Thread(target=lambda: answer.put(results.readline()), daemon=True)
        reader.start()
        try:
            line = answer.get(timeout=timeout_s)
        except queue.Empty:
            return self._fail(key, f"grading took longer than {timeout_s:.0f} s and was stopped")
        if not line:
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = "none: it closed its result pipe and hung"
            return self._fail(key, f"the grading worker died (exit code {code})")
        try:
            report = json.loads(line)
            return WorkerResult(key, bool(report["success"]), str(report.get("error", "")),
                                str(report.get("log", "")))
        except (ValueError, KeyError, TypeError):
            return self._fail(key, f"the grading worker sent a malformed result: {line[:200]!r}")

    def _fail(self, key: str, reason: str) -> WorkerResult:
        self.stop()
        tail = self.log_path.read_text(errors="replace").strip().splitlines()[-40:]
        return WorkerResult(key, False, reason, "\n".join(tail))

    def stop(self) -> None:
        """End the worker (its kernel, in a session of its own, exits when it sees its parent gone)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None
            for pipe in (self.jobs, self.results):
                try:
                    pipe.close()
                except OSError:
                    pass


def run_workers(jobs: dict[str, dict], workers: int, *, timeout_s: float, log_dir: Path,
                memory_limit_bytes: int | None = None,
                on_done: Callable[[WorkerResult], None] | None = None,
                progress: bool = True) -> dict[str, WorkerResult]:
    """Run every job on at most ``workers`` worker processes.

    Args:
        jobs: job key ("student/assignment") -> job dict (see :mod:`autograder.grading.worker`);
            each job is written to ``<scratch_dir>/job.json``.
        workers: worker processes (>= 1).
        timeout_s: wall-clock limit of one job, seconds; past it the worker is killed (and
            replaced) and the job reported as failed.
        log_dir: where each worker's stderr goes (``worker-N.log``).
        memory_limit_bytes: address-space limit of each worker and its kernels; None for none.
        on_done: called in this thread with each result as soon as its job ends.
        progress: show a tqdm bar with submissions done, failed and left, and the time remaining.
    Returns:
        job key -> :class:`WorkerResult`.
    """
    todo: queue.Queue = queue.Queue()
    for key, job in jobs.items():
        job_file = Path(job["scratch_dir"]) / "job.json"
        job_file.parent.mkdir(parents=True, exist_ok=True)
        job_file.write_text(json.dumps(job))
        todo.put((key, job_file))
    finished: queue.Queue = queue.Queue()
    pool = [Worker(Path(log_dir) / f"worker-{i + 1}.log", memory_limit_bytes)
            for i in range(max(1, min(workers, len(jobs))))]

    def serve(worker: Worker) -> None:
        try:
            while True:
                try:
                    key, job_file = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    result = worker.grade(key, job_file, timeout_s)
                except Exception as error:  # whatever breaks, this job fails and the run goes on
                    worker.stop()
                    result = WorkerResult(key, False, f"the grading worker failed: "
                                                      f"{type(error).__name__}: {error}")
                finished.put(result)
        finally:
            worker.stop()

    threads = [threading.Thread(target=serve, args=(w,), daemon=True) for w in pool]
    for thread in threads:
        thread.start()
    results: dict[str, WorkerResult] = {}
    failed = 0
    with tqdm(total=len(jobs), unit="nb", desc="grading", disable=not progress or not jobs,
              dynamic_ncols=True) as bar:
        while len(results) < len(jobs):
            result = finished.get()
            results[result.key] = result
            failed += not result.success
            if on_done:
                on_done(result)
            bar.set_postfix(done=len(results) - failed, failed=failed,
                            left=len(jobs) - len(results), refresh=False)
            bar.update(1)
    for thread in threads:
        thread.join()
    return results
