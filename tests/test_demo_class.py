"""``course demo`` grades a smaller class than the tests, which still shows what the grader does."""
from pathlib import Path

from autograder.grading.course import assignments
from autograder.grading.demo.samples import SAMPLES, build_sample_class, demo_selection

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = ROOT / SAMPLES / "answers"


def test_the_demo_class_has_full_marks_a_mistake_and_another_right_answer_per_assignment():
    chosen = demo_selection(ANSWERS)
    every_file = {(p.parent.name, p.stem) for p in ANSWERS.glob("*/*.py")}
    assert chosen < every_file and len(chosen) <= len(every_file) // 2 + 1
    for assignment_id in assignments(ROOT):
        students = {s for s, a in chosen if a == assignment_id}
        assert {"ada_full", "alt1_variables"} <= students, assignment_id
        assert any(s.startswith("p") and s[1:3].isdigit() for s in students), assignment_id
    assert ("zoe_copy", "01_gradient_tape") in chosen                 # similarity has a pair
    assert sum(s == "ben_blank" for s, _ in chosen) == 1              # one untouched release


def test_only_the_chosen_files_are_written_with_the_invalid_ones(tmp_path):
    chosen = {("ada_full", "01_gradient_tape"), ("p01_unwatched_constant", "01_gradient_tape")}
    built = build_sample_class(tmp_path / "submitted", ROOT, only=chosen)
    notebooks = {(p.parents[1].name, p.parent.name) for p in built.glob("*/*/*.ipynb")}
    invalid = {(p.parents[1].name, p.parent.name) for p in (ROOT / SAMPLES / "invalid").glob("*/*/*.ipynb")}
    assert notebooks == chosen | invalid
