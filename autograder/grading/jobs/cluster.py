"""Run grading jobs on Dask: an embedded ``LocalCluster`` by default, or an existing cluster.

Each job (:class:`~.jobs.job.Job`) is data in, data out, so a worker needs no shared file system:
only this package installed. Workers are processes with one thread each, so one job runs per
worker at a time. A worker lost mid-job (its machine went away, it was killed) has its job
rescheduled once on another worker; a job that loses a second worker ends as ``Outcome.LOST`` with a
reason, not in a retry loop. Each worker of the embedded cluster has a memory limit
(:func:`worker_memory_limit`): past it Dask restarts the worker, and its job counts as one lost.
"""
from __future__ import annotations

import logging
import os
import threading
import uuid
from concurrent.futures import Future
from contextlib import contextmanager, nullcontext
from typing import Callable, Iterator

from tqdm.auto import tqdm

from autograder.grading.defaults import ALLOWED_FAILURES, WORKER_MEMORY_MAX
from autograder.grading.failures import Outcome
from autograder.grading.jobs.job import Job, JobResult
from autograder.grading.jobs.worker import grade_job


def default_workers() -> int:
    """The number of cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def worker_memory_limit(workers: int) -> int:
    """The memory limit of each of ``workers`` workers on this machine, bytes: the memory this
    process may use (the machine's, or its cgroup's) shared among them, at most
    :data:`WORKER_MEMORY_MAX`. A worker grading this workbook uses a few hundred MiB; the limit
    stops one that holds a huge notebook's outputs."""
    from distributed.system import MEMORY_LIMIT

    return int(min(MEMORY_LIMIT / max(1, workers), WORKER_MEMORY_MAX))


@contextmanager
def dask_client(workers: int, scheduler: str | None = None) -> Iterator:
    """A ``distributed.Client``: connected to ``scheduler`` (an address such as
    ``tcp://10.0.0.5:8786``) when given, else to a new ``LocalCluster`` of ``workers`` worker
    processes with one thread each, on this machine's loopback (its dashboard on a free port),
    each with :func:`worker_memory_limit`: Dask restarts a worker past 95% of it (and never pauses
    or spills one: a job holds nothing Dask could spill). Each worker of the embedded cluster
    imports the grading code (:data:`WORKER_PRELOAD`) as it starts, not at its first job."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                          "distributed.worker.memory.target": False,
                          "distributed.worker.memory.spill": False,
                          "distributed.worker.memory.pause": False,
                          "distributed.worker.memory.terminate": 0.95}):
        if scheduler:
            with Client(scheduler) as client:
                yield client
            return
        with LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address="127.0.0.1:0",
                          memory_limit=worker_memory_limit(workers), preload=WORKER_PRELOAD,
                          silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            yield client


#: Modules each embedded worker imports as it starts (a few seconds of nbgrader and nbconvert).
WORKER_PRELOAD = ["autograder.grading.jobs.worker"]


class ClusterStart:
    """The client of :func:`dask_client`, started in a background thread by :meth:`start`, so
    that the cluster's workers start and import the grading code while this process releases the
    assignments and stages the submissions (issue 30). :meth:`client` waits for it (starting it
    first if need be, and raising what starting it raised); leaving the context closes the
    cluster, if it was started. The thread enters and leaves :func:`dask_client` itself: a
    ``Client`` must be closed where it was made."""

    def __init__(self, workers: int, scheduler: str | None = None):
        self.workers, self.scheduler = workers, scheduler
        self._client: Future = Future()
        self._leave = threading.Event()
        self._closing_error: BaseException | None = None

    def __enter__(self) -> "ClusterStart":
        self._thread: threading.Thread | None = None
        return self

    def start(self) -> None:
        """Start the cluster in the background (once; later calls do nothing)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._hold, name="cluster-start", daemon=True)
            self._thread.start()

    def _hold(self) -> None:
        try:
            with dask_client(self.workers, self.scheduler) as client:
                self._client.set_result(client)
                self._leave.wait()
        except BaseException as error:
            if not self._client.done():
                self._client.set_exception(error)
            else:
                self._closing_error = error

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called."""
        return self._thread is not None

    def client(self):
        """The ``distributed.Client``, once the cluster is up."""
        self.start()
        return self._client.result()

    def __exit__(self, exc_type, *exc) -> None:
        self._leave.set()
        if self._thread is None:
            return
        self._thread.join()
        if self._closing_error is not None and exc_type is None:
            raise self._closing_error


def run_jobs(jobs: list[Job], workers: int, *, scheduler: str | None = None,
             on_done: Callable[[JobResult], None] | None = None,
             progress: bool = True, cluster: ClusterStart | None = None) -> dict[str, JobResult]:
    """Grade every job on Dask and return job key -> :class:`~.jobs.job.JobResult`.

    Args:
        jobs: the jobs; their keys (``student/assignment``) must be unique.
        workers: worker processes of the embedded cluster (ignored with ``scheduler``).
        scheduler: address of an existing Dask scheduler; None starts a ``LocalCluster``.
        on_done: called in this thread with each result as soon as its job ends (the client
            records it there); it must not raise.
        progress: show a tqdm bar with submissions done, failed and left.
        cluster: a cluster started earlier (:class:`ClusterStart`) to grade on instead of
            ``workers`` and ``scheduler``; it stays open.
    """
    results: dict[str, JobResult] = {}
    if not jobs:
        return results
    from distributed import as_completed

    run_id = uuid.uuid4().hex[:8]
    with nullcontext(cluster.client()) if cluster else dask_client(workers, scheduler) as client:
        futures = {client.submit(grade_job, job, key=f"grade-{run_id}-{job.key}", pure=False): job
                   for job in jobs}
        failed = 0
        with tqdm(total=len(jobs), unit="nb", desc="grading", disable=not progress,
                  dynamic_ncols=True) as bar:
            for future in as_completed(futures):
                job = futures[future]
                try:
                    result = future.result()
                except Exception as error:  # KilledWorker: it took its workers down with it
                    result = JobResult(job.key, Outcome.LOST, "the grading worker died while grading "
                                       f"it, {ALLOWED_FAILURES + 1} times ({type(error).__name__})")
                results[job.key] = result
                failed += not result.success
                if on_done:
                    on_done(result)
                bar.set_postfix(done=len(results) - failed, failed=failed,
                                left=len(jobs) - len(results), refresh=False)
                bar.update(1)
    return results
