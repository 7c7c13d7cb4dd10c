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

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "solutions").glob("*/*.ipynb"))


def _bound_at_top(tree: ast.Module) -> set[str]:
    """Names a cell binds in the notebook's namespace (assignments, loops, imports, defs)."""
    table = symtable.symtable(ast.unparse(tree), "<cell>", "exec")
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()
            or s.is_namespace()}


def _read_before_bound(tree: ast.Module) -> set[str]:
    """Names a cell reads from the notebook's namespace before (or without) binding them itself:
    top-level reads that come before the cell's first binding of the name, and globals that the
    functions and classes it defines read and the cell itself does not bind."""
    table = symtable.symtable(ast.unparse(tree), "<cell>", "exec")
    first_store, first_load = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            seen = first_store if isinstance(node.ctx, (ast.Store, ast.Del)) else first_load
            seen[node.id] = min(seen.get(node.id, (1 << 30, 0)), (node.lineno, node.col_offset))
    top = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    read_at_top = {n for n in top if n in first_load and first_load[n] < first_store.get(n, (1 << 30, 0))}

    def nested(t):
        for child in t.get_children():
            yield child
            yield from nested(child)
    read_inside = {s.get_name() for child in nested(table) for s in child.get_symbols()
                   if s.is_referenced() and s.is_global()}
    return read_at_top | (read_inside - _bound_at_top(tree))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_no_cell_grading_runs_reads_a_name_only_a_demo_cell_binds(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    only_from_demo: dict[str, int] = {}  # name -> the demo cell that last bound it
    broken = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line
                                   for line in source.splitlines()))
        if "demo" in cell["metadata"].get("tags", []):
            only_from_demo.update(dict.fromkeys(_bound_at_top(tree), index))
            continue
        broken += [f"cell {index} reads {name!r}, bound only by demo cell {only_from_demo[name]}"
                   for name in sorted(_read_before_bound(tree) & set(only_from_demo))]
        for name in _bound_at_top(tree):
            only_from_demo.pop(name, None)
    assert not broken, broken


def test_the_rule_catches_a_plot_cells_name_read_later():
    # The cell split in 05 (issue 30): the NumPy descent became a demo; the TensorFlow loop after
    # it must not read its losses.
    demo = ast.parse("losses_numpy = []\nfor step in range(3):\n    losses_numpy.append(step)")
    later = ast.parse("def plot():\n    return losses_numpy\nlosses_tf = [1.0]\nplot()")
    rebinding = ast.parse("losses_numpy = [2.0]\nprint(losses_numpy)")
    assert "losses_numpy" in _bound_at_top(demo)
    assert "losses_numpy" in _read_before_bound(later)
    assert "losses_numpy" not in _read_before_bound(rebinding)
