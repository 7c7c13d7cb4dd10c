"""The Canvas and Moodle grade import files (``autograder.grading.exports.lms``) of a real nbgrader
gradebook: two assignments, three students: one has an id that is a spreadsheet formula and a
name with a newline, one did not submit the second assignment and submitted the first late, with a
penalty set on the submitted notebook as nbgrader's ``AssignLatePenalties`` does. The files
are written by ``write_lms_exports``, by the plugins with nbgrader's ``--student`` selection, and by
``nbgrader export --exporter ...`` as an instructor runs it. Then the same gradebook with one more
student per status of ``grades.csv`` (as ``course grade`` writes it, by ``write_exports``): the LMS
files score each as ``grades.csv`` does, empty only for "not submitted" and "grader failed".
"""
import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from nbgrader.plugins import CsvExportPlugin

from autograder.grading.exports.lms import CanvasExportPlugin, MoodleExportPlugin, write_lms_exports
from autograder.grading.report_text import FORMULA_START

COURSE = "tf-autodiff-workbook"  # the course id of configure.py
A1, A2 = "01_gradient_tape", "02_graph_mode"
EVE = '=HYPERLINK("http://evil.example/","open")'  # a student id that is a formula
# (notebook, cell, max points, cell type) of each assignment: 10 and 7.5 points.
CELLS = {A1: [("tape", "q1", 4, "code"), ("tape", "q2", 6, "markdown")],
         A2: [("graphs", "g1", 5, "code"), ("graphs", "g2", 2.5, "markdown")]}
# (assignment, student) -> {cell: (auto_score, manual_score)}; ben has no submission of A2.
GRADES = {(A1, "ada"): {"q1": (4, None), "q2": (None, 5)},            # 9
          (A2, "ada"): {"g1": (3.5, None), "g2": (None, 2)},          # 5.5
          (A1, EVE): {"q1": (4, None), "q2": (None, 6)},              # 10
          (A2, EVE): {"g1": (5, None), "g2": (None, None)},           # 5
          (A1, "ben"): {"q1": (2, 3), "q2": (None, 1.5)}}             # manual wins: 4.5, late: 3
LATE = (A1, "ben", 1.5)  # the late submission and its penalty


def _scripts_on_path(monkeypatch) -> None:
    # nbgrader makes a new gradebook with the `alembic` command of this Python's scripts folder.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))


@pytest.fixture(scope="module")
def gradebook_file(tmp_path_factory) -> Path:
    """The gradebook of the module's docstring, made once for the module (nbgrader's migrations
    take seconds a gradebook); read only: each test gets a copy of it from :func:`gradebook_url`."""
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    url = f"sqlite:///{path}"
    with pytest.MonkeyPatch.context() as patch:
        _scripts_on_path(patch)
        _fill(url)
    return path


@pytest.fixture()
def gradebook_url(gradebook_file, tmp_path, monkeypatch):
    """A copy of :func:`gradebook_file` of this test's own, as a URL: every test starts from the
    same gradebook, and what one writes (test_lms_files_score_every_status_as_grades_csv_does
    adds students) no other sees."""
    _scripts_on_path(monkeypatch)
    shutil.copyfile(gradebook_file, tmp_path / "gradebook.db")
    return f"sqlite:///{tmp_path / 'gradebook.db'}"


def _fill(url: str) -> None:
    """Make the gradebook at ``url``: CELLS, the three students, GRADES and the late penalty."""
    with Gradebook(url, COURSE) as gb:
        gb.add_assignment(A1, duedate="2025-03-03 12:00:00")
        gb.add_assignment(A2, duedate="2025-03-10 12:00:00")
        for assignment, cells in CELLS.items():
            for notebook in sorted({c[0] for c in cells}):
                gb.add_notebook(notebook, assignment)
            for notebook, cell, points, cell_type in cells:
                gb.add_grade_cell(cell, notebook, assignment, max_score=points, cell_type=cell_type)
        gb.add_student("ada", first_name="Ada", last_name="Lovelace", email="ada@example.org",
                       lms_user_id="1001")
        gb.add_student(EVE, first_name="Eve\nX", last_name="@Mallory", email="eve@example.org",
                       lms_user_id="5a3f")  # not Canvas's numeric id: no ID cell
        gb.add_student("ben", first_name="Ben", last_name="Bitdiddle")  # no email, no LMS id
        for (assignment, student), grades in GRADES.items():
            late = (assignment, student) == LATE[:2]
            gb.add_submission(assignment, student,
                              timestamp="2025-03-04 09:00:00" if late else "2025-03-01 09:00:00")
            notebook = CELLS[assignment][0][0]
            for cell, (auto, manual) in grades.items():
                grade = gb.find_grade(cell, notebook, assignment, student)
                grade.auto_score, grade.manual_score = auto, manual
                grade.needs_manual_grade = False
            if late:
                gb.find_submission_notebook(notebook, assignment, student).late_submission_penalty = LATE[2]
        gb.db.commit()
        late = gb.find_submission(*LATE[:2])
        assert (late.score, late.late_submission_penalty, late.total_seconds_late > 0) == (4.5, 1.5, True)


