"""The one place that knows what a grading run writes where, under its output folder.

The README's table of outputs describes this layout; `course grade` and `course formgrader` use it.
"""
from __future__ import annotations

import fcntl
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.defaults import GRADEBOOK_FILE


@dataclass(frozen=True)
class OutputLayout:
    """The files and folders of a grading run's output folder ``out``."""
    out: Path

    @property
    def gradebook(self) -> Path:
        """nbgrader's SQLite gradebook (unless the run was given a database URL)."""
        return self.out / GRADEBOOK_FILE

    @property
    def grades_csv(self) -> Path:
        """nbgrader's CSV export: one row per student and assignment."""
        return self.out / "grades.csv"

    @property
    def scores_csv(self) -> Path:
        """One row per student and graded cell, with messages, failed steps and review flags."""
        return self.out / "scores_by_exercise.csv"

    @property
    def student_ids(self) -> Path:
        """Student folder name -> the student id it is graded under (:mod:`.intake.student_ids`)."""
        return self.out / "student_ids.csv"

    @property
    def summary(self) -> Path:
        return self.out / "summary.txt"

    @property
    def plots(self) -> tuple[Path, Path]:
        """The score histogram and the pass rate per exercise (PNG)."""
        return self.out / "score_histogram.png", self.out / "pass_rates.png"

    @property
    def similarity(self) -> tuple[Path, Path]:
        """Answer similarity: the pairs ranked (CSV) and copydetect's report (HTML)."""
        return self.out / "similarity_pairs.csv", self.out / "similarity.html"

    @property
    def mistakes(self) -> tuple[Path, Path]:
        """Each catalogued mistake per exercise, with its count of students: CSV and PNG."""
        return self.out / "mistakes_by_exercise.csv", self.out / "mistakes_by_exercise.png"

    @property
    def lms(self) -> tuple[Path, Path]:
        """The gradebook for Canvas's and for Moodle's grade import (CSV)."""
        return self.out / "canvas_grades.csv", self.out / "moodle_grades.csv"

    @property
    def autograded(self) -> Path:
        """nbgrader's autograded folder: ``<student>/<assignment>/<notebook>.ipynb``."""
        return self.out / "autograded"

    @property
    def feedback(self) -> Path:
        """nbgrader's feedback folder: ``<student>/<assignment>/<notebook>.html``."""
        return self.out / "feedback"

    @property
    def release(self) -> Path:
        """The assignments as this folder's gradebook knows them."""
        return self.out / "release"

    @property
    def runs(self) -> Path:
        """Scratch space of the runs in progress (staged copies, executed notebooks)."""
        return self.out / "runs"

    @property
    def lock(self) -> Path:
        """The file lock that serializes gradebook writes."""
        return self.out / ".gradebook.lock"

    def record(self, student_id: str, assignment_id: str) -> Path:
        """What the last grading of a submission saw (JSON: sha256, problem, failures)."""
        return self.out / "records" / student_id / f"{assignment_id}.json"

    def log(self, student_id: str, assignment_id: str) -> Path:
        """What a submission whose grading failed left behind."""
        return self.out / "logs" / student_id / f"{assignment_id}.log"

    def listed(self) -> list[Path]:
        """The outputs an instructor reads, in the order the command lists them."""
        return [self.grades_csv, self.scores_csv, self.summary, *self.plots, *self.mistakes, *self.similarity,
                *self.lms, self.student_ids, self.feedback, self.gradebook]


@contextmanager
def gradebook_lock(out: Path):
    """An exclusive lock on the output folder's lock file (:class:`~.layout.OutputLayout`) held
    while writing the gradebook, so that two grading runs on the same course never write at once."""
    out.mkdir(parents=True, exist_ok=True)
    with open(OutputLayout(out).lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
