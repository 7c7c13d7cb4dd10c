"""What a grading run gives the instructor: a score table, CSV exports, messages.

Every text here reaches its file or the terminal through :mod:`.report_text`: the text functions
return :func:`~.report_text.render` of their lines, the CSVs are written by
:func:`~.report_text.write_csv`, so a string from a submission is escaped wherever it goes.
"""
from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

from autograder.checks.judge import FINDINGS
from autograder.grading.failures import Outcome
from autograder.grading.intake.student_ids import read_ids
from autograder.grading.layout import OutputLayout
from autograder.grading.report_text import printable, render, write_csv
from autograder.grading.run.plots import write_plots
from autograder.grading.run.results import NotebookGrade


def write_exports(config, grades: list[NotebookGrade], layout: OutputLayout) -> None:
    """Write ``<out>/grades.csv`` and ``<out>/scores_by_exercise.csv``.

    ``grades.csv`` is nbgrader's CSV export (one row per student and assignment; its scores
    include the manual scores given in the formgrader), its columns first and unchanged, then
    ``folder`` (the student's folder as submitted) and ``status`` (:attr:`.NotebookGrade.status`
    of its notebooks: graded, needs manual grading, not submitted, unreadable, kernel died...).
    ``scores_by_exercise.csv`` has one row per student, notebook and graded cell: the folder, the
    cell's status (its score empty while it needs manual grading), the message of a failed cell
    and the reason a notebook was not graded. No cell of either starts a spreadsheet formula
    (:func:`~.report_text.csv_cell`)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
        CsvExportPlugin(to=str(layout.grades_csv)).export(gb)
        recorded = {(s.assignment.name, s.student.id) for a in gb.assignments
                    for s in a.submissions}
    _extend_grades_csv(layout, grades, recorded)
    write_csv(layout.scores_csv,
              ["student_id", "folder", "assignment_id", "notebook_id", "grade_id", "score",
               "max_score", "status", "message", "problem", "restored_cells", "notes",
               "failed_steps", "needs_review"],
              ([g.student_id, g.folder or g.student_id, g.assignment_id, g.notebook_id, grade_id,
                "" if grade_id in g.pending else f"{score:g}", f"{max_score:g}",
                g.cell_status(grade_id), g.messages.get(grade_id, ""), g.problem or "",
                "; ".join(g.restored), "; ".join(g.notes), "; ".join(g.failures),
                "; ".join(g.review)]
               for g in grades for grade_id, (score, max_score) in g.scores.items()))


def _extend_grades_csv(layout: OutputLayout, grades: list[NotebookGrade],
                       recorded: set[tuple[str, str]]) -> None:
    """Add ``folder`` and ``status`` to each row of nbgrader's ``grades.csv`` and write it again
    through :func:`~.report_text.write_csv`. A row this run has no grade for is "graded" when
    the gradebook holds its submission (an earlier run's), else "not submitted"; its folder comes
    from ``student_ids.csv``."""
    with open(layout.grades_csv, newline="", encoding="utf-8", errors="surrogateescape") as handle:
        header, *rows = list(csv.reader(handle)) or [[]]
    try:
        folders = {i: name for name, i in read_ids(layout.student_ids).items()}
    except ValueError:  # no mapping yet (or refused by this run already): the ids stand alone
        folders = {}
    statuses: dict[tuple[str, str], list[str]] = {}
    for g in grades:
        folders[g.student_id] = g.folder or g.student_id
        statuses.setdefault((g.assignment_id, g.student_id), []).append(g.status)
    at, sid = header.index("assignment"), header.index("student_id")  # nbgrader's columns

    def extra(row: list[str]) -> list[str]:
        key = (row[at], row[sid]) if len(row) > max(at, sid) else ("", "")
        status = statuses.get(key) or ["graded" if key in recorded else "not submitted"]
        return [folders.get(key[1], key[1]), "; ".join(dict.fromkeys(status))]

    write_csv(layout.grades_csv, header + ["folder", "status"], (row + extra(row) for row in rows))


def _who(g: NotebookGrade) -> str:
    """The student of ``g`` as the reports name them: the id, and the folder when it differs."""
    return f"{g.student_id} (folder '{g.folder}')" if _own_folder(g) else g.student_id


def _own_folder(g: NotebookGrade) -> bool:
    """Whether the folder of ``g`` is named otherwise than its student id (as reports show both)."""
    return printable(g.folder) not in ("", g.student_id)


def score_table(grades: list[NotebookGrade]) -> str:
    """A plain-text table per assignment: one row per student (and the student's folder, in a
    column of its own where a folder's name is not its id), one column per graded cell in the
    order of the notebook (``score/max``; ``?/max`` for a cell that needs manual grading, named
    at the end of the row), the total, and the problem of a notebook that was not graded; then
    the message of every failed cell."""
    lines = []
    for assignment_id in sorted({g.assignment_id for g in grades}):
        rows = [g for g in grades if g.assignment_id == assignment_id]
        cells = list(dict.fromkeys(cid for g in rows for cid in g.scores))
        folders = any(_own_folder(g) for g in rows)
        header = ["student"] + ["folder"] * folders + [c.removeprefix("test_") for c in cells] + \
            ["total"]
        table = [header]
        for g in sorted(rows, key=lambda g: (g.student_id, g.notebook_id)):
            row = [g.student_id] + [g.folder or g.student_id] * folders
            row += [("?" if c in g.pending else f"{g.scores[c][0]:g}") + f"/{g.scores[c][1]:g}"
                    if c in g.scores else "-" for c in cells]
            row.append(f"{g.score:g}/{g.max_score:g}")
            if g.problem:
                row.append(g.problem)
            if g.pending:
                points = sum(g.scores[c][1] for c in g.pending if c in g.scores)
                row.append(f"needs manual grading in the formgrader: {', '.join(g.pending)} "
                           f"({points:g} point{'s' if points != 1 else ''})")
            if g.restored:
                row.append("restored from the source: " + ", ".join(g.restored))
            row += g.notes
            row += [f for f in g.failures if not g.problem or g.problem not in f]
            if g.review:
                row.append(f"NEEDS REVIEW ({len(g.review)} flag{'s' if len(g.review) > 1 else ''})")
            table.append(row)
        table = [[printable(cell) for cell in row] for row in table]  # widths of what is shown
        widths = [max(len(r[i]) for r in table if i < len(r)) for i in range(len(header))]
        lines += ["", f"== {assignment_id}"]  # render escapes a newline inside a line
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
    late = late_lines(grades)
    return render(lines + ([""] + late if late else [])).lstrip("\n")


def _clip(text: str, width: int) -> str:
    text = printable(text)  # clipped as shown, never inside an escape's expansion
    return text if len(text) <= width else text[: width - 1] + "\u2026"


NOT_SANDBOXED = ("NOT SANDBOXED: this run's kernels ran as the grader's user with the machine in "
                 "view (--no-sandbox); a submission could have read or changed other files.")


def class_summary(grades: list[NotebookGrade], top: int = 10, sandboxed: bool = True,
                  analysis: list[str] = ()) -> str:
    """What the class got wrong: how many notebooks ended how (:func:`notebook_counts`); per
    automatically graded cell, in notebook order, the share of graded notebooks that passed it;
    the cells graded by hand apart, with how many wait for manual grading; the ``top`` failure
    messages given most often (mistake ids group alike messages); who submitted nothing, per
    assignment. A run whose kernels were not sandboxed says so first."""
    graded = [g for g in grades if g.executed]
    lines = [] if sandboxed else [NOT_SANDBOXED]
    lines.append(notebook_counts(grades))
    rates = cell_rates(graded)
    automatic = [(key, rate) for key, rate in rates.items() if not rate[3]]
    by_hand = [(key, rate) for key, rate in rates.items() if rate[3]]
    lines.append("Pass rate per exercise (notebooks that were graded" +
                 ("; cells graded by hand below" if by_hand else "") + "):")
    labels = [printable(f"{a} / {cell.removeprefix('test_')}") for (a, cell), _ in rates.items()]
    width = max(map(len, labels), default=0)
    for (a, cell), (passed, total, _, _) in automatic:
        label = printable(f"{a} / {cell.removeprefix('test_')}")
        lines.append(f"  {label:<{width}}  {passed:>3}/{total:<3} {100 * passed / total:5.1f}%")
    if by_hand:
        lines.append("Graded by hand (not in the pass rates above; grade them in the formgrader):")
    for (a, cell), (passed, total, pending, _) in by_hand:
        label = printable(f"{a} / {cell}")
        lines.append(f"  {label:<{width}}  {total:>3} graded ({passed} with full points), "
                     f"{pending} need{'s' if pending == 1 else ''} manual grading")
    counts = Counter(_message_kind(m) for g in graded for m in g.messages.values())
    if counts:
        lines.append(f"Most frequent reasons for lost points (top {top}):")
        for kind, n in counts.most_common(top):
            lines.append(f"  {n:>3} x {kind}")
    lines += analysis  # mistakes per exercise, similar answers (autograder.grading.analysis)
    lines += _submitted_nothing(grades)
    invalid = [g for g in grades if not g.executed]
    if invalid:
        lines.append("Not graded:")
        lines += [f"  {_who(g)} / {g.assignment_id}: {g.problem}" for g in invalid]
    flagged = [g for g in grades if g.review]
    if flagged:
        lines.append("Needs review (tamper evidence; scores unchanged):")
        lines += [f"  {_who(g)} / {g.assignment_id}: {flag}" for g in flagged for flag in g.review]
    lines += late_lines(grades)
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
            lines.append(f"  {_who(g)} / {g.assignment_id}: {'; '.join(reasons)}")
    return [printable(line) for line in ["Needs attention (not graded, or a step failed):"] + lines] \
        if lines else []


def notebook_counts(grades: list[NotebookGrade], graded_now: set[str] | None = None) -> str:
    """How many notebooks ended how, each notebook counted once: ``"6 notebooks (4 graded, 1
    not submitted, 1 unreadable); 1 of the graded needs manual grading"``. With ``graded_now``
    (the ``student/assignment`` keys graded in this run, :attr:`.GradeRun.timings`), the graded
    ones are split into "graded now" and "unchanged since the last run"."""
    outcomes = Counter(g.outcome for g in grades)
    parts = [f"{outcomes[o]} {o.value.replace('_', ' ')}" for o in Outcome
             if outcomes[o] and (o is not Outcome.GRADED or graded_now is None)]
    if graded_now is not None:
        now = sum(g.outcome is Outcome.GRADED and f"{g.student_id}/{g.assignment_id}" in graded_now
                  for g in grades)
        parts[:0] = [f"{now} graded now", f"{outcomes[Outcome.GRADED] - now} unchanged since the "
                     "last run"]
    manual = sum(g.status == "needs manual grading" for g in grades)
    return (f"{len(grades)} notebook{'s' if len(grades) != 1 else ''} ({', '.join(parts)})" +
            (f"; {manual} of the graded need{'s' if manual == 1 else ''} manual grading"
             if manual else ""))


def _submitted_nothing(grades: list[NotebookGrade]) -> list[str]:
    """Per assignment, the students of the class (those with a grade) without a notebook of it:
    no folder for it, or none of its notebooks in the folder; under a heading."""
    students = {g.student_id: g for g in grades}
    lines = []
    for assignment_id in sorted({g.assignment_id for g in grades}):
        sent = {g.student_id for g in grades
                if g.assignment_id == assignment_id and g.outcome is not Outcome.NOT_SUBMITTED}
        nothing = [_who(students[s]) for s in sorted(students.keys() - sent)]
        if nothing:
            lines.append(f"  {assignment_id} ({len(nothing)}): {', '.join(nothing)}")
    return ["Submitted nothing:"] + lines if lines else []


def late_lines(grades: list[NotebookGrade]) -> list[str]:
    """One line per submission made after its assignment's due date, under a heading: how late
    (days, hours, minutes), the points nbgrader's late-penalty plugin took off and the score
    after it (each line :func:`~.report_text.printable`); no lines when none was late."""
    late: dict[tuple[str, str], list[float]] = {}
    for g in grades:
        if g.seconds_late > 0:
            entry = late.setdefault((g.student_id, g.assignment_id), [g.seconds_late, 0, 0, 0])
            entry[1:] = [entry[1] + g.late_penalty, entry[2] + g.score, entry[3] + g.max_score]
    lines = []
    for (student_id, assignment_id), (seconds, penalty, score, max_score) in sorted(late.items()):
        minutes = round(seconds / 60)
        when = " ".join(f"{n} {unit}" for n, unit in ((minutes // 1440, "d"),
                        (minutes // 60 % 24, "h"), (minutes % 60, "min")) if n) or "under 1 min"
        lines.append(f"  {student_id} / {assignment_id}: {when} late, late penalty {penalty:g} "
                     f"(score {max(0.0, score - penalty):g}/{max_score:g} after it)")
    return [printable(line) for line in ["Late (submitted after the due date):"] + lines] \
        if lines else []


def cell_rates(grades: list[NotebookGrade]) -> dict[tuple[str, str], tuple[int, int, int, bool]]:
    """(assignment_id, grade_id) -> (notebooks with full points on that cell, notebooks with a
    score for it, notebooks where it waits for manual grading, whether it is graded by hand), in
    the order of the assignments, then of the cells in their notebooks (as ``scores`` holds them)."""
    rates: dict[tuple[str, str], list] = {}
    for g in grades:
        for cell, (score, max_score) in g.scores.items():
            entry = rates.setdefault((g.assignment_id, cell), [0, 0, 0, False])
            entry[3] = entry[3] or cell in g.manual
            if cell in g.pending:
                entry[2] += 1
            else:
                entry[0] += score >= max_score
                entry[1] += 1
    return {key: tuple(rates[key]) for key in sorted(rates, key=lambda key: key[0])}


#: Reason groups for unanswered work, whatever the exercise: the answer cell's stub, and a check
#: that needs a name an unanswered (or unrun) answer cell did not define.
NOT_ANSWERED_KIND = "exercise not answered (NotImplementedError)"
NOT_DEFINED_KIND = "a name the check needs is not defined (an answer cell not answered or not run)"
#: The fixed words of that finding's message, between the call and the name (judge.FINDINGS).
_NOT_DEFINED_TEXT = FINDINGS["not_defined"][0].split("{what} ", 1)[1].split(" ({type})", 1)[0]


def _message_kind(message: str) -> str:
    """Group a failure message: by its mistake id when it names one, unanswered work as one of
    two kinds whatever the exercise and name, else by its first words."""
    match = re.search(r"\[(M\d+): ([^\]]+)\]", message)
    if match:
        return f"{match.group(1)}: {match.group(2)}"
    if "NotImplementedError" in message or "not written yet" in message:
        return NOT_ANSWERED_KIND
    if _NOT_DEFINED_TEXT in message:
        return NOT_DEFINED_KIND
    return _clip(message, 90)


def write_summary(grades: list[NotebookGrade], layout: OutputLayout,
                  sandboxed: bool = True, analysis: list[str] = ()) -> list[Path]:
    """Write ``summary.txt`` (:func:`class_summary`), ``score_histogram.png`` and
    ``pass_rates.png`` (:func:`~.run.plots.write_plots`) into the output folder; returns their
    paths. ``analysis``: lines placed after the reasons for lost points (each made printable)."""
    layout.summary.write_text(class_summary(grades, sandboxed=sandboxed, analysis=list(analysis)) + "\n")
    return [layout.summary, *write_plots(grades, cell_rates([g for g in grades if g.executed]),
                                         layout)]
