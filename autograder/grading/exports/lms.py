"""A gradebook as the grade import CSV of Canvas and of Moodle: one row per student, one column
per assignment, each cell the assignment's total score in points (rounded to 0.01) with the late
penalty nbgrader recorded taken off, as nbgrader's own ``grades.csv`` computes it:
``max(0, score - late_submission_penalty)`` (``Submission.score`` is the sum of the grades and does
not include the penalty). A student with no submission of an assignment in the gradebook gets an
empty cell ("no grade"), except where ``grades.csv`` of ``course grade`` (the plugins' ``grades_csv``,
given by :func:`write_lms_exports`) says the student submitted it: a submission whose notebooks
could not be read ("unreadable"), or that failed before nbgrader recorded it, scores 0 there and
here. So the LMS files score every submission as ``grades.csv`` does, and an empty cell is left
only for "not submitted" and for "grader failed" with no earlier grade in the gradebook (the
grader's own failure, never the student's grade: the next run grades it again).

Both are nbgrader export plugins (``nbgrader export --exporter
autograder.grading.exports.lms.CanvasExportPlugin --to canvas_grades.csv``; ``--student`` and
``--assignment`` select as for nbgrader's CSV), and :func:`write_lms_exports` writes both files.
Every cell, a student's id or name included, goes through :func:`report_text.write_csv`, so none
starts a spreadsheet formula.

**Canvas** (``canvas_grades.csv``), the columns of Canvas's Gradebook import
(https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807,
read by https://github.com/instructure/canvas-lms/blob/master/app/models/gradebook_importer.rb):

- ``Student``: "Last, First" (Canvas's sortable name), or the one name nbgrader has, else the
  nbgrader student id.
- ``ID``: Canvas's numeric user id, from nbgrader's ``lms_user_id`` when that is a whole number;
  empty otherwise (Canvas reads the column as an integer, so "5a3f..." would select user 5).
- ``SIS User ID``: empty (nbgrader has no such field).
- ``SIS Login ID``: the nbgrader student id (the JupyterHub user name, often the login).
- ``Section``: empty.
- one column per assignment, headed by the nbgrader assignment name: Canvas updates the assignment
  of that exact name (or of "Name (canvas id)") and offers to create the others.
- the second row is ``Points Possible``: each assignment's maximum score, in points (Canvas gives
  the assignments it creates these points).

Canvas matches a row on ``ID``, then ``SIS User ID``, then ``SIS Login ID``, then ``Student``;
nothing to choose at import, and the rows it cannot match are listed on its review page. An empty
cell leaves the student ungraded, and removes a grade already in Canvas for that assignment.

**Moodle** (``moodle_grades.csv``), for "Import grades from CSV"
(https://docs.moodle.org/en/Grade_import, read by
https://github.com/moodle/moodle/blob/main/grade/import/csv/classes/load_data.php), which asks at
import which column identifies the user ("Map from") and as what ("Map to": userid, username,
useridnumber, useremail), and which grade item each column goes to:

- ``Username``: the nbgrader student id; map it to ``username``.
- ``First name``, ``Last name``: for the instructor to read.
- ``Email address``: only when every exported student has one; map it to ``useremail``.
- ``LMS user ID``: nbgrader's ``lms_user_id``, only when every exported student has one; map it
  to ``userid`` when it is Moodle's user id (what Moodle's LTI launches send).
- one column per assignment, headed by the nbgrader assignment name: map each to its grade item,
  or to a new grade item, whose maximum grade should be the assignment's points.

There is no points row: Moodle reads every row after the header as a student. An identifying
column is only written full, because Moodle gives the grades of a row whose identifier is empty to
the row before it; a row it cannot match aborts the whole import. An empty cell is "no grade", and
removes a grade already in Moodle for that item.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import ExportPlugin
from traitlets import Unicode

from autograder.grading.layout import OutputLayout
from autograder.grading.report_text import csv_cell, write_csv


def _points(value: float) -> str:
    """A score in points, rounded to 0.01, without trailing zeros: ``7.5``, ``10``."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


