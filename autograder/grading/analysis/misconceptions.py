"""What the class misunderstands, per exercise: how many students made each catalogued mistake.

A check that recognises a mistake opens its message with the mistake's id and short name from
the course's catalogue (:data:`autograder.checks.mistakes.MISTAKES`); the grader keeps the first
line of a failed graded cell's error as ``NotebookGrade.messages[grade_id]``, for example
``CheckFailed: [M01: unwatched tf.constant] square_grad (input 3.0) returned None ...``.
:func:`mistake_counts` counts, per assignment, graded cell and mistake id, the students whose
message for that cell opens with that id; :func:`summary_lines`, :func:`write_csv` and
:func:`plot` are its lines for ``summary.txt``, ``mistakes_by_exercise.csv`` and a PNG.

What is counted, and why:

- Only the mistake that opens the message (``CheckFailed: [Mxx: ...]`` at its start): that is the
  check's diagnosis of the cell. An id later in the message is not: the M19 note the grader
  appends to every failed cell of a notebook that left ``run_functions_eagerly(True)`` on is about
  the notebook, not the exercise, and a value echoed from the student's code (``got '[M01: ...]'``)
  is the student's text.
- Only ids of the catalogue, and always under the catalogue's name. A message is untrusted text
  (it can echo what a submission chose); the id is the only thing read from it. An id the
  catalogue does not hold is **not counted** (no "unknown" row): ``CheckFailed`` refuses such an
  id (``KeyError``), so no check of this course can have written it; it comes from a submission's
  own text or another version of the catalogue, and an "unknown" row would be a line of the
  instructor's report made of what a student chose, lumping unrelated things together. Such a
  message still shows (escaped) among the most frequent reasons of ``summary.txt``.
- Only notebooks whose :class:`~autograder.grading.failures.Outcome` is ``GRADED`` (every cell
  ran), for the students and the notebooks graded alike, so that a share is at most 1: a notebook
  whose kernel died is in neither.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder.checks.mistakes import MISTAKES
from autograder.grading.failures import Outcome
from autograder.grading.report_text import printable, write_csv as _write_rows
from autograder.grading.run.results import NotebookGrade

CSV_HEADER = ["assignment_id", "grade_id", "mistake_id", "mistake_name", "students", "graded", "share"]
HEADING = "Mistakes per exercise (catalogued; students / notebooks graded):"

# The mistake that opens a failure message: the grader writes "<ename>: <evalue>", and a check's
# evalue starts with "[Mxx: short name]".
_OPENING = re.compile(r"CheckFailed: \[(M\d+):")


@dataclass(frozen=True)
class MistakeCount:
    """One row: in assignment ``assignment_id``, graded cell ``grade_id`` (as nbgrader names it,
    ``test_square_grad``), ``students`` distinct students whose failure message for that cell
    opens with catalogued mistake ``mistake_id`` (``"M01"``), of ``graded`` students whose
    notebook of that assignment was graded (``Outcome.GRADED``) and holds that cell.
    ``mistake_name`` is the catalogue's short name for the id, never the message's.
    """
    assignment_id: str
    grade_id: str
    mistake_id: str
    mistake_name: str
    students: int
    graded: int

    @property
    def share(self) -> float:
        """``students / graded``, in 0..1."""
        return self.students / self.graded if self.graded else 0.0

    @property
    def exercise(self) -> str:
        """The cell's name as reports show it (``square_grad`` for ``test_square_grad``)."""
        return self.grade_id.removeprefix("test_")


def message_mistake(message) -> str | None:
    """The catalogued mistake id that opens a failure ``message`` (``"M01"``), else None: for no
    id, an id later in the message, an id the catalogue does not hold, or a message that is not a
    str."""
    if not isinstance(message, str):
        return None
    match = _OPENING.match(message.lstrip())
    return match.group(1) if match and match.group(1) in MISTAKES else None


def mistake_counts(grades: list[NotebookGrade],
                   cell_order: dict[str, list[str]] | None = None) -> list[MistakeCount]:
    """One :class:`MistakeCount` per (assignment_id, grade_id, mistake id) that at least one
    student made, from the ``messages`` of the graded notebooks of ``grades`` (see the module for
    what counts).

    ``graded`` is the number of distinct students with a graded notebook of that assignment
    holding that cell (in its ``scores`` or ``messages``): for an assignment of one notebook, its
    notebooks graded. ``cell_order`` (optional) maps an assignment id to its graded cells'
    grade_ids in release (notebook) order; cells it does not list come after, sorted; without it,
    cells are sorted. Rows are ordered by assignment id, then cell, then students (descending),
    then mistake id.
    """
    graded = [g for g in grades if g.outcome is Outcome.GRADED]
    holders: dict[tuple[str, str], set[str]] = {}  # (assignment, cell) -> students graded on it
    made: dict[tuple[str, str, str], set[str]] = {}  # (assignment, cell, id) -> students
    for g in graded:
        for grade_id in {*g.scores, *g.messages}:
            holders.setdefault((g.assignment_id, grade_id), set()).add(g.student_id)
        for grade_id, message in g.messages.items():
            mistake = message_mistake(message)
            if mistake:
                made.setdefault((g.assignment_id, grade_id, mistake), set()).add(g.student_id)
    rows = [MistakeCount(a, cell, mistake, MISTAKES[mistake], len(students), len(holders[a, cell]))
            for (a, cell, mistake), students in made.items()]
    order = cell_order or {}

    def key(row: MistakeCount):
        listed = list(order.get(row.assignment_id, []))
        place = (0, listed.index(row.grade_id), "") if row.grade_id in listed else (1, 0, row.grade_id)
        return row.assignment_id, place, -row.students, row.mistake_id

    return sorted(rows, key=key)


