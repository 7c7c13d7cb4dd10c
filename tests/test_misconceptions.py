"""Mistakes per exercise (autograder.grading.analysis.misconceptions) on grades built here:
messages made by the real visible checks on known-wrong code (real TensorFlow) and by hand,
counted per student, cell and catalogued id, with the catalogue's names; a forged id or name
never counts or reaches a line; exercises come in notebook order; the CSV and the PNG are
written. Then the sample class's expected mistakes (tests/samples/expected/) counted the same."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import tensorflow as tf

from autograder.checks import tapes
from autograder.checks.compare import CheckFailed
from autograder.checks.mistakes import MISTAKES
from autograder.grading.analysis.misconceptions import (
    CSV_HEADER, HEADING, MistakeCount, message_mistake, mistake_counts, plot, summary_lines,
    write_csv)
from autograder.grading.failures import Outcome
from autograder.grading.report_text import printable
from autograder.grading.run.results import NotebookGrade

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {p.stem: json.loads(p.read_text()) for p in sorted((ROOT / "tests/samples/expected").glob("0*.json"))}
A = "01_gradient_tape"
CELLS = ["test_square_grad", "test_sum_squared_grad", "test_train_step", "test_fit_line"]
POINTS = {"test_square_grad": 2, "test_sum_squared_grad": 2, "test_train_step": 3, "test_fit_line": 3}
FORGED_NAME = "[M01: evil\x1b[31m]"


# ---------------------------------------------------------------- real messages

def square_grad_unwatched(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        y = x * x
    return tape.gradient(y, x)


def square_grad_no_cast(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)


def sum_squared_grad_unwatched(x):
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x)
        z = y ** 2
    return tape.gradient(z, x)


def message(check, fn, mistake) -> str:
    """The message a failed graded cell keeps: the grader's ``"<ename>: <evalue>"``, on one line,
    escaped and cut as run/gradebook.py's failure_messages does."""
    with pytest.raises(CheckFailed) as info:
        check(fn)
    assert info.value.mistake == mistake, str(info.value)
    return printable(" ".join(f"{type(info.value).__name__}: {info.value}".split()))[:600]


@pytest.fixture(scope="module")
def real():
    return {"M01": message(tapes.check_square_grad, square_grad_unwatched, "M01"),
            "M02": message(tapes.check_square_grad, square_grad_no_cast, "M02"),
            "M01 sum": message(tapes.check_sum_squared_grad, sum_squared_grad_unwatched, "M01")}


def grade(student, messages=(), assignment=A, outcome=Outcome.GRADED, cells=CELLS) -> NotebookGrade:
    """A notebook of ``assignment``: full points on every cell but those of ``messages``."""
    messages = dict(messages)
    scores = {c: (0 if c in messages else POINTS.get(c, 1), POINTS.get(c, 1)) for c in cells}
    return NotebookGrade(student, assignment, assignment, scores=scores, messages=messages,
                         executed=outcome is Outcome.GRADED, outcome=outcome)


@pytest.fixture(scope="module")
def klass(real):
    """Six graded notebooks of 01 and two of 02, one of 01 not graded."""
    return [
        grade("amy", {"test_square_grad": real["M01"], "test_sum_squared_grad": real["M01 sum"]}),
        grade("bob", {"test_square_grad": real["M01"]}),
        grade("cat", {"test_square_grad": real["M02"],
                      "test_fit_line": "CheckFailed: [M03: variable replaced by a tensor] fit_line: w is a tensor"}),
        grade("dan", {"test_square_grad": "CheckFailed: [M999: evil\x1b[31m] square_grad: forged",
                      "test_train_step": "CheckFailed: " + FORGED_NAME + " train_step: forged name",
                      "test_fit_line": "NotImplementedError: the exercise was not answered"}),
        grade("eve", {"test_sum_squared_grad": "AssertionError: got '[M05: loss computed outside the tape]'",
                      "test_train_step": ("CheckFailed: train_step: no gradient. Note [M19: "
                                          "tf.config.run_functions_eagerly(True) left on]: ...")}),
        grade("fay"),
        grade("gus", {"test_square_grad": real["M01"]}, outcome=Outcome.KERNEL_DIED),
        grade("gus", {"test_square_grad": real["M01"]}, outcome=Outcome.UNREADABLE),
        grade("amy", {"test_grads_from_one_tape": "CheckFailed: [M04: x] y"}, assignment="02_p",
              cells=["test_grads_from_one_tape", "test_hessian"]),
        grade("bob", {"test_hessian": "CheckFailed: [M01: unwatched tf.constant] hessian"},
              assignment="02_p", cells=["test_grads_from_one_tape", "test_hessian"]),
    ]


