"""Static scan of the cells a student can edit, for constructs that no exercise of this course
needs and that could change how a notebook is graded (tamper evidence, for review).

The scan is advice: a flag never changes a score, the instructor reads the reason and the line,
and decides. It reads the notebook that grading runs (the staged copy, its nbgrader metadata put
back as released, :func:`~.intake.submissions.staged_notebook`), not only the file as submitted, and it
fails closed: a cell it cannot parse, or a notebook it cannot read, is itself a flag.
"""
from __future__ import annotations

import ast
import builtins
import copy
import re
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

from autograder.grading.defaults import MAX_SCANNED_CELL_CHARS, MAX_SCANNED_NOTEBOOK_CHARS
from autograder.grading.intake.align import Unalignable, align_with_release
from autograder.grading.intake.reading import read_notebook
from autograder.grading.intake.repair import grade_id_of, repair_grade_cells, restored_cells
from autograder.grading.intake.scan_rules import (
    ALLOWED_FROM,
    ALLOWED_MAGICS,
    MACHINERY,
    MACHINERY_STRING,
    ORDINARY_DUNDERS,
    SHELL_NAMES,
    SUSPECT_ATTRIBUTES,
    SUSPECT_CALLS,
    SUSPECT_METHODS,
    SUSPECT_MODULES,
    SUSPECT_NAMES,
    SYSTEM_ATTRIBUTES,
    SYSTEM_MODULES,
)
from autograder.grading.intake.scan_stores import (
    binding_targets,
    bound_to,
    import_bindings,
    is_module_part,
    namespace_and_posing_flags,
    store_flags,
)
from autograder.grading.intake.scan_stores import root as _root
from autograder.grading.intake.scan_stores import root_name as _root_name


