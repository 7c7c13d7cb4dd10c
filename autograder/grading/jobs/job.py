"""One grading job: data in (:class:`Job`), data out (:class:`JobResult`); a job never raises.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.defaults import JOB_TIMEOUT_S, MAX_OTHER_FILES_BYTES
from autograder.grading.failures import Outcome


# What an assignment's own data files may take together, bytes, carried with each of its jobs.
MAX_SOURCE_BYTES = 2 * MAX_OTHER_FILES_BYTES


@dataclass(frozen=True)
class Job:
    """What a worker needs to grade one submission.

    ``files`` maps each file name of the staged submission folder (``<notebook>.ipynb`` and any
    other file) to its bytes; ``gradebook`` is an SQLite gradebook (bytes) holding the released
    assignment, hidden tests included, which nbgrader uses to restore and score the cells.
    ``cell_timeout_s`` (seconds), ``memory_limit_bytes`` (the kernel's address space, and all its
    processes together; None for none), ``sandbox``, ``demo_sha256`` (the demonstration cells not to
    run, see :func:`~.course.demo_cell_hashes`) and ``timeout_s`` (the whole job, seconds) are the
    run's settings. ``source_files`` maps the relative path (``/``-separated) of each file of
    the assignment's source folder that is not a notebook (:func:`source_files`) to its bytes:
    nbgrader copies them beside the submission before it runs the notebooks.
    """
    student_id: str
    assignment_id: str
    files: dict[str, bytes]
    gradebook: bytes
    cell_timeout_s: int
    memory_limit_bytes: int | None
    sandbox: bool
    demo_sha256: tuple[str, ...] = ()
    timeout_s: float = JOB_TIMEOUT_S
    source_files: dict[str, bytes] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.student_id}/{self.assignment_id}"


@dataclass
class JobResult:
    """What a worker reports for one job.

    ``kind`` is :data:`~.failures.Outcome.GRADED` (every notebook executed; cells may still have
    failed), or why not (:class:`~.failures.Outcome`: ``KERNEL_DIED``, ``OUT_OF_MEMORY``,
    ``TIMED_OUT``, ``FAILED``, ``GRADER_FAILED``, never the submission's grade, or ``LOST``, set
    on the client's side), and ``problem`` says it in a sentence. ``missing_limits`` has a warning
    line per per-kernel limit this worker could not set
    (:func:`~.kernels.cgroups.missing_limits_lines`).
    ``executed`` maps notebook names (without ``.ipynb``) to the executed notebook's bytes, as far
    as they ran; ``log`` is nbgrader's log; ``seconds`` the job's wall time; ``timings`` splits
    it, in seconds: "kernel start", "integrity checks", "set-up cell", "graded cells" (the
    verdict's requests, or a test cell run in the kernel), "other cells" and "nbgrader" (the rest
    of nbgrader's autograde on the worker). ``files`` maps the name of each file the notebooks
    wrote in their working folders to its bytes, and ``notes`` says what of them was left out
    (:mod:`~.preprocessors.written`).
    """
    key: str
    kind: Outcome
    problem: str = ""
    executed: dict[str, bytes] = field(default_factory=dict)
    log: str = ""
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    missing_limits: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return self.kind is Outcome.GRADED


def source_files(folder: Path) -> dict[str, bytes]:
    """The files nbgrader's autograde copies from an assignment's source (or release) ``folder``
    beside each submission: every regular file below it but notebooks, names starting with a dot,
    ``__pycache__``, ``*.pyc`` and the top ``feedback`` folder (nbgrader's ``CourseDirectory.ignore``),
    by relative path with ``/``, while they take at most :data:`MAX_SOURCE_BYTES` together (links
    are not followed). An instructor's data files (``data.csv``, ``data/train.csv``)."""
    found: dict[str, bytes] = {}
    total = 0
    for top, dirs, files in os.walk(folder, followlinks=False):
        here = Path(top)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__"
                         and not (here == folder and d == "feedback"))
        for name in sorted(files):
            path = here / name
            if name.startswith(".") or name.endswith((".ipynb", ".pyc")) or path.is_symlink() \
                    or not path.is_file() or total + path.stat().st_size > MAX_SOURCE_BYTES:
                continue
            data = found[path.relative_to(folder).as_posix()] = path.read_bytes()
            total += len(data)
    return found
