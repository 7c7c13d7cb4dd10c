"""The formgrader and the CSVs agree on a score a person gave, after `course grade --force`
(issue 29, item 6): nbgrader's autograde marks every cell a person scored as needing manual
grading again; where the submission is the one the person scored, the mark is taken back (the
formgrader shows the score as graded, as the CSVs do); where the student's answer changed, both
say it needs manual grading. An instructor's own tiny course (a written answer graded by hand),
graded three times by the real `course grade` (real nbgrader, a real kernel in the sandbox), the
person's score given through nbgrader's Gradebook as the formgrader gives it."""
from __future__ import annotations

import nbformat
import nbformat.v4
import pytest

from autograder.grading.defaults import COURSE_ID
from autograder.grading.distribute.formgrader import graded_course_root
from autograder.grading.kernels.bwrap import sandbox_problem
from tests.instructor_course import answered, cell, course_grade, make_course, released

A = "written"
META = {"schema_version": 3, "locked": False, "grade": True, "solution": True, "task": False}


def _grade(out):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", COURSE_ID) as gb:
        grade = gb.find_grade("explain", A, A, "ada")
        return grade.manual_score, grade.needs_manual_grade


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from nbgrader.api import Gradebook

    if sandbox_problem():
        pytest.skip(sandbox_problem())
    explain = nbformat.v4.new_markdown_cell("Why is x one?")
    explain.metadata["nbgrader"] = {**META, "grade_id": "explain", "points": 2}
    course = make_course(tmp_path_factory.mktemp("course"), {A: [
        cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", answer=True),
        cell("assert x == 1", "test_x", points=1), explain]})
    notebook = released(course, [A], tmp_path_factory.mktemp("release"))[A]
    submitted = tmp_path_factory.mktemp("class")
    path = submitted / "ada" / A / f"{A}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(answered(notebook, {"answer": "x = 1", "explain": "Because I said so."}), path)
    out = tmp_path_factory.mktemp("out")
    seen = [course_grade(submitted, out, course)[1]["ada", "explain"]["status"]]
    assert graded_course_root(out) == course.resolve()  # `course formgrader out` opens this course
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", COURSE_ID) as gb:
        grade = gb.find_grade("explain", A, A, "ada")
        grade.manual_score, grade.needs_manual_grade = 1.5, False
        gb.db.commit()
    cells = course_grade(submitted, out, course, "--force")[1]
    seen.append((cells["ada", "explain"]["score"], cells["ada", "explain"]["status"], _grade(out)))
    nbformat.write(answered(notebook, {"answer": "x = 1", "explain": "Another answer."}), path)
    cells = course_grade(submitted, out, course)[1]
    seen.append((cells["ada", "explain"]["status"], _grade(out)))
    return seen


def test_a_forced_regrade_keeps_the_persons_score_graded_in_both(runs):
    first, (score, status, grade), _ = runs
    assert first == "needs manual grading"
    assert (float(score), status) == (1.5, "graded")
    assert grade == (1.5, False)  # the formgrader's "needs manual grading" is nbgrader's mark


def test_a_changed_answer_needs_manual_grading_in_both(runs):
    _, _, (status, grade) = runs
    assert status == "needs manual grading" and grade == (1.5, True)
