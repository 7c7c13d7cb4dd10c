"""The grader scores the sample submissions exactly as expected.

One real grading run (real kernels, real nbgrader) over the sample class that
autograder.grading.demo.samples builds from the current release and tests/samples/answers (the
session's ``graded_samples``, tests/conftest.py); expected scores per student and graded cell are in
tests/samples/expected/<assignment>.json.
"""
import csv
import html
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from autograder.grading.run.pipeline import grade_class
from tests.conftest import grading_workers, hashes as _hashes, shared_scheduler

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "samples"
EXPECTED = {p.stem: json.loads(p.read_text()) for p in (SAMPLES / "expected").glob("0*.json")}
INVALID = json.loads((SAMPLES / "expected" / "invalid.json").read_text())


@pytest.fixture(scope="module")
def graded(graded_samples):
    run, (submitted, before) = graded_samples
    assert sorted({g.assignment_id for g in run.grades}) == sorted(EXPECTED)
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
    """Grading skips the cells tagged demo in solutions/ (timings, plots, visible checks); graded
    with every cell run, each assignment's full, blank and known-wrong submissions (33 of the
    class's notebooks: the ones a demonstration cell could change) get the same points and
    messages for every cell."""
    run, (submitted, _) = graded
    chosen = {(s, a) for a, spec in EXPECTED.items()
              for s in {"ada_full", "ben_blank", *spec.get("mistakes", {})}}
    subset = tmp_path / "submitted"
    for student, assignment_id in chosen:
        shutil.copytree(submitted / student / assignment_id, subset / student / assignment_id)
    full = grade_class(subset, tmp_path / "out", assignment_ids=sorted(EXPECTED),
                       workers=grading_workers(), progress=False, feedback=False, run_demos=True,
                       scheduler=shared_scheduler())

    def by_cell(grades):
        return {(g.student_id, g.assignment_id): (g.scores, g.messages, g.problem) for g in grades
                if (g.student_id, g.assignment_id) in chosen}

    assert by_cell(full.grades) == by_cell(run.grades)
    assert len(by_cell(full.grades)) == len(chosen) > 30


def test_answer_similarity_ranks_the_planted_copy_first(graded):
    """zoe_copy is alt1_variables' answers renamed, commented and reordered: the top pair; two
    independent right answers (alt1_variables, alt2_tf_math) are not flagged in any assignment,
    nor is a student whose answers are the course's own (ada_full) with one who changed one of
    them (p01_unwatched_constant): the course's answers are boilerplate (issue 22)."""
    run, _ = graded
    with open(run.out / "similarity_pairs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    top = rows[0]
    assert (top["student_a"], top["student_b"], top["assignment_id"]) == \
        ("alt1_variables", "zoe_copy", "01_gradient_tape"), rows[:3]
    assert float(top["similarity"]) > 0.9 and "fit_line" in top["cells"]
    independent = [r for r in rows if {r["student_a"], r["student_b"]} == {"alt1_variables", "alt2_tf_math"}]
    assert independent and all(float(r["similarity"]) < 0.5 for r in independent), independent
    assert not [r for r in rows if {r["student_a"], r["student_b"]} == {"ada_full", "p01_unwatched_constant"}
                and float(r["similarity"]) >= 0.5]
    summary = (run.out / "summary.txt").read_text().splitlines()
    heading = next(i for i, line in enumerate(summary) if line.startswith("Answer similarity:"))
    assert "to look at" in summary[heading] and "alt1_variables ~ zoe_copy" in summary[heading + 1]
    assert "zoe_copy" in (run.out / "similarity.html").read_text()


def test_lms_exports_have_one_row_per_student_with_the_documented_headers(graded):
    run, _ = graded
    students = {g.student_id for g in run.grades}
    with open(run.out / "canvas_grades.csv", newline="") as f:
        canvas = list(csv.reader(f))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[0][5:] == sorted(EXPECTED) and canvas[1][0] == "Points Possible"
    assert sorted(r[3] for r in canvas[2:]) == sorted(students)
    with open(run.out / "moodle_grades.csv", newline="") as f:
        moodle = list(csv.DictReader(f))
    assert sorted(r["Username"] for r in moodle) == sorted(students)
    ada = next(r for r in moodle if r["Username"] == "ada_full")
    for assignment_id, spec in EXPECTED.items():
        assert float(ada[assignment_id]) == sum(spec["points"]["ada_full"].values())


def test_mistakes_per_exercise_count_the_sample_class_known_mistakes(graded):
    """mistakes_by_exercise.csv counts, per exercise, the sample students whose graded cell names
    each catalogued mistake: exactly the mistakes tests/samples/expected/ lists (issue 22)."""
    run, _ = graded
    want = Counter((a, cell, mistake) for a, spec in EXPECTED.items()
                   for cells in spec.get("mistakes", {}).values() for cell, mistake in cells.items())
    with open(run.out / "mistakes_by_exercise.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    got = Counter({(r["assignment_id"], r["grade_id"], r["mistake_id"]): int(r["students"]) for r in rows})
    assert got == want
    assert (run.out / "mistakes_by_exercise.png").stat().st_size > 1000
    assert "Mistakes per exercise" in (run.out / "summary.txt").read_text()
