"""What the test files share: the sample class, built once, and its one grading (issue 30).

Grading the whole sample class is the suite's most expensive step: every test that only reads a
default grading of it (tests/test_grading_samples.py) reads this one. A test that needs a run of
its own (other options, a class changed on purpose) grades its own, the smallest class its claim
allows.

Where pytest-xdist is installed and asked for (it is not in the test extras: on 2 cores it was not
measured faster), session fixtures are per worker process: ``--dist loadfile`` keeps each file on
one worker, so the class is graded once per session as long as one
file (tests/test_grading_samples.py) reads :func:`graded_samples`; :func:`sample_class`, cheap to
build, is built once per worker.
"""
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
    """Dask workers for a test's grading run: ``wanted``, but no more than the cores left to this
    test process when pytest-xdist runs several (PYTEST_XDIST_WORKER_COUNT), at least 1.

    A test whose claim is about several workers (a worker lost mid-job, two commands at once)
    passes its own number instead."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    processes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, min(wanted, cores // processes))


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
                      progress=False)
    return run, (submitted, before)
