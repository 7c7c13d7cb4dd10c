"""Run grading workers concurrently with a progress bar.

Each submission is executed by its own ``python -m autograder.grading.worker`` process (a fresh
interpreter: one student's crash, hang or memory blow-up cannot touch the others or this process).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
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


def run_workers(jobs: dict[str, dict], workers: int, *, timeout_s: float,
                on_done: Callable[[WorkerResult], None] | None = None,
                progress: bool = True) -> dict[str, WorkerResult]:
    """Run one worker process per job, at most ``workers`` at a time.

    Args:
        jobs: job key ("student/assignment") -> job dict (see :mod:`autograder.grading.worker`);
            each job is written to ``<scratch_dir>/job.json``.
        workers: processes at once (>= 1).
        timeout_s: wall-clock limit of one worker, seconds; past it the worker is killed and the
            job reported as failed.
        on_done: called in this thread with each result as soon as its worker ends.
        progress: show a tqdm bar with students done, failed and left, and the time remaining.
    Returns:
        job key -> :class:`WorkerResult`.
    """
    results: dict[str, WorkerResult] = {}
    bar = tqdm(total=len(jobs), unit="nb", desc="grading", disable=not progress,
               dynamic_ncols=True)
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(_run_one, key, job, timeout_s): key for key, job in jobs.items()}
        for future in as_completed(futures):
            result = future.result()
            results[result.key] = result
            if on_done:
                on_done(result)
            failed += not result.success
            bar.set_postfix(done=len(results) - failed, failed=failed,
                            left=len(jobs) - len(results), refresh=False)
            bar.update(1)
    bar.close()
    return results


def _run_one(key: str, job: dict, timeout_s: float) -> WorkerResult:
    job_file = Path(job["scratch_dir"]) / "job.json"
    job_file.parent.mkdir(parents=True, exist_ok=True)
    job_file.write_text(json.dumps(job))
    proc = subprocess.Popen([sys.executable, "-m", "autograder.grading.worker", str(job_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker's group; its kernel exits with it
        proc.communicate()
        return WorkerResult(key, False, f"grading took longer than {timeout_s:.0f} s and was stopped")
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (stderr or stdout).strip().splitlines()[-5:]
        return WorkerResult(key, False, f"grading worker exited with code {proc.returncode}: "
                            + " | ".join(tail))
    report = json.loads(lines[-1])
    return WorkerResult(key, report["success"], report.get("error", ""), report.get("log", ""))
