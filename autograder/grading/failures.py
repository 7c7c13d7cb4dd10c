"""Why a submission was not graded, or not fully: the kinds of failure, typed where they happen,
and what the grader's own machinery reports (never a submission's grade).
"""
from __future__ import annotations


class GraderFailure(RuntimeError):
    """The grader's own machinery failed (a kernel's cgroup could not be made, no kernel could be
    started): not the submission's doing, so never its grade."""


# What failed of the grader's own machinery in this process since the current job began (a
# worker grades one job at a time; :mod:`.jobs.worker` clears it): no code of a submission can add to it.
MACHINERY_FAILURES: list[str] = []

# Kernels of this process killed for going past their memory limit together, since the job
# began: one line each.
OUT_OF_MEMORY: list[str] = []


def machinery_failed(what: str) -> None:
    MACHINERY_FAILURES.append(what)
