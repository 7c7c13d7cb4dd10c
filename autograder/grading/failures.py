"""Why a submission was not graded, or not fully: one :class:`Outcome` per submitted notebook,
typed where it happens, and what the grader's own machinery reports (never a submission's grade).

One word throughout the package for "not graded because": a *problem* (``JobResult.problem``,
``NotebookGrade.problem``, a record's ``"problem"``), a sentence for the instructor; its
:class:`Outcome` says which kind it is.
"""
from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """What became of a submitted notebook (a ``str``: records and logs hold its value).

    Set where it happens: intake (:data:`NOT_SUBMITTED`, :data:`UNREADABLE`), the worker reading
    nbgrader's error (:data:`KERNEL_DIED`, :data:`FAILED`), the kernel's cgroup guard
    (:data:`OUT_OF_MEMORY`), the job's timer (:data:`TIMED_OUT`), the grader's own machinery
    (:data:`GRADER_FAILED`: never recorded as a grade; a kernel that died before any cell of the
    student's ran is one) and the Dask client (:data:`LOST`).
    """
    GRADED = "graded"                # every cell ran (cells may still have failed)
    NOT_SUBMITTED = "not_submitted"  # no file of that name in the submission
    UNREADABLE = "unreadable"        # a file that is not a notebook one can grade
    KERNEL_DIED = "kernel_died"      # the kernel ended once a student's cell could have run
    OUT_OF_MEMORY = "out_of_memory"  # its processes together went past the memory limit
    TIMED_OUT = "timed_out"          # the whole job ran past its time limit
    FAILED = "failed"                # nbgrader or the worker broke on this submission
    GRADER_FAILED = "grader_failed"  # the grader's machinery failed twice: not the student's doing
    LOST = "lost"                    # the grading worker died, twice


class GraderFailure(RuntimeError):
    """The grader's own machinery failed (a kernel's cgroup could not be made, no kernel could be
    started): not the submission's doing, so never its grade."""


# What failed of the grader's own machinery in this process since the current job began (a
# worker grades one job at a time; :mod:`.jobs.worker` clears it): a kernel that could not start,
# whose template died, or that died before any cell of the student's ran (before it answered, or
# in the course's set-up: :class:`~.kernels.managers.LimitedKernelManager`). No code of a
# submission can add to it: none has run when a kernel's death is noted here.
MACHINERY_FAILURES: list[str] = []

# Kernels of this process killed for going past their memory limit together, since the job
# began: one line each.
OUT_OF_MEMORY: list[str] = []


def machinery_failed(what: str) -> None:
    """Note ``what`` (a sentence for the instructor) in :data:`MACHINERY_FAILURES`."""
    MACHINERY_FAILURES.append(what)
