"""The corpus of correct answers written differently (sample students ``alt*``): every exercise
of every assignment has at least two, each differs from the solution, and each is expected to
get full marks (tests/test_grading_samples.py grades them through the real pipeline)."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from autograder.grading.demo.samples import read_answers

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "samples"
ASSIGNMENTS = sorted(p.stem for p in (SAMPLES / "expected").glob("0*.json"))
ALTERNATIVES = sorted(p.name for p in (SAMPLES / "answers").glob("alt*"))


def _answer_cells(assignment_id):
    nb = nbformat.read(ROOT / "notebooks" / assignment_id / f"{assignment_id}.ipynb", as_version=4)
    return [c.metadata.nbgrader.grade_id for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_every_exercise_has_two_correct_alternatives_with_full_marks(assignment_id):
    solutions = read_answers(SAMPLES / "answers", "ada_full", assignment_id, ROOT)
    expected = json.loads((SAMPLES / "expected" / f"{assignment_id}.json").read_text())["points"]
    written = {grade_id: 0 for grade_id in _answer_cells(assignment_id)}
    for student in ALTERNATIVES:
        own = (SAMPLES / "answers" / student / f"{assignment_id}.py").read_text()
        answers = read_answers(SAMPLES / "answers", student, assignment_id, ROOT)
        for grade_id in written:
            if f"# %% {grade_id}\n" in own and answers[grade_id] != solutions[grade_id]:
                written[grade_id] += 1
        assert expected[student] == expected["ada_full"], student
    assert {g: n for g, n in written.items() if n < 2} == {}
