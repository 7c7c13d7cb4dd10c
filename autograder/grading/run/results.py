"""What a grading run found: a grade per submitted notebook, and the run as a whole.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.failures import Outcome


@dataclass
class NotebookGrade:
    """The grade of one submitted notebook.

    ``scores`` maps each graded cell's ``grade_id`` to ``(score, max_score)`` in points;
    ``messages`` maps the ``grade_id`` of each failed graded cell to its first error line;
    ``problem`` says why the notebook was not graded (or only partly), else None;
    ``restored`` lists the locked cells the student deleted or changed, which nbgrader restored
    from the source before grading; ``notes`` says what was done about misnamed or extra files,
    copied cells and the like; ``executed`` is False for a notebook that was missing or not
    a valid notebook (it scores 0 without running); ``failures`` lists each step of the pipeline
    that failed for this submission as ``"<step>: <reason>"`` (steps: stage, execute, record,
    collect, feedback), where the instructor must act; ``review`` lists what the static scan
    (:mod:`.intake.scan`) and the integrity check (:class:`~.preprocessors.execute.GradingExecute`) flagged for
    review: the score stands, a person decides; ``outcome`` is what became of the notebook
    (:class:`~.failures.Outcome`: graded, not submitted, unreadable, or why its run failed);
    ``seconds_late`` is how long after its assignment's due date it was submitted (nbgrader's
    ``Submission.total_seconds_late``: 0 when on time, or without a due date or a
    ``timestamp.txt``) and ``late_penalty`` the points nbgrader's late-penalty plugin took off
    (``SubmittedNotebook.late_submission_penalty``; ``score`` is before it);
    ``folder`` is the name of the student's folder as submitted (``student_id`` is the id
    nbgrader grades it under, :mod:`.intake.student_ids`; "": the same); ``manual`` maps each
    cell graded by hand (in nbgrader's terms an answer cell with points, or a task cell) to its
    score once known (a person's ``manual_score``, or nbgrader's 0 for an unanswered cell), None
    while it waits for manual grading (its ``scores`` entry is then 0).
    """
    student_id: str
    assignment_id: str
    notebook_id: str
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    problem: str | None = None
    restored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    executed: bool = False
    failures: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)
    outcome: Outcome = Outcome.GRADED
    seconds_late: float = 0.0
    late_penalty: float = 0.0
    folder: str = ""
    manual: dict[str, float | None] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return sum(s for s, _ in self.scores.values())

    @property
    def max_score(self) -> float:
        return sum(m for _, m in self.scores.values())

    @property
    def pending(self) -> list[str]:
        """The ``grade_id`` of each cell that waits for manual grading (when ``executed``)."""
        return [cell for cell, score in self.manual.items() if score is None] \
            if self.executed else []

    @property
    def status(self) -> str:
        """What became of the notebook, for reports: its ``outcome`` ("graded", "not submitted",
        "unreadable", "kernel died", ...), or "needs manual grading" for a graded notebook with
        :attr:`pending` cells."""
        if self.outcome is not Outcome.GRADED:
            return self.outcome.value.replace("_", " ")
        return "needs manual grading" if self.pending else "graded"

    def cell_status(self, grade_id: str) -> str:
        """:attr:`status` of one graded cell: "needs manual grading" or "graded" in a graded
        notebook, else the notebook's."""
        if self.outcome is not Outcome.GRADED:
            return self.status
        return "needs manual grading" if grade_id in self.pending else "graded"


@dataclass
class GradeRun:
    """Everything a grading run produced; files are under ``out``. ``ignored`` lists the
    ``<student>/<folder>`` entries that name no assignment (not graded); ``failures`` lists what
    failed for the run as a whole (an export), each as ``"<step>: <reason>"``; ``timings`` maps
    each submission graded in this run (``student/assignment``) to its seconds per step
    (:attr:`.jobs.job.JobResult.timings`, "record", "feedback")."""
    out: Path
    grades: list[NotebookGrade]
    seconds: float
    graded_now: int
    reused: int
    ignored: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    sandboxed: bool = True
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
