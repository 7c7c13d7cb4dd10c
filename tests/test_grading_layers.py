"""The package's layout, checked from its source (ast): no import cycle, lower layers never import
higher ones, kernel-side sources never imported, no grading module past about 400 lines, and the
values the kernel side mirrors equal the host's.

CONTRIBUTING.md ("Where a change goes") states the same rules; a new module gets a layer below.
"""
import ast
import re
from pathlib import Path

from autograder.grading import defaults
from autograder.grading.kernels.bwrap import sandbox_argv

PACKAGE = Path(__file__).resolve().parents[1] / "autograder"
KERNEL_SIDE = PACKAGE / "grading" / "kernel_side"

# Each module's layer, by the longest prefix that names it: a module may import only modules of
# its own layer or lower ones. The checks are apart: they run in students' kernels.
LAYERS = [
    ("autograder.checks", 0),
    ("autograder.grading.defaults", 1), ("autograder.grading.failures", 1),
    ("autograder.grading.report_text", 1), ("autograder.grading.run.results", 1),
    ("autograder.grading.course", 2), ("autograder.grading.layout", 2),
    ("autograder.grading.intake.reading", 2),
    ("autograder.grading.kernels", 3),
    ("autograder.grading.preprocessors", 4),
    ("autograder.grading.configure", 5), ("autograder.grading.nbgrader_api", 5),
    ("autograder.grading.intake", 6), ("autograder.grading.exports", 6),
    ("autograder.grading.jobs", 7),
    ("autograder.grading.distribute", 8), ("autograder.grading.analysis", 8),
    ("autograder.grading.run", 9),
    ("autograder.grading.demo", 10),
    ("autograder.grading", 10),  # the package's own __init__
    ("autograder.cli", 11), ("autograder", 0),
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if KERNEL_SIDE in path.parents:
            continue
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The modules of ``autograder`` that ``name`` imports, anywhere in it (functions included)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")[: len(name.split(".")) - node.level + is_package]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # an attribute of a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str) -> int:
    return max((p for p in LAYERS if name == p[0] or name.startswith(p[0] + ".")),
               key=lambda p: len(p[0]))[1]


def test_the_import_graph_has_no_cycle():
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(GRAPH):
        if node not in state:
            visit(node)


def test_no_module_imports_a_higher_layer():
    wrong = [f"{a} (layer {_layer(a)}) imports {b} (layer {_layer(b)})"
             for a, targets in GRAPH.items() for b in targets if _layer(b) > _layer(a)]
    assert not wrong, "\n".join(wrong)


def test_the_checks_never_import_the_grader_and_the_worker_never_the_client():
    for name, targets in GRAPH.items():
        if name.startswith("autograder.checks"):
            assert not any(t.startswith("autograder.grading") for t in targets), name
        if name.startswith(("autograder.grading.jobs", "autograder.grading.kernels")):
            assert not any(t.startswith(("autograder.grading.run", "autograder.grading.configure"))
                           for t in targets), name


def test_the_kernel_side_is_never_imported_and_imports_nothing_of_the_grader():
    sources = sorted(KERNEL_SIDE.glob("*.py"))
    assert {p.stem for p in sources} >= {"warm_template", "integrity_probe", "syscalls"}
    assert not (KERNEL_SIDE / "__init__.py").exists()  # not a package: nothing can import it
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"(import|from)\s+\S*kernel_side", text), path
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.startswith("autograder.grading") for n in names), (path, names)


def test_every_module_has_a_layer_and_no_grading_module_is_over_about_400_lines():
    long = {}
    for name, path in MODULES.items():
        assert any(name == p or name.startswith(p + ".") for p, _ in LAYERS), f"{name} has no layer"
        if name.startswith("autograder.grading"):
            lines = len(path.read_text().splitlines())
            if lines > 400:
                long[name] = lines
    for path in KERNEL_SIDE.glob("*.py"):
        lines = len(path.read_text().splitlines())
        if lines > 400:
            long[path.name] = lines
    assert not long, long


def test_no_import_is_hidden_in_a_function_but_the_command_lines():
    """Imports of the package inside functions are how cycles hid; only ``course``'s command
    line defers them (so that ``course --help`` answers before TensorFlow and nbgrader load)."""
    hidden = []
    for name, path in MODULES.items():
        if name == "autograder.cli":
            continue
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom) and (node.level or
                                                             (node.module or "").startswith("autograder")):
                        hidden.append(f"{name}.{fn.name}")
    assert not hidden, hidden


def _literal(path: Path, name: str):
    """The value of the module-level assignment ``name = <literal or f-string of literals>``."""
    tree = ast.parse(path.read_text())
    values: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = eval(compile(ast.Expression(node.value), str(path), "eval"),
                                              {"__builtins__": {}}, dict(values))  # literals only
            if node.targets[0].id == name:
                return values[name]
    raise AssertionError(f"{path.name} defines no {name}")


def test_the_warm_template_mirrors_the_sandbox():
    """The template runs where autograder.grading is not mounted, so it repeats a few values; a
    new mount of the sandbox must be made in the template too (each kernel gets fresh ones)."""
    template = KERNEL_SIDE / "warm_template.py"
    assert _literal(template, "WORKDIR") == defaults.WORKDIR
    assert _literal(template, "SHM_SIZE_MB") == defaults.SHM_SIZE_MB
    assert _literal(template, "MPL_CONFIG_DIR") == defaults.MPL_CONFIG_DIR
    argv = sandbox_argv(Path("/tmp/kernel-x"))
    tmpfs = {argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"}
    assert set(_literal(template, "FRESH_TMPFS")) == tmpfs, tmpfs


def test_the_warm_template_preloads_every_check_module():
    """Every check module a notebook's set-up cell may import (each holds an exercise's kernel
    half, ``collect_<name>``) is imported before the fork, so no kernel pays for it."""
    preload = next(n for n in ast.parse((KERNEL_SIDE / "warm_template.py").read_text()).body
                   if isinstance(n, ast.FunctionDef) and n.name == "preload")
    preloaded = {a.name for n in ast.walk(preload) if isinstance(n, ast.Import) for a in n.names}
    checks = {f"autograder.checks.{p.stem}" for p in (PACKAGE / "checks").glob("*.py")
              if re.search(r"^def collect_", p.read_text(), re.M)}
    assert len(checks) >= 6 and checks <= preloaded, checks - preloaded
    setups = set()
    for notebook in (PACKAGE.parent / "solutions").glob("*/*.ipynb"):
        setups |= {f"autograder.checks.{m}" for m in
                   re.findall(r"from autograder\.checks import (\w+) as checks", notebook.read_text())}
    assert setups and setups <= preloaded, setups - preloaded