def _read(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _no_formula(table):
    for row in table:
        for cell in row:
            assert "\n" not in cell and "\r" not in cell, cell
            assert not cell or cell[0] not in FORMULA_START, cell


CANVAS = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A1, A2],
          ["Points Possible", "", "", "", "", "10", "7.5"],
          ["'@Mallory, Eve\\nX", "", "", "'" + EVE, "", "10", "5"],
          ["Bitdiddle, Ben", "", "", "ben", "", "3", ""],
          ["Lovelace, Ada", "1001", "", "ada", "", "9", "5.5"]]
MOODLE = [["Username", "First name", "Last name", A1, A2],
          ["'" + EVE, "Eve\\nX", "'@Mallory", "10", "5"],
          ["ben", "Ben", "Bitdiddle", "3", ""],
          ["ada", "Ada", "Lovelace", "9", "5.5"]]


def test_write_lms_exports(gradebook_url, tmp_path):
    paths = write_lms_exports(gradebook_url, COURSE, tmp_path / "grading")
    assert paths == [tmp_path / "grading" / "canvas_grades.csv", tmp_path / "grading" / "moodle_grades.csv"]
    canvas, moodle = _read(paths[0]), _read(paths[1])
    assert canvas == CANVAS
    # ben has no email and no LMS id: Moodle would give his grades to the row above if mapped on them.
    assert moodle == MOODLE
    _no_formula(canvas)
    _no_formula(moodle)

    # The totals of nbgrader's own grades.csv, which writes 0 where we leave the cell empty. (Its
    # cells are not quoted: EVE's id, with a comma, would shift her row's columns, so not her.)
    nbgrader_csv = tmp_path / "grades.csv"
    with Gradebook(gradebook_url, COURSE) as gb:
        CsvExportPlugin(to=str(nbgrader_csv), student=["ada", "ben"]).export(gb)
    with open(nbgrader_csv, newline="") as handle:
        theirs = {(r["assignment"], r["student_id"]): (float(r["raw_score"]), float(r["score"]))
                  for r in csv.DictReader(handle)}
    assert theirs[A1, "ben"] == (4.5, 3.0)  # without and with the late penalty
    assert theirs[A2, "ben"] == (0.0, 0.0)
    ours = {(a, row[3]): float(cell) for row in canvas[2:] if row[3] in ("ada", "ben")
            for a, cell in zip((A1, A2), row[5:]) if cell}
    assert ours == {key: score for key, (_, score) in theirs.items() if key in GRADES}


def test_selected_students_and_assignments(gradebook_url, tmp_path):
    """nbgrader's --student and --assignment; Moodle's email and LMS id columns once every row has one."""
    with Gradebook(gradebook_url, COURSE) as gb:
        MoodleExportPlugin(to=str(tmp_path / "m.csv"), student=["ada", EVE]).export(gb)
        CanvasExportPlugin(to=str(tmp_path / "c.csv"), student=["ben"], assignment=[A2]).export(gb)
    assert _read(tmp_path / "m.csv") == [
        ["Username", "First name", "Last name", "Email address", "LMS user ID", A1, A2],
        ["'" + EVE, "Eve\\nX", "'@Mallory", "eve@example.org", "5a3f", "10", "5"],
        ["ada", "Ada", "Lovelace", "ada@example.org", "1001", "9", "5.5"]]
    assert _read(tmp_path / "c.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A2],
        ["Points Possible", "", "", "", "", "7.5"],
        ["Bitdiddle, Ben", "", "", "ben", "", ""]]