def test_real_messages_open_with_their_catalogued_mistake(real):
    assert real["M01"].startswith("CheckFailed: [M01: unwatched tf.constant] square_grad (input ")
    assert message_mistake(real["M01"]) == "M01" and message_mistake(real["M02"]) == "M02"
    assert message_mistake(real["M01 sum"]) == "M01"
    assert message_mistake("CheckFailed: [M999: evil] x") is None  # not in the catalogue
    assert message_mistake("AssertionError: [M01: unwatched tf.constant]") is None  # not the check's
    assert message_mistake("CheckFailed: x. Note [M19: ...]") is None  # a note, not the diagnosis
    assert message_mistake(None) is None and message_mistake(b"CheckFailed: [M01: x]") is None


def test_counts_are_distinct_graded_students_per_cell_and_catalogued_id(klass):
    rows = mistake_counts(klass)
    got = [(r.assignment_id, r.grade_id, r.mistake_id, r.mistake_name, r.students, r.graded) for r in rows]
    assert got == [
        # 01: sorted cells by default (no cell_order); within a cell most students first
        (A, "test_fit_line", "M03", "variable replaced by a tensor", 1, 6),
        (A, "test_square_grad", "M01", "unwatched tf.constant", 2, 6),  # gus's notebooks not graded
        (A, "test_square_grad", "M02", "integer input to the tape", 1, 6),
        (A, "test_sum_squared_grad", "M01", "unwatched tf.constant", 1, 6),
        (A, "test_train_step", "M01", "unwatched tf.constant", 1, 6),  # dan: catalogue's name, not his
        ("02_p", "test_grads_from_one_tape", "M04", MISTAKES["M04"], 1, 2),
        ("02_p", "test_hessian", "M01", "unwatched tf.constant", 1, 2),
    ]
    square = [r for r in rows if r.grade_id == "test_square_grad"]
    assert [r.share for r in square] == [2 / 6, 1 / 6]
    assert all(0 <= r.share <= 1 for r in rows)
    assert not any(r.mistake_id in ("M999", "M05", "M19") for r in rows)  # forged, echoed, a note
    assert all(r.mistake_name == MISTAKES[r.mistake_id] for r in rows)


def test_a_student_is_counted_once_and_only_graded_notebooks_count(real):
    twice = [grade("amy", {"test_square_grad": real["M01"]}), grade("amy", {"test_square_grad": real["M01"]}),
             grade("bob", outcome=Outcome.TIMED_OUT), grade("cat", outcome=Outcome.NOT_SUBMITTED)]
    [row] = mistake_counts(twice)
    assert (row.students, row.graded, row.share) == (1, 1, 1.0)
    assert mistake_counts([]) == [] and summary_lines([]) == []


def test_exercises_come_in_notebook_order(klass):
    order = {A: ["test_square_grad", "test_sum_squared_grad", "test_train_step", "test_fit_line"]}
    rows = mistake_counts(klass, cell_order=order)
    assert [(r.grade_id, r.mistake_id) for r in rows if r.assignment_id == A] == [
        ("test_square_grad", "M01"), ("test_square_grad", "M02"), ("test_sum_squared_grad", "M01"),
        ("test_train_step", "M01"), ("test_fit_line", "M03")]
    # a cell the order does not list comes after the listed ones; another assignment: sorted
    rows = mistake_counts(klass, cell_order={A: ["test_train_step", "test_square_grad"]})
    assert [r.grade_id for r in rows if r.assignment_id == A] == [
        "test_train_step", "test_square_grad", "test_square_grad", "test_fit_line", "test_sum_squared_grad"]
    assert [r.grade_id for r in rows if r.assignment_id == "02_p"] == ["test_grads_from_one_tape", "test_hessian"]


def test_summary_lines(klass):
    order = {A: CELLS}
    lines = summary_lines(mistake_counts(klass, cell_order=order))
    assert lines == [
        HEADING,
        f"  {A} / square_grad: 33% M01 unwatched tf.constant (2/6); 17% M02 integer input to the tape (1/6)",
        f"  {A} / sum_squared_grad: 17% M01 unwatched tf.constant (1/6)",
        f"  {A} / train_step: 17% M01 unwatched tf.constant (1/6)",
        f"  {A} / fit_line: 17% M03 variable replaced by a tensor (1/6)",
        f"  02_p / grads_from_one_tape: 50% M04 {MISTAKES['M04']} (1/2)",
        "  02_p / hessian: 50% M01 unwatched tf.constant (1/2)",
    ]
    text = "\n".join(lines)
    half = summary_lines([MistakeCount(A, "test_fit_line", "M03", MISTAKES["M03"], 1, 8)])
    assert half[1] == f"  {A} / fit_line: 13% M03 variable replaced by a tensor (1/8)"  # halves up
    assert "evil" not in text and "M999" not in text and "\x1b" not in text


def test_lines_escape_what_a_submission_chose():
    """Cell and assignment names come from the notebooks: escaped like every report string."""
    row = MistakeCount("01\x1b[2J", "test_x\r\nforged line", "M01", MISTAKES["M01"], 1, 1)
    lines = summary_lines([row])
    assert len(lines) == 2 and not set("".join(lines)) & {"\x1b", "\r", "\n"}
    assert "\\x1b[2J" in lines[1] and "\\r\\n" in lines[1]


