"""One grading job: data in (:class:`Job`), data out (:class:`JobResult`); a job never raises.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder.grading.defaults import JOB_TIMEOUT_S
from autograder.grading.failures import Outcome


@dataclass(frozen=True)
class Job:
    """What a worker needs to grade one submission.

    ``files`` maps each file name of the staged submission folder (``<notebook>.ipynb`` and any
    other file) to its bytes; ``gradebook`` is an SQLite gradebook (bytes) holding the released
    assignment, hidden tests included, which nbgrader uses to restore and score the cells.
    ``cell_timeout_s`` (seconds), ``memory_limit_bytes`` (the kernel's address space, and all its
    processes together; None for none), ``sandbox``, ``demo_sha256`` (the demonstration cells not to
    run, see :func:`~.course.demo_cell_hashes`) and ``timeout_s`` (the whole job, seconds) are the
    run's settings.
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