@pytest.mark.parametrize("plugin, expected", [("CanvasExportPlugin", CANVAS), ("MoodleExportPlugin", MOODLE)])
def test_nbgrader_export_command(gradebook_url, tmp_path, plugin, expected):
    """``nbgrader export`` from a folder of its own: the repository's nbgrader_config.py is not
    needed (nor read), only the database and the course id."""
    dest = tmp_path / "out" / "lms.csv"
    dest.parent.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER_", "COURSE_")) and k != "PYTHONPATH"}
    result = subprocess.run(
        [str(Path(sys.executable).with_name("nbgrader")), "export",
         "--exporter", f"autograder.grading.exports.lms.{plugin}", "--to", str(dest),
         f"--CourseDirectory.db_url={gradebook_url}", f"--CourseDirectory.course_id={COURSE}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Using exporter: {plugin}" in result.stderr
    assert _read(dest) == expected


# One student per status grades.csv can give the first assignment (its `status` column,
# NotebookGrade.status of each notebook, joined): (outcome of each notebook, the gradebook's grades
# of the submission or None where nbgrader holds none, the LMS cell). A submission `course grade`
# never recorded scores 0 in grades.csv; only "not submitted" and "grader failed" stay empty.
STATUS_CASES = {
    "nia": (["needs manual grading"], {"q1": (4, None), "q2": (None, None)}, "4"),
    "kai": (["kernel_died"], {"q1": (0, None), "q2": (None, None)}, "0"),  # recorded with 0
    "uma": (["unreadable"], None, "0"),
    "fay": (["failed"], None, "0"),  # recording it in the gradebook failed: grades.csv's 0
    "ned": (["not_submitted"], None, ""),
    "gil": (["grader_failed"], None, ""),  # no grade by design: graded again next run
    "hal": (["grader_failed"], {"q1": (4, None), "q2": (None, 0)}, "4"),  # an earlier run's
    "pia": (["unreadable", "not_submitted"], None, "0"),
    "qin": (["unreadable", "grader_failed"], None, ""),
}


def _notebook_grade(student: str, notebook: str, status: str):
    from autograder.grading.failures import Outcome
    from autograder.grading.run.results import NotebookGrade

    if status == "needs manual grading":
        return NotebookGrade(student, A1, notebook, scores={"q1": (4.0, 4.0), "q2": (0.0, 6.0)},
                             manual={"q2": None}, executed=True)
    return NotebookGrade(student, A1, notebook, outcome=Outcome(status),
                         executed=status != "not_submitted")


def test_lms_files_score_every_status_as_grades_csv_does(gradebook_url, tmp_path):
    from traitlets.config import Config

    from autograder.grading.layout import OutputLayout
    from autograder.grading.run.reports import write_exports

    with Gradebook(gradebook_url, COURSE) as gb:
        for student, (_, cells, _) in STATUS_CASES.items():
            gb.add_student(student, last_name=student.title())
            if cells is not None:
                gb.add_submission(A1, student, timestamp="2025-03-01 09:00:00")
                for cell, (auto, manual) in cells.items():
                    grade = gb.find_grade(cell, "tape", A1, student)
                    grade.auto_score, grade.manual_score = auto, manual
                    grade.needs_manual_grade = auto is None and manual is None
        gb.db.commit()
    grades = [_notebook_grade("ada", "tape", "graded"), _notebook_grade("ben", "tape", "graded")]
    grades += [_notebook_grade(student, notebook, status)
               for student, (statuses, _, _) in STATUS_CASES.items()
               for notebook, status in zip(["tape", "extra"], statuses)]
    config = Config()
    config.CourseDirectory.db_url, config.CourseDirectory.course_id = gradebook_url, COURSE
    layout = OutputLayout(tmp_path / "grading")
    layout.out.mkdir()
    write_exports(config, grades, layout)  # grades.csv, as `course grade` writes it
    canvas_path, moodle_path = write_lms_exports(gradebook_url, COURSE, layout.out)

    canvas = {row[3]: dict(zip((A1, A2), row[5:])) for row in _read(canvas_path)[2:]}
    moodle = {row[0]: dict(zip((A1, A2), row[3:])) for row in _read(moodle_path)[1:]}
    assert canvas == moodle
    # EVE's rows are left out: nbgrader does not quote its cells, so her id's comma and her
    # name's newline break them.
    with open(layout.grades_csv, newline="", encoding="utf-8") as handle:
        theirs = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(handle)
                  if r["student_id"] in canvas and r["student_id"] != "'" + EVE}
    assert {s for _, s in theirs} == {"ada", "ben", *STATUS_CASES} and len(theirs) == 2 * 11
    seen = {}
    for (assignment, student), row in theirs.items():
        ours = canvas[student][assignment]
        seen[student, assignment] = (row["status"], row["score"], ours)
        statuses = set(row["status"].split("; "))
        unrecorded = row["timestamp"] == ""  # nbgrader's grades.csv: no submission in the gradebook
        if statuses <= {"not submitted"} and unrecorded or "grader failed" in statuses and unrecorded:
            assert ours == "", (student, assignment, row)
        else:  # exactly grades.csv's score, late penalty taken off
            assert ours == f"{float(row['score']):.2f}".rstrip("0").rstrip("."), (student, row)
    # Status by status, as grades.csv names them.
    for student, (statuses, _, cell) in STATUS_CASES.items():
        status = "; ".join(_notebook_grade(student, "x", s).status for s in statuses)
        assert seen[student, A1][0] == status and seen[student, A1][2] == cell, seen[student, A1]
        assert seen[student, A2] == ("not submitted", "0.0", ""), seen[student, A2]
    assert seen["ada", A1] == ("graded", "9.0", "9") and seen["ben", A1] == ("graded", "3.0", "3")
    assert seen["ben", A2] == ("not submitted", "0.0", "")
    assert {seen[s, A1][0] for s in STATUS_CASES} >= {
        "needs manual grading", "kernel died", "unreadable", "failed", "not submitted",
        "grader failed"}