def _parse(source: str) -> ast.AST:
    """The syntax tree of a cell as IPython runs it: magics and ``!`` commands translated,
    top-level ``await`` allowed."""
    return compile(TransformerManager().transform_cell(source), "<cell>", "exec",
                   ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def _unscannable(error: BaseException) -> str:
    """Why a cell could not be scanned, from what parsing or scanning it raised."""
    if isinstance(error, SyntaxError):
        return f"it does not parse as Python ({error.msg}, line {error.lineno})"
    if isinstance(error, (RecursionError, MemoryError)):
        return f"it is nested too deeply for Python's parser ({type(error).__name__})"
    return f"{type(error).__name__}: {str(error)[:200]}"


def scan_source(source: str, imported) -> list[tuple[int, str]]:
    """``(line, reason)`` for each suspect construct in one cell's ``source`` (IPython syntax:
    magics and ``!`` commands are translated first). ``imported`` maps the names the course's own
    cells import (``checks``, ``tf``, ...) to what they import (or is a set of such names): binding
    them to something else, or changing their attributes, is flagged.

    Fails closed: a cell that cannot be scanned (it does not parse, holds a null byte, is nested
    so deeply that parsing raises RecursionError or MemoryError, or is longer than
    :data:`MAX_SCANNED_CELL_CHARS`) gives the one flag ``(0, "could not be scanned: <why>")``,
    line 0 standing for the whole cell. Never raises."""
    if len(source) > MAX_SCANNED_CELL_CHARS:
        return [(0, f"could not be scanned: it holds {len(source) // 1000} kB of code, more than "
                    f"the {MAX_SCANNED_CELL_CHARS // 1000} kB the scan reads in a cell")]
    try:
        return _scan_source(source, imported)
    except Exception as error:  # SyntaxError, RecursionError, MemoryError, anything
        return [(0, f"could not be scanned: {_unscannable(error)}")]


def _machinery(path: str | None) -> str | None:
    """The module of the checks' machinery (:data:`MACHINERY`) that the dotted ``path`` is in."""
    parts = (path or "").split(".")
    return ".".join(parts[:3]) if parts[:2] == ["autograder", "checks"] and len(parts) > 2 and \
        parts[2] in MACHINERY else None


def _dotted(node: ast.Attribute, names: dict) -> str | None:
    """The dotted path of an attribute chain whose first name ``names`` maps to a module path."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and names.get(node.id):
        return ".".join([names[node.id], *reversed(attrs)])
    return None


def _scan_source(source: str, imported) -> list[tuple[int, str]]:
    course = imported if isinstance(imported, dict) else dict.fromkeys(imported)
    tree = _parse(source)
    aliases = {}  # local name -> the module it was imported as, in this cell
    names = {}  # local name -> what an import of this cell binds it to (a module or a part of one)
    nodes = list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(import_bindings(node))
            aliases.update(import_bindings(node) if isinstance(node, ast.Import) else {})
    paths = {**{k: v for k, v in course.items() if v}, **names}
    bindings = list(binding_targets(tree))
    # Names the course or this cell imports, or bound to a part of a module (``T = tf.GradientTape``,
    # ``for T in [tf.GradientTape]``, ``(T := tf.GradientTape)``, through other such names): a
    # store on them changes the module.
    held = bound_to(bindings, is_module_part, set(names) | set(course))
    # Names in call position (``vars(x)``); the same name anywhere else is an alias in the making.
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    magic_heads = _magic_call_heads(nodes)
    # Names bound to the class tf.GradientTape (``T = tf.GradientTape``, an import of it).
    tape_classes = bound_to(bindings, _is_tape_class, {"GradientTape"} | {
        name for name, path in names.items() if path.endswith(".GradientTape")})
    found = store_flags(bindings, course, aliases, held) + namespace_and_posing_flags(tree, bindings)
    for node in nodes:
        line = getattr(node, "lineno", 1)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [(line, r) for r in _import_flags(node)]
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in SUSPECT_CALLS and not (
                    func.id == "vars" and len(node.args) == 1 and _is_own_object(node.args[0], course, aliases)):
                found.append((line, f"calls {func.id}: {SUSPECT_CALLS[func.id]}"))
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in SUSPECT_METHODS:
                found.append((line, f"calls {name}: {SUSPECT_METHODS[name]}"))
            if name == "getattr" and len(node.args) > 1 and _suspect_getattr(node, course, aliases):
                found.append((line, "calls getattr with a computed or private name"))
            if name in ("run_line_magic", "run_cell_magic") and node.args and \
                    isinstance(node.args[0], ast.Constant) and not _allowed_magic(node):
                found.append((line, f"uses the magic %{node.args[0].value}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            found += [(line, f"names {m.group()[:60]}: the checks' machinery")
                      for m in re.finditer(MACHINERY_STRING, text)]
        elif isinstance(node, ast.Attribute):
            root = _root_name(node, aliases)
            module = _machinery(_dotted(node, paths))
            if module:
                found.append((line, f"uses {module}: the checks' machinery "
                                    f"({MACHINERY[module.split('.')[2]]})"))
            if _is_tape_class(node.value, tape_classes) and id(node) not in called and \
                    isinstance(node.ctx, ast.Load):
                # ``_g = tf.GradientTape.gradient``: a method of the class held aside reaches the
                # tape past what the checks observe (they wrap the class attribute).
                found.append((line, f"keeps {ast.unparse(node)[:60]} as a value (a method of "
                                    "GradientTape held aside escapes the checks' evidence)"))
            if node.attr in SUSPECT_ATTRIBUTES:
                found.append((line, f"uses .{node.attr}: {SUSPECT_ATTRIBUTES[node.attr]}"))
            elif node.attr in SYSTEM_ATTRIBUTES and root in SYSTEM_MODULES:
                found.append((line, f"uses {ast.unparse(node)[:60]}: {SYSTEM_ATTRIBUTES[node.attr]}"))
            elif node.attr.startswith("__") and node.attr not in ORDINARY_DUNDERS:
                found.append((line, f"uses .{node.attr}: Python internals"))
            elif node.attr.startswith("_") and not node.attr.startswith("__") and \
                    not _is_own_object(node.value, course, aliases):
                found.append((line, f"uses .{node.attr}: a private attribute"))
        elif isinstance(node, ast.Name) and node.id in SHELL_NAMES and \
                isinstance(node.ctx, ast.Load) and id(node) not in magic_heads:
            found.append((line, f"uses {node.id}: the shell or its history"))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                node.id in SUSPECT_CALLS | {"getattr": ""} and id(node) not in called:
            found.append((line, f"uses {node.id} as a value (an alias of it hides what it does)"))
    return sorted(set(found))


def _is_tape_class(node: ast.AST, names: set) -> bool:
    """Whether ``node`` names the class GradientTape: ``X.GradientTape`` (any module path) or a
    name in ``names`` (bound to it)."""
    return (isinstance(node, ast.Attribute) and node.attr == "GradientTape") or \
        (isinstance(node, ast.Name) and node.id in names)


def _is_own_object(node: ast.AST, course: dict, aliases: dict) -> bool:
    """Whether ``node`` is rooted in a name of the student's own (``self``, ``s``, ``Model()``),
    not in a module the course or the cell imported, a builtin (``type(x)``) or the shell."""
    root = _root(node)
    return isinstance(root, ast.Name) and root.id not in course and root.id not in aliases and \
        root.id not in SYSTEM_MODULES and root.id not in SHELL_NAMES and \
        not hasattr(builtins, root.id)


def _suspect_getattr(node: ast.Call, course: dict, aliases: dict) -> bool:
    """``getattr(obj, name)`` with a private or dunder constant, or a computed name on anything
    but a TensorFlow, Keras or NumPy namespace (``getattr(tf.keras.optimizers, name)``)."""
    name = node.args[1]
    if isinstance(name, ast.Constant):
        return str(name.value).startswith("_")
    root = _root_name(node.args[0], aliases)
    target = course.get(root, aliases.get(root, root)) or ""
    return str(target).split(".")[0] not in ("tensorflow", "keras", "numpy") or \
        any(isinstance(n, ast.Call) for n in ast.walk(node.args[0]))


def _allowed_magic(node: ast.Call) -> bool:
    """A magic an exercise may use; ``%config`` only for the inline plots' settings."""
    magic = node.args[0].value
    if magic == "config":
        arg = node.args[1] if len(node.args) > 1 else None
        return isinstance(arg, ast.Constant) and str(arg.value).strip().startswith("InlineBackend.")
    return magic in ALLOWED_MAGICS


def _import_flags(node) -> list[str]:
    """Reasons to flag one import statement: a suspect module, a name taken from ``sys``, ``os``,
    ``builtins`` or IPython, ``*``, the grader, or the checks' machinery under any spelling
    (``from autograder.checks import kernel_entry``). A course name it rebinds is flagged with
    the other stores (:func:`~.scan_stores.store_flags`)."""
    flags = []
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        top = module.split(".")[0]
        paths = [module] + [f"{module}.{alias.name}" for alias in node.names]
        if top in SUSPECT_MODULES and module not in ALLOWED_FROM:
            flags.append(f"imports from {module}: {SUSPECT_MODULES[top]}")
        for alias in node.names:
            if top in ("sys", "os", "builtins", "posix", "gc"):
                flags.append(f"imports {alias.name} from {module}: the interpreter or the system")
            if alias.name in SUSPECT_NAMES:
                flags.append(f"imports {alias.name}: {SUSPECT_NAMES[alias.name]}")
            if alias.name == "*":
                flags.append(f"imports * from {module}: names it binds may rebind the course's")
    else:
        paths = [alias.name for alias in node.names]
        for alias in node.names:
            top = alias.name.split(".")[0]
            if top in SUSPECT_MODULES:
                flags.append(f"imports {alias.name}: {SUSPECT_MODULES[top]}")
    if isinstance(node, ast.ImportFrom) and module.startswith("autograder") and "checks" not in module:
        flags.append(f"imports from {module}: the grader")
    for path in paths:
        if isinstance(node, ast.Import) and path.split(".")[0] == "autograder" and \
                not path.startswith("autograder.checks."):
            flags.append(f"imports {path}: the grader")
        if _machinery(path):
            flags.append(f"imports {_machinery(path)}: the checks' machinery "
                         f"({MACHINERY[path.split('.')[2]]})")
    return flags


def _magic_call_heads(nodes: list) -> set[int]:
    """``id`` of each name among ``nodes`` (``get_ipython``) that heads
    ``get_ipython().run_line_magic(...)`` (how IPython writes ``%matplotlib inline``) or
    ``.system(...)`` (``!cmd``): flagged, if at all, as the magic or the shell command."""
    return {id(node.value.func) for node in nodes if isinstance(node, ast.Attribute) and
            node.attr in ("run_line_magic", "run_cell_magic", "system", "getoutput") and
            isinstance(node.value, ast.Call)}


def imported_names(nb) -> dict[str, str]:
    """Names bound by import statements in the code cells of ``nb``, each mapped to what it
    imports (``{"tf": "tensorflow", "checks": "autograder.checks.tapes"}``)."""
    names = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = _parse(cell.source)
        except Exception:  # the release's own cells parse; a submission's may not
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update(import_bindings(node))
    return names


def _is_locked(cell) -> bool:
    """Whether a cell of the release is one nbgrader puts back as released when grading: locked,
    or graded without being an answer."""
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("locked") or (meta.get("grade") and not meta.get("solution")))


