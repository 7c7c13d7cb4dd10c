"""A prediction is read first by the cell that reveals it (JSON only: no kernel).

A prediction is only a prediction while nothing has shown its answer: in every solution notebook,
the first cell after an answer cell that reads one of its ``predicted_*`` names is the reveal (it
shows the prediction beside what happens, and fails while the name is unset), never a visible
check or a graded test cell, whose verdict would tell a student which value to write.
"""
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "solutions").glob("0*/*.ipynb"))
PREDICTED = re.compile(r"\bpredicted_\w+")


def first_readers(path: Path) -> dict[str, tuple[int, dict]]:
    """Each ``predicted_*`` name an answer cell sets -> (index, nbgrader metadata) of the first
    later code cell that reads it."""
    nb = nbformat.read(path, as_version=4)
    set_at, first = {}, {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        names = set(PREDICTED.findall(cell.source))
        if meta.get("solution"):
            for name in names:
                set_at.setdefault(name, index)
            continue
        for name in names & set_at.keys() - first.keys():
            first[name] = (index, meta)
    return first


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_check_reads_a_prediction_before_its_reveal(path):
    early = {name: meta["grade_id"] for name, (_, meta) in first_readers(path).items()
             if meta.get("grade_id")}
    assert early == {}


def test_the_rule_sees_a_check_placed_before_the_reveal(tmp_path):
    """The rule itself: a notebook whose check cell comes straight after the prediction fails it."""
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell("predicted_factor = 2")
    answer.metadata["nbgrader"] = {"solution": True, "grade_id": "predict_factor"}
    check = nbformat.v4.new_code_cell("checks.check_predict_factor(predicted_factor)")
    check.metadata["nbgrader"] = {"grade_id": "predict_factor_check"}
    reveal = nbformat.v4.new_code_cell('checks.show_prediction(globals(), "predicted_factor")')
    nb.cells = [answer, check, reveal]
    path = tmp_path / "early.ipynb"
    nbformat.write(nb, path)
    assert first_readers(path)["predicted_factor"][1]["grade_id"] == "predict_factor_check"
