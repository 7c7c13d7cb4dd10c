"""What a grading run gives the instructor: a score table, CSV exports, messages."""
from __future__ import annotations

import csv
from pathlib import Path

from .grade import NotebookGrade


def write_exports(config, grades: list[NotebookGrade], out: Path) -> None:
    """Write ``<out>/grades.csv`` (nbgrader's CSV export: one row per student and assignment)
    and ``<out>/scores_by_exercise.csv`` (one row per student, notebook and graded cell, with the
    message of a failed cell and the reason a notebook was not graded)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
        CsvExportPlugin(to=str(out / "grades.csv")).export(gb)
    with open(out / "scores_by_exercise.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", "assignment_id", "notebook_id", "grade_id", "score",
                         "max_score", "message", "problem"])
        for g in grades:
            for grade_id, (score, max_score) in g.scores.items():
                writer.writerow([g.student_id, g.assignment_id, g.notebook_id, grade_id,
                                 f"{score:g}", f"{max_score:g}", g.messages.get(grade_id, ""),
                                 g.problem or ""])


def score_table(grades: list[NotebookGrade]) -> str:
    """A plain-text table per assignment: one row per student, one column per graded cell
    (``score/max``), the total, and the problem of a notebook that was not graded; then the
    message of every failed cell."""
    lines = []
    for assignment_id in sorted({g.assignment_id for g in grades}):
        rows = [g for g in grades if g.assignment_id == assignment_id]
        cells = list(dict.fromkeys(cid for g in rows for cid in g.scores))
        header = ["student"] + [c.removeprefix("test_") for c in cells] + ["total"]
        table = [header]
        for g in sorted(rows, key=lambda g: (g.student_id, g.notebook_id)):
            row = [g.student_id]
            row += [f"{g.scores[c][0]:g}/{g.scores[c][1]:g}" if c in g.scores else "-"
                    for c in cells]
            row.append(f"{g.score:g}/{g.max_score:g}")
            if g.problem:
                row.append(g.problem)
            table.append(row)
        widths = [max(len(r[i]) for r in table if i < len(r)) for i in range(len(header))]
        lines.append(f"\n== {assignment_id}")
        for row in table:
            lines.append("  ".join(cell.ljust(widths[i]) if i < len(widths) else cell
                                   for i, cell in enumerate(row)).rstrip())
        failures = [(g.student_id, cid, msg) for g in sorted(rows, key=lambda g: g.student_id)
                    for cid, msg in g.messages.items()]
        if failures:
            lines.append("  why points were lost:")
            for student_id, cid, msg in failures:
                lines.append(f"    {student_id} / {cid}: {_clip(msg, 160)}")
    return "\n".join(lines).lstrip("\n")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"
