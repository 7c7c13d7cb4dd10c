"""Hidden test material stays on the grader: no hidden case names a function the student package
ships, and a hidden case's function, written as source text in the hidden tests, builds and runs
as a graph (AutoGraph reads its source).

Students receive ``autograder/checks`` (the visible checks' two halves). A hidden case that names
an entry of a table of functions in that package (``cases=["branchy"]``) that no visible case uses
hands students every function only the hidden tests trace; such cases carry the function's source
instead
(:func:`autograder.checks.compare.function_from_source`).
"""
import ast
import importlib
import pkgutil
import re
from pathlib import Path

import nbformat
import pytest

import autograder.checks
from autograder.checks.compare import function_from_source

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)


def _shipped_function_tables() -> dict[str, str]:
    """Every str key of a module-level dict of autograder.checks whose values hold a callable:
    key -> 'module.TABLE'."""
    tables = {}
    for info in pkgutil.walk_packages(autograder.checks.__path__, "autograder.checks."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not isinstance(value, dict) or name.startswith("__"):
                continue
            for key, entry in value.items():
                parts = entry if isinstance(entry, tuple) else (entry,)
                if isinstance(key, str) and any(callable(p) and not isinstance(p, type) for p in parts):
                    tables[key] = f"{info.name}.{name}"
    return tables


def _hidden_strings():
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if not cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
                continue
            for block in HIDDEN.findall(cell.source):
                for node in ast.walk(ast.parse(block)):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str):
                        yield path.parent.name, cell.metadata.nbgrader.grade_id, node.value


def _visible_case_strings() -> set[str]:
    """Every string in the visible cases (``cases=`` of each ``@exercise(...)``) of the judges:
    the functions those name are shown to students anyway."""
    found = set()
    for path in (ROOT / "autograder" / "checks" / "judge").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "exercise":
                for keyword in node.keywords:
                    if keyword.arg == "cases":
                        found |= {c.value for c in ast.walk(keyword.value)
                                  if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return found


def test_no_hidden_case_names_a_function_only_hidden_tests_use_that_students_receive():
    tables, visible = _shipped_function_tables(), _visible_case_strings()
    assert "rosenbrock" in visible      # a visible case's function, given new inputs when hidden
    found = [f"{aid} {grade_id}: {text!r} is a key of {tables[text]}, and no visible case uses it"
             for aid, grade_id, text in _hidden_strings() if text in tables and text not in visible]
    assert not found, "hidden cases name functions students receive:\n" + "\n".join(found)


def test_a_hidden_function_from_source_runs_as_a_graph_with_autograph():
    tf = pytest.importorskip("tensorflow")
    source = "def clipped(x):\n    if x > 0:\n        return x * x\n    return -x\n"
    clipped = function_from_source(source, "clipped", {"tf": tf})
    graph_fn = tf.function(clipped)
    assert float(graph_fn(tf.constant(3.0))) == 9.0
    assert float(graph_fn(tf.constant(-2.0))) == 2.0      # the tensor `if` became a tf.cond
    ops = {op.type for op in graph_fn.get_concrete_function(tf.TensorSpec([], tf.float32)).graph.get_operations()}
    assert ops & {"If", "StatelessIf"}


def test_source_without_the_named_function_raises_key_error():
    with pytest.raises(KeyError):
        function_from_source("def other(x):\n    return x\n", "clipped", {})