def test_csv_header_and_rows(klass, tmp_path):
    path = write_csv(mistake_counts(klass, cell_order={A: CELLS}), tmp_path / "mistakes_by_exercise.csv")
    with open(path, newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    assert header == CSV_HEADER == ["assignment_id", "grade_id", "mistake_id", "mistake_name", "students",
                                    "graded", "share"]
    assert rows[:2] == [[A, "test_square_grad", "M01", "unwatched tf.constant", "2", "6", "0.3333"],
                        [A, "test_square_grad", "M02", "integer input to the tape", "1", "6", "0.1667"]]
    assert rows[-1] == ["02_p", "test_hessian", "M01", "unwatched tf.constant", "1", "2", "0.5000"]
    assert len(rows) == 7 and "\x1b" not in path.read_text()
    # a cell that would start a formula in a spreadsheet is quoted
    write_csv([MistakeCount("=cmd()", "test_x", "M01", MISTAKES["M01"], 1, 1)], tmp_path / "f.csv")
    assert (tmp_path / "f.csv").read_text().splitlines()[1].startswith("'=cmd()")


def test_plot_writes_a_png(klass, tmp_path):
    from PIL import Image

    counts = mistake_counts(klass, cell_order={A: CELLS})
    counts.append(MistakeCount(A, "test_$x$\x1b", "M02", MISTAKES["M02"], 1, 6))  # odd name: shown as text
    for name, rows in (("mistakes.png", counts), ("empty.png", [])):
        path = plot(rows, tmp_path / name)
        assert path.stat().st_size > 1000
        with Image.open(path) as image:
            assert image.format == "PNG" and image.size[0] > 200 and image.size[1] > 100


# ---------------------------------------------------------------- the sample class

def _release_order(assignment_id: str) -> list[str]:
    notebook = json.loads((ROOT / "notebooks" / assignment_id / f"{assignment_id}.ipynb").read_text())
    return [c["metadata"]["nbgrader"]["grade_id"] for c in notebook["cells"]
            if c.get("metadata", {}).get("nbgrader", {}).get("grade")]


def _sample_class() -> list[NotebookGrade]:
    """A grade per sample student and assignment, its messages what the expected mistakes say
    (the catalogue's wording), and the invalid files as UNREADABLE notebooks."""
    grades = []
    for assignment_id, spec in EXPECTED.items():
        for student_id, points in spec["points"].items():
            mistakes = spec.get("mistakes", {}).get(student_id, {})
            messages = {cell: f"CheckFailed: [{m}: {MISTAKES[m]}] {cell.removeprefix('test_')}: ..."
                        for cell, m in mistakes.items()}
            messages.update({cell: "NotImplementedError: the exercise was not answered"
                             for cell, p in points.items() if p == 0 and cell not in messages})
            grades.append(NotebookGrade(student_id, assignment_id, assignment_id,
                                        scores={c: (p, max(p, 1)) for c, p in points.items()},
                                        messages=messages, executed=True))
    invalid = json.loads((ROOT / "tests/samples/expected/invalid.json").read_text())
    for student_id, by_assignment in invalid.items():
        for assignment_id in by_assignment:
            grades.append(NotebookGrade(student_id, assignment_id, assignment_id, problem="not a notebook",
                                        outcome=Outcome.UNREADABLE))
    return grades


def test_the_sample_class_counts_match_its_expected_mistakes(tmp_path):
    order = {a: _release_order(a) for a in EXPECTED}
    rows = mistake_counts(_sample_class(), cell_order=order)
    want = {}
    for assignment_id, spec in EXPECTED.items():
        for cells in spec.get("mistakes", {}).values():
            for cell, mistake in cells.items():
                want[assignment_id, cell, mistake] = want.get((assignment_id, cell, mistake), 0) + 1
    assert {(r.assignment_id, r.grade_id, r.mistake_id): r.students for r in rows} == want
    assert sum(r.students for r in rows) == sum(len(c) for s in EXPECTED.values() for c in s["mistakes"].values())
    for r in rows:
        assert r.graded == len(EXPECTED[r.assignment_id]["points"])  # the unreadable files are not graded
        assert r.mistake_name == MISTAKES[r.mistake_id] and r.share == r.students / r.graded
    # rows follow the release: assignments sorted, cells in notebook order, most students first
    places = [(r.assignment_id, order[r.assignment_id].index(r.grade_id), -r.students) for r in rows]
    assert places == sorted(places)
    lines = summary_lines(rows)
    assert lines[0] == HEADING and len(lines) == 1 + len({(r.assignment_id, r.grade_id) for r in rows})
    assert any(line.startswith("  01_gradient_tape / square_grad: ") and "M01 unwatched tf.constant (1/" in line
               for line in lines)
    write_csv(rows, tmp_path / "mistakes_by_exercise.csv")
    assert len((tmp_path / "mistakes_by_exercise.csv").read_text().splitlines()) == len(rows) + 1
    assert plot(rows, tmp_path / "mistakes.png").stat().st_size > 1000
