"""One submission never stops the class run (failure isolation): a class of full 01 submissions,
each changed the way real students' habits and front ends change them (tests/mutate.py), graded by
one real `course grade` command (real kernels, real nbgrader)."""
import csv
import subprocess
import sys

import nbformat
import pytest

from tests import mutate
from tests.conftest import grading_workers, hashes as _hashes, shared_scheduler

ASSIGNMENT = "01_gradient_tape"
FULL = {"test_square_grad": 2.0, "test_sum_squared_grad": 2.0, "test_train_step": 3.0,
        "test_fit_line": 3.0}
ZERO = {cell: 0.0 for cell in FULL}
# Half the default cell time limit (120 s): SLOW's set-up cell runs until it, and is the run's
# longest job; every honest cell of 01 takes a few seconds.
CELL_TIMEOUT_S = 60
# Jobs go to the workers in folder order: named to sort first, SLOW waits out the limit on one
# worker while the others grade the rest of the class, not after them.
SLOW = "a_slow_setup"


@pytest.fixture(scope="module")
def graded(tmp_path_factory, sample_class):
    full = nbformat.read(sample_class / "ada_full" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    submitted = mutate.write_class(tmp_path_factory.mktemp("class"), ASSIGNMENT, {
        "ada_full": full,
        "copied_answer_cell": mutate.duplicated_answer_cell(full),
        "deleted_test_cell": mutate.deleted_cell(full, "test_square_grad"),
        "deleted_check_and_test": mutate.deleted_cell(
            mutate.deleted_cell(full, "test_fit_line"), "fit_line_check"),
        "shell_output": mutate.shell_output(full),
        "colab_widgets": mutate.colab_widget_state(full),
        "kim[2]": full,
        "hidden_markers": mutate.hidden_test_markers(full),
        SLOW: mutate.slow_setup(full),
        "nbformat_4_0": mutate.old_format(full),
        "duplicated_ids": mutate.duplicated_cell_ids(full),
    })
    before = _hashes(submitted)
    out = tmp_path_factory.mktemp("out")
    proc = subprocess.run(
        [sys.executable, "-m", "autograder.cli", "grade", str(submitted), "--out", str(out),
         "--workers", str(grading_workers()), "--assignment", ASSIGNMENT,
         "--cell-timeout", str(CELL_TIMEOUT_S), "--scheduler", shared_scheduler()],
        capture_output=True, text=True, timeout=1800)
    with open(out / "scores_by_exercise.csv") as handle:
        rows = list(csv.DictReader(handle))
    by_student: dict[str, dict] = {}
    for row in rows:
        by_student.setdefault(row["student_id"], {})[row["grade_id"]] = row
    return proc, out, by_student, submitted, before


def _points(rows: dict) -> dict[str, float]:
    return {cell: float(row["score"]) for cell, row in rows.items()}


def _one(rows: dict, column: str) -> str:
    [value] = {row[column] for row in rows.values()}
    return value


def test_run_ends_with_every_export_and_nothing_that_needs_attention(graded):
    proc, out, _, _, _ = graded
    # kim[2] is graded under a safe id (G15), hidden_markers' markers are made inert when
    # staged (G16): every submission of this class goes through.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("grades.csv", "scores_by_exercise.csv", "summary.txt", "gradebook.db"):
        assert (out / name).exists(), name
    assert "Needs attention" not in proc.stdout + (out / "summary.txt").read_text()
    assert "11 notebooks (11 graded now, 0 unchanged since the last run)" in proc.stdout


@pytest.mark.parametrize("student", ["ada_full", "shell_output", "colab_widgets", "nbformat_4_0",
                                     "duplicated_ids"])
def test_full_submission_gets_full_marks_and_feedback(graded, student):
    _, out, by, _, _ = graded
    assert _points(by[student]) == FULL, by[student]
    assert _one(by[student], "problem") == "" and _one(by[student], "failed_steps") == ""
    assert (out / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()


def test_copied_answer_cell_is_graded_and_noted_g11(graded):
    _, _, by, _, _ = graded
    assert _points(by["copied_answer_cell"]) == FULL
    assert "cell 'square_grad' appeared 2 times (copy-pasted?)" in _one(by["copied_answer_cell"], "notes")


@pytest.mark.parametrize("student,restored", [
    ("deleted_test_cell", "test_square_grad (deleted)"),
    ("deleted_check_and_test", "fit_line_check (deleted); test_fit_line (deleted)"),
])
def test_deleted_test_cell_after_a_check_cell_is_restored_and_graded_g03_g12(graded, student, restored):
    _, _, by, _, _ = graded
    assert _points(by[student]) == FULL
    assert _one(by[student], "restored_cells") == restored


def test_student_folder_with_pattern_characters_is_graded_under_a_safe_id_g15(graded):
    _, out, by, _, _ = graded
    [student_id] = [s for s, rows in by.items() if _one(rows, "folder") == "kim[2]"]
    assert student_id.startswith("kim_2-") and _points(by[student_id]) == FULL
    assert not (out / "autograded" / "kim[2]").exists()
    assert (out / "autograded" / student_id / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()


def test_hidden_test_markers_in_student_text_are_made_inert_and_get_feedback_g16(graded):
    _, out, by, _, _ = graded
    assert _points(by["hidden_markers"]) == FULL
    assert _one(by["hidden_markers"], "failed_steps") == ""
    assert "were rewritten so that nbgrader does not read them" in _one(by["hidden_markers"], "notes")
    assert (out / "feedback" / "hidden_markers" / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()


def test_setup_cell_timeout_is_named_in_every_later_failure_g17(graded):
    _, _, by, _, _ = graded
    assert _points(by[SLOW]) == ZERO
    for row in by[SLOW].values():
        assert row["message"].split(": ", 1)[1].startswith(f"the set-up cell timed out after {CELL_TIMEOUT_S} s"), row


def test_submitted_files_are_byte_identical_after_grading(graded):
    _, _, _, submitted, before = graded
    assert _hashes(submitted) == before
