"""Grading skips the cells tagged ``demo`` (CONTRIBUTING.md): a name such a cell binds must not be
read by a later cell that grading runs, or that cell would fail with a NameError in every
student's feedback. tests/test_grading_samples.py shows, by grading, that skipping changes no
grade; this reads every solution notebook and names the cell and the name where the rule breaks.
"""
import ast
import json
import symtable
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from autograder.grading.defaults import DEMO_TAG

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "solutions").glob("*/*.ipynb"))


def _names(source: str) -> tuple[set[str], set[str]]:
    """``(bound, read)`` of one cell, magics turned into Python as IPython runs them: the names it
    binds in the notebook's namespace (assignments, loops, imports, defs), and those it reads from
    that namespace before (or without) binding them itself: top-level reads that come before the
    cell's first binding of the name, and globals that the functions and classes it defines read
    and the cell itself does not bind."""
    python = TransformerManager().transform_cell(source)
    table = symtable.symtable(python, "<cell>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()
             or s.is_namespace()}
    first_store, first_load = {}, {}
    for node in ast.walk(ast.parse(python)):
        if isinstance(node, ast.Name):
            seen = first_store if isinstance(node.ctx, (ast.Store, ast.Del)) else first_load
            seen[node.id] = min(seen.get(node.id, (1 << 30, 0)), (node.lineno, node.col_offset))
    read_at_top = {s.get_name() for s in table.get_symbols() if s.is_referenced()
                   and first_load.get(s.get_name(), (1 << 30, 0)) < first_store.get(s.get_name(), (1 << 30, 0))}

    def nested(t):
        for child in t.get_children():
            yield child
            yield from nested(child)
    read_inside = {s.get_name() for child in nested(table) for s in child.get_symbols()
                   if s.is_referenced() and s.is_global()}
    return bound, read_at_top | (read_inside - bound)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_no_cell_grading_runs_reads_a_name_only_a_demo_cell_binds(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    only_from_demo: dict[str, int] = {}  # name -> the demo cell that last bound it
    broken = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        bound, read = _names("".join(cell["source"]))
        if DEMO_TAG in cell["metadata"].get("tags", []):
            only_from_demo.update(dict.fromkeys(bound, index))
            continue
        broken += [f"cell {index} reads {name!r}, bound only by demo cell {only_from_demo[name]}"
                   for name in sorted(read & set(only_from_demo))]
        for name in bound:
            only_from_demo.pop(name, None)
    assert not broken, broken


def test_the_rule_catches_a_plot_cells_name_read_later():
    # The cell split in 05 (issue 30): the NumPy descent became a demo; the TensorFlow loop after
    # it must not read its losses.
    demo = "losses_numpy = []\nfor step in range(3):\n    losses_numpy.append(step)"
    later = "%matplotlib inline\ndef plot():\n    return losses_numpy\nlosses_tf = [1.0]\nplot()"
    rebinding = "losses_numpy = [2.0]\nprint(losses_numpy)"
    assert "losses_numpy" in _names(demo)[0]
    assert "losses_numpy" in _names(later)[1]
    assert "losses_numpy" not in _names(rebinding)[1]
