"""Run grading jobs on a few long-lived worker processes, with a progress bar.

Each worker is a ``python -m autograder.grading.worker`` process (:mod:`.worker`) in its own
process group: a student's kernel runs under it, never in this process. A worker that hangs past
the job's time limit or dies is killed with its group and replaced; the job is reported as failed
and the other jobs go on.
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
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.grading.worker",
             "--memory-limit-bytes", str(self.memory_limit_bytes or 0)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            start_new_session=True)
        log.close()

    def grade(self, key: str, job_file: Path, timeout_s: float) -> WorkerResult:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        answer: queue.Queue = queue.Queue()
        try:
            self.proc.stdin.write(f"{job_file}\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._fail(key, "the grading worker stopped before it got the job")
        reader = threading.Thread(target=lambda: answer.put(self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        try:
            line = answer.get(timeout=timeout_s)
        except queue.Empty:
            return self._fail(key, f"grading took longer than {timeout_s:.0f} s and was stopped")
        if not line:
            return self._fail(key, f"the grading worker died (exit code {self.proc.wait()})")
        report = json.loads(line)
        return WorkerResult(key, report["success"], report.get("error", ""), report.get("log", ""))

    def _fail(self, key: str, reason: str) -> WorkerResult:
        self.stop()
        tail = self.log_path.read_text(errors="replace").strip().splitlines()[-3:]
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
                finished.put(worker.grade(key, job_file, timeout_s))
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
