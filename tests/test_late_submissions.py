"""Due dates and late penalties through the real pipeline: ``course grade --due ... --late-penalty
...`` with nbgrader's own ``timestamp.txt``, ``AssignLatePenalties`` and CSV export.

Two students hand in the full solution of 01: one 2 h 10 min after the due date, one before it.
With nbgrader's documented example plugin (one point per hour late, rounded) the late one loses
exactly 2 points and the other none; a second run with nbgrader's "zero" method grades only the
late submission again, which then keeps nothing.
"""
import contextlib
import csv
import io
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from nbgrader.plugins import BasePlugin
from traitlets.config import Config

from autograder.cli import main
from autograder.grading.configure import configure_late_penalty
from autograder.grading.course import REPO_ROOT
from autograder.grading.demo.samples import build_sample_class
from autograder.grading.distribute.release import parse_due_dates
from autograder.grading.run.pipeline import grade_class
from tests.conftest import grading_workers, shared_scheduler

ASSIGNMENT = "01_gradient_tape"
DUE = "2026-12-01T23:59:00+01:00"  # 22:59 UTC
LATE, ON_TIME = "kim_late", "lee_on_time"
TIMESTAMPS = {LATE: "2026-12-02 01:09:00.000000 UTC",  # 2 h 10 min after the due date
              ON_TIME: "2026-12-01 21:30:00.000000 UTC"}


class SubMarks(BasePlugin):
    """nbgrader's documented late-penalty example: one point per hour late, rounded."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return round(total_seconds_late / 3600)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("late")
    answers = tmp / "answers"
    for student in TIMESTAMPS:
        (answers / student).mkdir(parents=True)
        shutil.copy(REPO_ROOT / "tests" / "samples" / "answers" / "ada_full" / f"{ASSIGNMENT}.py",
                    answers / student)
    (tmp / "invalid").mkdir()
    submitted = build_sample_class(tmp / "submitted", answers_dir=answers, invalid_dir=tmp / "invalid")
    for student, stamp in TIMESTAMPS.items():
        (submitted / student / ASSIGNMENT / "timestamp.txt").write_text(stamp + "\n")
    out = tmp / "out"
    # The first run (the plugin's penalty) is part of the fixture: the second test grades again
    # over its gradebook, so it holds whichever test runs first or alone.
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["grade", str(submitted), "--out", str(out), "--assignment", ASSIGNMENT,
                     "--workers", str(grading_workers()), "--no-feedback", "--due", f"{ASSIGNMENT}={DUE}",
                     "--late-penalty", f"{__name__}.SubMarks", "--scheduler", shared_scheduler()])
    # Read now: the second test's run rewrites them. Absent when the run failed (the test says so).
    rows = _csv_rows(out) if (out / "grades.csv").exists() else {}
    summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else ""
    return submitted, out, code, printed.getvalue(), rows, summary


def _csv_rows(out):
    with open(out / "grades.csv", newline="") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def test_late_submission_loses_exactly_the_plugins_penalty(graded):
    _, _, code, printed, rows, summary = graded
    assert code == 0, printed
    late, on_time = rows[LATE], rows[ON_TIME]
    full = float(on_time["max_score"])
    assert float(late["raw_score"]) == float(on_time["raw_score"]) == full > 2
    # nbgrader's CSV: the due date (UTC, as nbgrader stores it), the penalty, the score after it.
    assert late["duedate"] == on_time["duedate"] == "2026-12-01 22:59:00"
    assert float(late["late_submission_penalty"]) == 2 and float(late["score"]) == full - 2
    assert float(on_time["late_submission_penalty"]) == 0 and float(on_time["score"]) == full
    line = f"{LATE} / {ASSIGNMENT}: 2 h 10 min late, late penalty 2 (score {full - 2:g}/{full:g}"
    assert line in printed and ON_TIME + " / " + ASSIGNMENT + ":" not in printed.split("Late (")[1]
    assert "Late (submitted after the due date):" in summary and line in summary


def test_a_new_late_penalty_grades_again_only_the_late_submission(graded):
    submitted, out = graded[:2]
    # The due date is the gradebook's now: no --due this time.
    # One notebook to grade (the other is reused): one worker, one warm-kernel template.
    run = grade_class(submitted, out, assignment_ids=[ASSIGNMENT], workers=grading_workers(1),
                      progress=False, feedback=False, late_penalty="zero", scheduler=shared_scheduler())
    assert (run.graded_now, run.reused) == (1, 1)
    by_student = {g.student_id: g for g in run.grades}
    late, on_time = by_student[LATE], by_student[ON_TIME]
    assert late.seconds_late == 2 * 3600 + 10 * 60 and late.late_penalty == late.score > 0
    assert on_time.seconds_late == 0 and on_time.late_penalty == 0
    rows = _csv_rows(out)
    assert float(rows[LATE]["score"]) == 0 and float(rows[ON_TIME]["score"]) == on_time.max_score


def test_due_dates_need_an_assignment_and_a_time_zone():
    due = parse_due_dates([f"{ASSIGNMENT}={DUE}", "02_persistent_nested_tapes=2026-12-08T10:00Z"])
    assert due[ASSIGNMENT] == datetime(2026, 12, 1, 22, 59, tzinfo=timezone.utc)
    assert due["02_persistent_nested_tapes"].utcoffset() == timedelta(0)
    for bad in (f"{ASSIGNMENT}=2026-12-01T23:59", f"{ASSIGNMENT}=next friday", DUE, f"={DUE}"):
        with pytest.raises(ValueError, match="ISO 8601 and its time zone"):
            parse_due_dates([bad])


def test_late_penalty_is_a_method_or_a_plugin_class():
    c = Config()
    assert configure_late_penalty(c, None) == "none"
    assert c.LateSubmissionPlugin.penalty_method == "none"
    configure_late_penalty(c, "zero")
    assert c.LateSubmissionPlugin.penalty_method == "zero"
    configure_late_penalty(c, f"{__name__}.SubMarks")
    assert c.AssignLatePenalties.plugin_class is SubMarks
    with pytest.raises(ValueError, match="could not be imported"):
        configure_late_penalty(c, "no_such_module.Plugin")
    for bad in ("half", "csv.DictReader"):
        with pytest.raises(ValueError, match="nor a plugin class"):
            configure_late_penalty(c, bad)


def test_grade_refuses_a_due_date_without_time_zone_before_grading(tmp_path, capsys):
    (tmp_path / "class").mkdir()
    code = main(["grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
                 "--due", f"{ASSIGNMENT}=2026-12-01"])
    assert code == 2 and "ISO 8601 and its time zone" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
