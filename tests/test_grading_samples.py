"""The grader scores the sample submissions exactly as expected.

One real grading run (real kernels, real nbgrader, two workers) over the sample class that
autograder.grading.demo.samples builds from the current release and tests/samples/answers; expected
scores per student and graded cell are in tests/samples/expected/<assignment>.json.
"""
import hashlib
import html
import json
import re
from pathlib import Path

import pytest

from autograder.grading.run.pipeline import grade_class
from autograder.grading.demo.samples import build_sample_class

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "samples"
EXPECTED = {p.stem: json.loads(p.read_text()) for p in (SAMPLES / "expected").glob("0*.json")}
INVALID = json.loads((SAMPLES / "expected" / "invalid.json").read_text())


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    submitted = build_sample_class(tmp_path_factory.mktemp("samples") / "submitted")
    before = _hashes(submitted)
    out = tmp_path_factory.mktemp("grading")
    run = grade_class(submitted, out, assignment_ids=sorted(EXPECTED), workers=2, progress=False)
    return run, (submitted, before)


def _grade(run, student_id, assignment_id):
    [grade] = [g for g in run.grades if (g.student_id, g.assignment_id) == (student_id, assignment_id)]
    return grade


def _cases():
    return [(a, s) for a, spec in sorted(EXPECTED.items()) for s in sorted(spec["points"])]


@pytest.mark.parametrize("assignment_id,student_id", _cases())
def test_sample_gets_exactly_the_expected_score_per_exercise(graded, assignment_id, student_id):
    run, _ = graded
    grade = _grade(run, student_id, assignment_id)
    got = {cell: score for cell, (score, _) in grade.scores.items()}
    assert got == EXPECTED[assignment_id]["points"][student_id], grade.messages


@pytest.mark.parametrize("assignment_id", sorted(EXPECTED))
def test_full_solution_has_full_marks_and_release_has_zero(graded, assignment_id):
    run, _ = graded
    full, blank = _grade(run, "ada_full", assignment_id), _grade(run, "ben_blank", assignment_id)
    assert full.score == full.max_score > 0 and full.messages == {}
    assert blank.score == 0 and blank.problem is None


@pytest.mark.parametrize("assignment_id,student_id", [
    (a, s) for a, spec in sorted(EXPECTED.items()) for s in sorted(spec.get("mistakes", {}))])
def test_feedback_message_names_the_mistake(graded, assignment_id, student_id):
    run, _ = graded
    grade = _grade(run, student_id, assignment_id)
    for cell, mistake in EXPECTED[assignment_id]["mistakes"][student_id].items():
        assert f"[{mistake}:" in grade.messages.get(cell, ""), grade.messages


def test_invalid_files_are_reported_and_the_rest_graded(graded):
    run, _ = graded
    for student_id, by_assignment in INVALID.items():
        for assignment_id, reason in by_assignment.items():
            grade = _grade(run, student_id, assignment_id)
            assert grade.problem and reason in grade.problem
            assert grade.score == 0
    assert sum(g.problem is None for g in run.grades) >= len(_cases())


def test_submitted_files_are_byte_identical_after_grading(graded):
    run, (submitted, before) = graded
    assert _hashes(submitted) == before


def _visible_text(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def test_feedback_contains_no_hidden_test(graded):
    from tests.test_release import _hidden_test_lines

    run, _ = graded
    feedback = sorted((run.out / "feedback").rglob("*.html"))
    assert len(feedback) >= 2 * len(EXPECTED)
    for assignment_id in EXPECTED:
        hidden = _hidden_test_lines(ROOT / "solutions" / assignment_id / f"{assignment_id}.ipynb")
        for page in feedback:
            if page.parent.name == assignment_id:
                text = _visible_text(page)
                assert [line for line in hidden if line in text] == [], page


def test_exports_hold_every_graded_submission(graded):
    run, _ = graded
    csv_text = (run.out / "grades.csv").read_text()
    for assignment_id, spec in EXPECTED.items():
        for student_id in spec["points"]:
            assert re.search(rf"^{assignment_id},.*,{student_id},", csv_text, re.M)
    rows = (run.out / "scores_by_exercise.csv").read_text().splitlines()
    assert len(rows) - 1 == sum(len(g.scores) for g in run.grades)


def test_no_sample_submission_is_flagged_for_review(graded):
    # Every sample is ordinary student work, right or wrong: neither the static scan nor the
    # integrity check before each graded cell may flag it.
    run, _ = graded
    flagged = {(g.student_id, g.assignment_id): g.review for g in run.grades if g.review}
    assert flagged == {}


def test_skipping_demonstration_cells_changes_no_grade_and_no_message(graded, tmp_path):
    """Grading skips the cells tagged demo in solutions/ (timings, plots, visible checks); the
    same class graded with every cell run gets the same points and messages for every cell."""
    run, (submitted, _) = graded
    full = grade_class(submitted, tmp_path / "out", assignment_ids=sorted(EXPECTED), workers=2,
                       progress=False, feedback=False, run_demos=True)

    def by_cell(grades):
        return {(g.student_id, g.assignment_id): (g.scores, g.messages, g.problem) for g in grades}

    assert by_cell(full.grades) == by_cell(run.grades)
    assert len(full.grades) == len(run.grades) > 40
