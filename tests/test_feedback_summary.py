"""Feedback names each exercise with its score, says once, not cell by cell, that later
outputs are not shown (issue 29, item 4), and says of each demonstration cell that grading did
not run it: an instructor's own tiny course graded with feedback by
the real `course grade` (real nbgrader, a real kernel in the real sandbox), and the summary's
names for this course's check calls (the exercise each checks)."""
from __future__ import annotations

import re

import nbformat
import pytest

from autograder.grading.defaults import DEMO_NOT_RUN, DEMO_SKIPPED_KEY, DEMO_TAG
from autograder.grading.kernels.bwrap import sandbox_problem
from autograder.grading.preprocessors.feedback import ScoreSummary
from tests.instructor_course import answered, cell, course_grade, make_course, released

A = "feedback"
NOTE = "not shown in feedback"


def _demo(source: str):
    made = cell(source)
    made.metadata["tags"] = [DEMO_TAG]
    return made


@pytest.fixture(scope="module")
def feedback_html(tmp_path_factory):
    if sandbox_problem():
        pytest.skip(sandbox_problem())
    course = make_course(tmp_path_factory.mktemp("course"), {A: [
        cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", answer=True),
        _demo("print('demo output before')"),
        cell("assert x == 1", "test_x", points=1),
        cell("assert x == 2, 'x is not 2'", "test_two", points=2),
        _demo("print('demo output after')"),
        *[cell(f"print('later output {i}')") for i in range(4)],
    ]})
    notebook = released(course, [A], tmp_path_factory.mktemp("release"))[A]
    submitted = tmp_path_factory.mktemp("class")
    (submitted / "ada" / A).mkdir(parents=True)
    nb = answered(notebook, {"answer": "x = 1"})
    # a forged mark of a cell the grader did not run: it must not keep this cell's output
    next(c for c in nb.cells if "later output 0" in c.source).metadata[DEMO_SKIPPED_KEY] = True
    nbformat.write(nb, submitted / "ada" / A / f"{A}.ipynb")
    out = tmp_path_factory.mktemp("out")
    proc, _, _ = course_grade(submitted, out, course, feedback=True)
    path = out / "feedback" / "ada" / A / f"{A}.html"
    assert path.exists(), proc.stdout + proc.stderr
    return path.read_text(encoding="utf-8")


def test_the_summary_names_each_graded_cell_with_its_score(feedback_html):
    text = re.sub(r"<[^>]+>", " ", feedback_html)
    text = " ".join(text.split())
    assert "Scores by exercise" in text
    assert "test_x test_x 1 / 1" in text and "test_two test_two 0 / 2" in text
    assert "total 1 / 3" in text


def test_later_outputs_are_hidden_under_one_note(feedback_html):
    # One note for the four later cells (a failed test cell run in the kernel says on its own
    # that its message is not shown: it could quote the hidden tests).
    assert feedback_html.count(NOTE) == 2 and feedback_html.count("could show hidden inputs") == 1
    assert not re.search(r">later output \d", feedback_html)  # the sources stay, quoted: '...'


def test_a_cell_of_the_course_checks_is_named_by_its_exercise():
    nb = nbformat.v4.new_notebook()
    test = nbformat.v4.new_code_cell("check_predict_eager(prediction_eager)")
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "test_eager",
                                 "points": 2, "score": 2.0}
    nb.cells = [test]
    nb, _ = ScoreSummary().preprocess(nb, {"nbgrader": {"score": 2.0, "max_score": 2.0}})
    assert nb.cells[0].cell_type == "markdown"
    assert "| predict_eager | `test_eager` | 2 / 2 |" in nb.cells[0].source


def test_each_demonstration_cell_says_it_was_not_run_when_graded(feedback_html):
    # before and after the first graded test: no cell the grader skipped looks left unrun; the
    # cell whose submission forged the mark ran, and its output is hidden as every later one's
    assert feedback_html.count(DEMO_NOT_RUN.strip()) == 2
    assert not re.search(r">demo output (before|after)", feedback_html)