def _unowned_locked_metadata(nb, release) -> dict[int, str]:
    """``id(cell)`` -> reason, for each cell of ``nb`` (a submission, before staging repairs it)
    that carries the ``grade_id`` of a locked cell of ``release`` it is not: a copy of that cell's
    metadata on a second cell, or the metadata on a cell whose type or source is not the
    release's. Of several cells with one grade_id, the first that is the release's cell owns it."""
    locked = {grade_id_of(cell): cell for cell in release.cells if grade_id_of(cell) and _is_locked(cell)}
    carriers: dict[str, list] = {}
    for cell in nb.cells:
        if grade_id_of(cell) in locked:
            carriers.setdefault(grade_id_of(cell), []).append(cell)
    reasons = {}
    for grade_id, cells in carriers.items():
        original = locked[grade_id]
        owner = next((c for c in cells if c.cell_type == original.cell_type and
                      str(c.get("source", "")).strip() == original.source.strip()), None)
        for cell in cells:
            if cell is owner:
                continue
            if len(cells) > 1:
                reasons[id(cell)] = (f"carries a copy of the nbgrader metadata of the locked cell "
                                     f"'{grade_id}' ({len(cells)} cells have that grade_id)")
            else:
                what = "type" if cell.cell_type != original.cell_type else "source"
                reasons[id(cell)] = (f"carries the nbgrader metadata of the locked cell "
                                     f"'{grade_id}' with another {what} than the release's")
    return reasons


