"""What a grading run gives the instructor: a score table, CSV exports, messages.

Every text here reaches its file or the terminal through :mod:`.report_text`: the text functions
return :func:`~.report_text.render` of their lines, the CSVs are written by
:func:`~.report_text.write_csv`, so a string from a submission is escaped wherever it goes.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from autograder.grading.failures import Outcome
from autograder.grading.layout import OutputLayout
from autograder.grading.report_text import printable, render, rewrite_csv, write_csv
from autograder.grading.run.results import NotebookGrade


def write_exports(config, grades: list[NotebookGrade], layout: OutputLayout) -> None:
    """Write ``<out>/grades.csv`` (nbgrader's CSV export: one row per student and assignment,
    then rewritten with its cells escaped) and ``<out>/scores_by_exercise.csv`` (one row per
    student, notebook and graded cell, with the message of a failed cell and the reason a notebook
    was not graded). No cell of either starts a spreadsheet formula (:func:`~.report_text.csv_cell`)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
        CsvExportPlugin(to=str(layout.grades_csv)).export(gb)
    rewrite_csv(layout.grades_csv)
    write_csv(layout.scores_csv,
              ["student_id", "assignment_id", "notebook_id", "grade_id", "score", "max_score",
               "message", "problem", "restored_cells", "notes", "failed_steps", "needs_review"],
              ([g.student_id, g.assignment_id, g.notebook_id, grade_id, f"{score:g}",
                f"{max_score:g}", g.messages.get(grade_id, ""), g.problem or "",
                "; ".join(g.restored), "; ".join(g.notes), "; ".join(g.failures),
                "; ".join(g.review)]
               for g in grades for grade_id, (score, max_score) in g.scores.items()))


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
            if g.restored:
                row.append("restored from the source: " + ", ".join(g.restored))
            row += g.notes
            row += [f for f in g.failures if not g.problem or g.problem not in f]
            if g.review:
                row.append(f"NEEDS REVIEW ({len(g.review)} flag{'s' if len(g.review) > 1 else ''})")
            table.append(row)
        table = [[printable(cell) for cell in row] for row in table]  # widths of what is shown
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
        flagged = [g for g in sorted(rows, key=lambda g: g.student_id) if g.review]
        if flagged:
            lines.append("  needs review (the score stands until you decide; see the notebook "
                         "in autograded/):")
            for g in flagged:
                lines += [f"    {g.student_id}: {_clip(flag, 160)}" for flag in g.review]
    return render(lines).lstrip("\n")


def _clip(text: str, width: int) -> str:
    text = printable(text)  # clipped as shown, never inside an escape's expansion
    return text if len(text) <= width else text[: width - 1] + "\u2026"


NOT_SANDBOXED = ("NOT SANDBOXED: this run's kernels ran as the grader's user with the machine in "
                 "view (--no-sandbox); a submission could have read or changed other files.")


def class_summary(grades: list[NotebookGrade], top: int = 10, sandboxed: bool = True) -> str:
    """What the class got wrong: per graded cell, the share of graded notebooks that passed it,
    then the ``top`` failure messages given most often (mistake ids group alike messages).
    A run whose kernels were not sandboxed says so first."""
    graded = [g for g in grades if g.executed]
    lines = [] if sandboxed else [NOT_SANDBOXED]
    outcomes = Counter(g.outcome for g in grades)
    lines.append(f"Notebooks: {len(grades)} (" + ", ".join(
        f"{outcomes[o]} {o.value.replace('_', ' ')}" for o in Outcome if outcomes[o]) + ")")
    lines.append("Pass rate per exercise (notebooks that were graded):")
    rates = sorted(pass_rates(graded).items())
    labels = [printable(f"{a} / {cell.removeprefix('test_')}") for (a, cell), _ in rates]
    width = max(map(len, labels), default=0)
    for label, (_, (passed, total)) in zip(labels, rates):
        lines.append(f"  {label:<{width}}  {passed:>3}/{total:<3} {100 * passed / total:5.1f}%")
    counts = Counter(_message_kind(m) for g in graded for m in g.messages.values())
    if counts:
        lines.append(f"Most frequent reasons for lost points (top {top}):")
        for kind, n in counts.most_common(top):
            lines.append(f"  {n:>3} x {kind}")
    invalid = [g for g in grades if not g.executed]
    if invalid:
        lines.append("Not graded:")
        lines += [f"  {g.student_id} / {g.assignment_id}: {g.problem}" for g in invalid]
    flagged = [g for g in grades if g.review]
    if flagged:
        lines.append("Needs review (tamper evidence; scores unchanged):")
        lines += [f"  {g.student_id} / {g.assignment_id}: {flag}" for g in flagged for flag in g.review]
    lines += attention_lines(grades)
    return render(lines)


