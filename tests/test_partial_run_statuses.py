"""Grading one assignment again reports every student as the last full run did (issue 29, item 2):
a submission that was not graded (a truncated file: unreadable) is recorded per submission as
graded ones are, so `course grade --force --assignment <another>` keeps it `unreadable` (never
`not submitted`) in grades.csv, in what needs attention in summary.txt, and in both LMS files.
An instructor's own tiny course, graded twice by the real `course grade` (real nbgrader, a real
kernel in the real sandbox)."""
from __future__ import annotations

import json

import nbformat
import pytest

from autograder.grading.kernels.bwrap import sandbox_problem
from autograder.grading.layout import OutputLayout
from tests.instructor_course import answered, cell, course_grade, make_course, released

FIRST, SECOND = "first", "second"


def _attention(summary: str) -> list[str]:
    lines = summary.splitlines()
    start = lines.index("Needs attention (not graded, or a step failed):")
    return [line for line in lines[start + 1:] if line.startswith("  ")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if sandbox_problem():
        pytest.skip(sandbox_problem())
    course = make_course(tmp_path_factory.mktemp("course"), {
        a: [cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", answer=True),
            cell("assert x == 1", "test_x", points=1)] for a in (FIRST, SECOND)})
    notebooks = released(course, [FIRST, SECOND], tmp_path_factory.mktemp("release"))
    submitted = tmp_path_factory.mktemp("class")
    for student, assignment in [("ada", FIRST), ("ada", SECOND), ("bob", SECOND)]:
        (submitted / student / assignment).mkdir(parents=True)
    nbformat.write(answered(notebooks[FIRST], {"answer": "x = 1"}),
                   submitted / "ada" / FIRST / f"{FIRST}.ipynb")
    text = notebooks[SECOND].read_text()
    for student in ("ada", "bob"):  # a download cut short
        (submitted / student / SECOND / f"{SECOND}.ipynb").write_text(text[:len(text) // 2])
    out = tmp_path_factory.mktemp("out")
    layout = OutputLayout(out)
    seen = []
    for extra in ([], ["--force", "--assignment", FIRST]):
        proc, _, rows = course_grade(submitted, out, course, *extra)
        seen.append((proc, rows, layout.summary.read_text(),
                     [p.read_text() for p in layout.lms]))
    return layout, seen


def test_an_unreadable_submission_is_recorded_as_not_graded(runs):
    layout, _ = runs
    record = json.loads(layout.record("ada", SECOND).read_text())
    assert record["outcome"] == "unreadable" and record["sha256"] is None
    assert record["problem"]


def test_a_partial_run_reports_every_student_as_the_full_run_did(runs):
    _, [(full, full_rows, full_summary, full_lms), (partial, rows, summary, lms)] = runs
    assert full.returncode == partial.returncode == 1, full.stdout + partial.stdout
    assert full_rows[("ada", SECOND)]["status"] == "unreadable"
    assert full_rows[("bob", SECOND)]["status"] == "unreadable"
    assert float(full_rows[("ada", FIRST)]["raw_score"]) == 1.0
    assert {k: (r["status"], r["raw_score"]) for k, r in rows.items()} == \
        {k: (r["status"], r["raw_score"]) for k, r in full_rows.items()}
    attention = _attention(full_summary)
    assert any("ada" in line and f"/ {SECOND}:" in line for line in attention), attention
    assert _attention(summary) == attention
    assert lms == full_lms