class _LmsExportPlugin(ExportPlugin):
    """The gradebook as one table: :meth:`table` gives the header and the rows."""

    default_file = ""
    grades_csv = Unicode("", help="the grades.csv of a course grade run (its status column): "
                         "a submission it names that the gradebook does not hold scores 0, as "
                         "there, unless its status is 'not submitted' or 'grader failed'; empty: "
                         "every submission the gradebook does not hold is left empty").tag(
                             config=True)

    def export(self, gradebook: Gradebook) -> None:
        dest = Path(self.to or self.default_file)
        wanted_students = {str(s) for s in self.student}
        wanted_assignments = {str(a) for a in self.assignment}
        assignments = [a for a in gradebook.assignments
                       if not wanted_assignments or a.name in wanted_assignments]
        students = sorted((s for s in gradebook.students if not wanted_students or s.id in wanted_students),
                          key=lambda s: (s.last_name or "", s.first_name or "", s.id))
        scores = {}  # (assignment name, student id) -> points, late penalty taken off
        for assignment in assignments:
            for submission in assignment.submissions:
                scores[assignment.name, submission.student_id] = max(
                    0.0, submission.score - submission.late_submission_penalty)
        scored = submitted_unrecorded(Path(self.grades_csv)) if self.grades_csv else set()
        for assignment in assignments:
            for student in students:
                key = (assignment.name, student.id)
                if key not in scores and (csv_cell(key[0]), csv_cell(key[1])) in scored:
                    scores[key] = 0.0  # grades.csv's 0 for a submission it could not grade
        header, rows = self.table(assignments, students, scores)
        self.log.info("Exporting grades to %s", dest)
        write_csv(dest, header, rows)

    def table(self, assignments, students, scores) -> tuple[list[str], list[list[str]]]:
        raise NotImplementedError

    @staticmethod
    def _grades(assignments, student, scores) -> list[str]:
        return [_points(scores[a.name, student.id]) if (a.name, student.id) in scores else ""
                for a in assignments]


def submitted_unrecorded(grades_csv: Path) -> set[tuple[str, str]]:
    """The ``(assignment, student_id)`` of each row of ``grades.csv`` (as written: each cell
    through :func:`~.report_text.csv_cell`) whose ``status`` (one per notebook, joined by "; ")
    is neither only "not submitted" nor holds "grader failed" (no grade by design: the grader's
    failure, graded again by the next run): the submissions it scores, 0 where the gradebook holds
    none. A file that is missing or has no ``status`` column last gives none.

    Args:
        grades_csv: the file ``course grade`` writes (:attr:`.layout.OutputLayout.grades_csv`).
    Returns:
        the keys, as their cells are written in the file.
    """
    try:
        with open(grades_csv, newline="", encoding="utf-8", errors="replace") as handle:
            header, *rows = list(csv.reader(handle)) or [[]]
    except OSError:
        return set()
    if header[-1:] != ["status"] or not {"assignment", "student_id"} <= set(header):
        return set()
    # Columns before the names and the last one: nbgrader's cells are not quoted, so a comma in a
    # name shifts the columns between them.
    at, sid = header.index("assignment"), header.index("student_id")
    keys = set()
    for row in rows:
        if len(row) < len(header):
            continue
        statuses = set(row[-1].split("; "))
        if "grader failed" not in statuses and statuses - {"not submitted"}:
            keys.add((row[at], row[sid]))
    return keys


class CanvasExportPlugin(_LmsExportPlugin):
    """Canvas's Gradebook import CSV (see the module): ``Student``, ``ID``, ``SIS User ID``,
    ``SIS Login ID``, ``Section``, one column per assignment; a ``Points Possible`` row."""

    default_file = "canvas_grades.csv"

    def table(self, assignments, students, scores):
        header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + [a.name for a in assignments]
        rows = [["Points Possible", "", "", "", ""] + [_points(a.max_score) for a in assignments]]
        for s in students:
            name = ", ".join(n for n in (s.last_name, s.first_name) if n) or s.id
            canvas_id = s.lms_user_id if re.fullmatch(r"[0-9]+", s.lms_user_id or "") else ""
            rows.append([name, canvas_id, "", s.id, ""] + self._grades(assignments, s, scores))
        return header, rows


class MoodleExportPlugin(_LmsExportPlugin):
    """Moodle's "Import grades from CSV" file (see the module): ``Username``, ``First name``,
    ``Last name``, ``Email address`` and ``LMS user ID`` where every student has one, one column
    per assignment."""

    default_file = "moodle_grades.csv"

    def table(self, assignments, students, scores):
        with_email = bool(students) and all(s.email for s in students)
        with_lms_id = bool(students) and all(s.lms_user_id for s in students)
        header = (["Username", "First name", "Last name"] + ["Email address"] * with_email
                  + ["LMS user ID"] * with_lms_id + [a.name for a in assignments])
        rows = [[s.id, s.first_name or "", s.last_name or ""] + [s.email] * with_email
                + [s.lms_user_id] * with_lms_id + self._grades(assignments, s, scores)
                for s in students]
        return header, rows


def write_lms_exports(db_url: str, course_id: str, out: Path) -> list[Path]:
    """Write ``canvas_grades.csv`` and ``moodle_grades.csv`` of the gradebook at ``db_url`` into
    ``out`` (created if missing), scoring each submission as ``out/grades.csv`` does where that
    file is there (``course grade`` writes it first; see the module); returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    grades_csv = OutputLayout(out).grades_csv
    paths = []
    with Gradebook(db_url, course_id) as gradebook:
        for plugin in (CanvasExportPlugin, MoodleExportPlugin):
            path = out / plugin.default_file
            plugin(to=str(path), grades_csv=str(grades_csv) if grades_csv.exists() else "").export(
                gradebook)
            paths.append(path)
    return paths