def attention_lines(grades: list[NotebookGrade]) -> list[str]:
    """One line per submission that was not (fully) graded or had a failed step, with the reason,
    under a heading (each line :func:`~.report_text.printable`); no lines when every submission
    went through."""
    lines = []
    for g in sorted(grades, key=lambda g: (g.student_id, g.assignment_id)):
        reasons = ([g.problem] if g.problem else []) + \
            [f for f in g.failures if not g.problem or g.problem not in f]
        if reasons:
            lines.append(f"  {g.student_id} / {g.assignment_id}: {'; '.join(reasons)}")
    return [printable(line) for line in ["Needs attention (not graded, or a step failed):"] + lines] \
        if lines else []


def pass_rates(grades: list[NotebookGrade]) -> dict[tuple[str, str], tuple[int, int]]:
    """(assignment_id, grade_id) -> (notebooks with full points on that cell, notebooks)."""
    rates: dict[tuple[str, str], list[int]] = {}
    for g in grades:
        for cell, (score, max_score) in g.scores.items():
            entry = rates.setdefault((g.assignment_id, cell), [0, 0])
            entry[0] += score >= max_score
            entry[1] += 1
    return {key: (p, t) for key, (p, t) in rates.items()}


def _message_kind(message: str) -> str:
    """Group a failure message: by its mistake id when it names one, else by its first words."""
    match = re.search(r"\[(M\d\d): ([^\]]+)\]", message)
    if match:
        return f"{match.group(1)}: {match.group(2)}"
    if "NotImplementedError" in message or "not written yet" in message:
        return "exercise not answered (NotImplementedError)"
    return _clip(message, 90)


def write_summary(grades: list[NotebookGrade], layout: OutputLayout,
                  sandboxed: bool = True) -> list[Path]:
    """Write ``summary.txt`` (:func:`class_summary`), ``score_histogram.png`` (share of points per
    student and assignment) and ``pass_rates.png`` (pass rate per exercise) into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (layout.summary).write_text(class_summary(grades, sandboxed=sandboxed) + "\n")
    histogram, pass_rates_png = layout.plots
    graded = [g for g in grades if g.max_score]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist([100 * g.score / g.max_score for g in graded], bins=10, range=(0, 100),
            color="#4c72b0", edgecolor="white")
    ax.set(xlabel="score (% of the notebook's points)", ylabel="notebooks",
           title="Score distribution")
    fig.tight_layout()
    fig.savefig(histogram, dpi=120)
    plt.close(fig)

    rates = sorted(pass_rates([g for g in grades if g.executed]).items())
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(rates) + 1.2))
    labels = [f"{a.split('_')[0]} {c.removeprefix('test_')}" for (a, c), _ in rates]
    ax.barh(labels, [100 * p / t for _, (p, t) in rates], color="#55a868")
    ax.invert_yaxis()
    ax.set(xlim=(0, 100), xlabel="notebooks passing (%)", title="Pass rate per exercise")
    fig.tight_layout()
    fig.savefig(pass_rates_png, dpi=120)
    plt.close(fig)
    return [layout.summary, histogram, pass_rates_png]