def scan_notebook(nb, release) -> list[str]:
    """Flags for review in the notebook that grading runs for the submission ``nb``: its staged
    copy (``nb`` aligned with ``release`` by :func:`~.intake.align.align_with_release` and repaired
    by :func:`~.intake.repair.repair_grade_cells`, as :func:`~.intake.submissions.stage` writes
    it), each as ``"cell N line L: reason"`` (``"cell N could not be scanned: why"`` for a cell
    that cannot be parsed), N counting the staged (and autograded) notebook's cells.

    Only course code is skipped: a locked cell of the release that is the only cell with its
    ``grade_id`` and has the release's type and source (nbgrader runs the release's version of
    it), and a cell identical to a code cell of the release. A cell that carries a locked cell's
    metadata it does not own is flagged, and scanned. Never raises: a notebook that cannot be
    scanned gives one flag that says so."""
    try:
        return _scan_notebook(nb, release)
    except Exception as error:  # fail closed: this notebook is flagged, never left unflagged
        return [f"the notebook could not be scanned: {type(error).__name__}: {str(error)[:200]}"]


def _scan_notebook(nb, release) -> list[str]:
    staged = copy.deepcopy(nb)
    unowned = _unowned_locked_metadata(staged, release)
    try:
        align_with_release(staged, release)
    except Unalignable:  # refused when staging; scanned as it is
        pass
    repair_grade_cells(staged, release)
    locked = {grade_id_of(cell) for cell in release.cells if _is_locked(cell)} - {None}
    course_code = {cell.source.strip() for cell in release.cells if cell.cell_type == "code"}
    imported = imported_names(release)
    flags = []
    budget = MAX_SCANNED_NOTEBOOK_CHARS
    for index, cell in enumerate(staged.cells):
        reason = unowned.get(id(cell))
        if reason:
            flags.append(f"cell {index + 1} {reason}")
        source = str(cell.get("source", ""))
        if cell.cell_type != "code" or (reason is None and grade_id_of(cell) in locked) or \
                source.strip() in course_code:
            continue
        if min(len(source), MAX_SCANNED_CELL_CHARS + 1) > budget:
            flags.append(f"cell {index + 1} could not be scanned: the code of the notebook is over "
                         f"the {MAX_SCANNED_NOTEBOOK_CHARS // 1000} kB the scan reads in a notebook")
            continue
        budget -= min(len(source), MAX_SCANNED_CELL_CHARS + 1)
        for line, why in scan_source(source, imported):
            flags.append(f"cell {index + 1} {why}" if line == 0 else
                         f"cell {index + 1} line {line}: {why}")
    return flags


def review_submission(submitted: Path, released: Path) -> tuple[list[str], list[str]]:
    """What the report says of the submitted notebook ``submitted`` beside its score: the cells of
    the ``released`` notebook nbgrader put back because it deleted or changed them
    (:func:`~.intake.repair.restored_cells`, once the metadata its cells lost is recovered) and the
    scan's flags for review (:func:`scan_notebook`). Never raises: what cannot be read or compared
    is a flag."""
    try:
        release = nbformat.read(released, as_version=4)
        nb = read_notebook(submitted)
        flags = scan_notebook(nb, release)
    except Exception as error:
        return [], [f"the notebook could not be scanned: {type(error).__name__}: {str(error)[:200]}"]
    try:
        align_with_release(nb, release)
        restored = restored_cells(nb, release)
    except Exception as error:
        restored = []
        flags.append("the notebook could not be compared with its release: "
                     f"{type(error).__name__}: {str(error)[:200]}")
    return restored, flags