def _by_exercise(counts: list[MistakeCount]) -> dict[tuple[str, str], list[MistakeCount]]:
    """(assignment_id, grade_id) -> its rows, in the order of ``counts``."""
    cells: dict[tuple[str, str], list[MistakeCount]] = {}
    for row in counts:
        cells.setdefault((row.assignment_id, row.grade_id), []).append(row)
    return cells


def _percent(share: float) -> str:
    """A share (0..1) as a whole percent, halves rounded up (1/8 is ``13%``)."""
    return f"{int(100 * share + 0.5)}%"


def summary_lines(counts: list[MistakeCount]) -> list[str]:
    """Lines for ``summary.txt``: :data:`HEADING`, then one line per exercise in the order of
    ``counts`` (as :func:`mistake_counts` gives them), its mistakes as they come::

          01_gradient_tape / square_grad: 31% M01 unwatched tf.constant (5/16); 6% M02 ... (1/16)

    (share of the notebooks graded as a whole percent, halves up; id; catalogue name; students /
    notebooks graded).
    Every line is :func:`~autograder.grading.report_text.printable`. No lines when no catalogued
    mistake was found."""
    if not counts:
        return []
    lines = [HEADING]
    for (assignment_id, _), rows in _by_exercise(counts).items():
        found = "; ".join(f"{_percent(r.share)} {r.mistake_id} {r.mistake_name} ({r.students}/{r.graded})"
                          for r in rows)
        lines.append(f"  {assignment_id} / {rows[0].exercise}: {found}")
    return [printable(line) for line in lines]


def write_csv(counts: list[MistakeCount], path: Path) -> Path:
    """Write ``mistakes_by_exercise.csv`` at ``path``: :data:`CSV_HEADER`, then one row per
    :class:`MistakeCount` in the order given (``share`` in 0..1, four decimals), every cell
    through :func:`~autograder.grading.report_text.write_csv`. Returns ``path``."""
    _write_rows(Path(path), CSV_HEADER,
                ([r.assignment_id, r.grade_id, r.mistake_id, r.mistake_name, r.students, r.graded,
                  f"{r.share:.4f}"] for r in counts))
    return Path(path)


def _label(text: str) -> str:
    """A string as matplotlib shows it literally: one printable line, ``$`` not read as math."""
    return printable(text).replace("$", r"\$")


def plot(counts: list[MistakeCount], path: Path) -> Path:
    """Write a PNG at ``path``: one horizontal bar per exercise (top to bottom in the order of
    ``counts``, labelled ``01 square_grad``), stacked segments per mistake, each segment as long
    as its share (x axis: % of that exercise's notebooks graded) and coloured by its id (the same
    colour for an id in every plot); beside each bar its segments' ids and shares in order and its
    count of notebooks graded (``M01 31%, M03 6%   n=16``), an id inside a segment wide enough
    for it; the legend below gives the catalogue's names. A figure that says so when ``counts``
    is empty. Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = list(_by_exercise(counts).items())
    ids = sorted({r.mistake_id for r in counts})
    palette = [*plt.get_cmap("tab20").colors, *plt.get_cmap("tab20b").colors]
    catalogue = list(MISTAKES)
    colours = {m: palette[catalogue.index(m) % len(palette)] for m in ids}
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(cells) + 1.5))
    if not cells:
        ax.text(0.5, 0.5, "No catalogued mistake in the graded notebooks", ha="center", va="center")
        ax.set_axis_off()
    widest = 100.0
    for y, (_, rows) in enumerate(cells):
        left = 0.0
        for r in rows:
            width = 100 * r.share
            ax.barh(y, width, left=left, color=colours[r.mistake_id], edgecolor="white")
            if width >= 8:
                ax.text(left + width / 2, y, r.mistake_id, ha="center", va="center", fontsize=7)
            left += width
        widest = max(widest, left)
        shares = ", ".join(f"{r.mistake_id} {_percent(r.share)}" for r in rows)
        ax.text(left + 1, y, f"{shares}   n={rows[0].graded}", va="center", fontsize=7, clip_on=False)
    if cells:
        ax.set_yticks(range(len(cells)))
        ax.set_yticklabels([_label(f"{a.split('_')[0]} {rows[0].exercise}") for (a, _), rows in cells])
        ax.set_ylim(len(cells) - 0.5, -0.5)  # the first exercise on top
        ax.set(xlim=(0, widest), xlabel="students who made the mistake (% of notebooks graded)",
               title="Catalogued mistakes per exercise")
    fig.tight_layout()
    if cells:  # below the figure tight_layout made (savefig's tight box takes it in)
        handles = [plt.Rectangle((0, 0), 1, 1, color=colours[m]) for m in ids]
        fig.legend(handles, [_label(f"{m}: {MISTAKES[m]}") for m in ids], fontsize=7, ncol=2,
                   loc="upper center", bbox_to_anchor=(0.5, 0), frameon=False)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return Path(path)
