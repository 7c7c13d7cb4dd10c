"""What the test files share: the sample class, built once, and its one grading (issue 30).

Grading the whole sample class is the suite's most expensive step: every test that only reads a
default grading of it (tests/test_grading_samples.py) reads this one. A test that needs a run of
its own (other options, a class changed on purpose) grades its own, the smallest class its claim
allows.

Run in two pytest-xdist processes (``pytest -n 2 --dist loadfile``), each test file on one of
them, session fixtures are per process: :func:`graded_samples` is graded once, in the process that
runs tests/test_grading_samples.py (its only reader), and :func:`sample_class`, cheap to build,
once per process that asks for it.

The grading runs of most test files share one Dask cluster (:func:`shared_scheduler`): each run
starting a cluster of its own cost 20-60 s on 2 cores, before any notebook was graded.
"""
import contextlib
import hashlib
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_DIR = ROOT / "tests" / "samples" / "expected"


def hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``, by path relative to it (to show nothing was written)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def grading_workers(wanted: int = 2) -> int:
    """Dask workers for a test's grading run: ``wanted``, but no more than this machine's cores,
    at least 1.

    Not divided between the test processes: a run that grades on all the cores while the other
    process runs its tests shares them, and has them all when the other is done (on 2 cores the
    sample class's file alone takes 17 min on one worker, longer than the rest of the suite).
    A test whose claim is about several workers (a worker lost mid-job, two commands at once)
    passes its own number instead."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(wanted, cores))


# The environment as the root conftest.py left it, before any test changed it: what the shared
# cluster's workers (and so their kernels) inherit, whichever test starts it.
_SESSION_ENV = dict(os.environ)
_shared_cluster = contextlib.ExitStack()
_shared_address: list[str] = []


def shared_scheduler() -> str:
    """The address of one Dask cluster for the whole test session (per pytest-xdist process),
    started at its first use by the project's own :func:`~autograder.grading.jobs.cluster.
    dask_client`, so with what a `course grade` run's embedded cluster has: :func:`grading_workers`
    worker processes of one thread, their memory limit, the allowed failures, the preload. Closed
    at the end of the session (:func:`_close_shared_cluster`).

    A test grades on it with ``grade_class(..., scheduler=shared_scheduler())`` or ``course grade
    --scheduler ADDRESS``, and so skips a cluster's start (20-60 s on 2 cores). Its workers keep
    the session's environment and their warm-kernel templates (keyed by the kernels' environment
    alone; a template imports only the installed package, never a course's files, which each job
    carries). Not for a test that changes the environment the workers must see, kills or counts
    workers, or checks a cluster's own start: those grade on a cluster of their own."""
    if not _shared_address:
        from autograder.grading.jobs.cluster import dask_client

        now = dict(os.environ)
        os.environ.clear()
        os.environ.update(_SESSION_ENV)
        try:
            client = _shared_cluster.enter_context(dask_client(grading_workers(), None))
        finally:
            os.environ.clear()
            os.environ.update(now)
        _shared_address.append(client.scheduler.address)
    return _shared_address[0]


@pytest.fixture(scope="session", autouse=True)
def _close_shared_cluster():
    """Close :func:`shared_scheduler`'s cluster, where a test started it, when the session ends."""
    yield
    _shared_cluster.close()


@pytest.fixture(scope="session")
def sample_class(tmp_path_factory) -> Path:
    """The sample class (autograder.grading.demo.samples), built once for the session. Read
    only: a test that changes a notebook copies it first (tests that grade it check that its
    files are byte-identical afterwards)."""
    from autograder.grading.demo.samples import build_sample_class

    return build_sample_class(tmp_path_factory.mktemp("sample_class") / "submitted")


@pytest.fixture(scope="session")
def graded_samples(tmp_path_factory, sample_class):
    """One real grading run (real kernels, real nbgrader, default options) of the whole sample
    class, every assignment of tests/samples/expected. Returns ``(run, (submitted, hashes
    before))``; ``submitted`` is a copy of :func:`sample_class` that only this run reads."""
    from autograder.grading.run.pipeline import grade_class

    submitted = tmp_path_factory.mktemp("graded_samples") / "submitted"
    shutil.copytree(sample_class, submitted, symlinks=True)
    before = hashes(submitted)
    out = tmp_path_factory.mktemp("grading")
    assignment_ids = sorted(p.stem for p in EXPECTED_DIR.glob("0*.json"))
    run = grade_class(submitted, out, assignment_ids=assignment_ids, workers=grading_workers(),
                      progress=False, scheduler=shared_scheduler())
    return run, (submitted, before)
