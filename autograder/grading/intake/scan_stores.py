"""What the static scan (:mod:`.intake.scan`) reads of the stores a cell makes: every target of
every statement or expression that binds, wherever it appears (``for`` and ``with`` targets,
comprehensions, ``:=``, ``except ... as``, ``case`` patterns, imports, nested and starred
targets), the item stores into a namespace, and what poses as another class or function.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

from autograder.grading.intake.scan_rules import CLASS_POSING_NAMES, NAMESPACE_CALLS, NAMESPACE_METHODS, POSING_NAMES

POSES = "poses as another class or function"

# Python 3.12 added ``type X = ...``; its name is a store like any other.
_TYPE_ALIAS = getattr(ast, "TypeAlias", ())
_NEW_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def root(node: ast.AST) -> ast.AST:
    """The expression an attribute, item or call chain starts from (``x`` of ``x.a[0].b()``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def root_name(node: ast.AST, aliases: dict[str, str] | None = None) -> str | None:
    """The name an attribute chain starts from, through ``aliases`` (local name -> module)."""
    start = root(node)
    if not isinstance(start, ast.Name):
        return None
    return (aliases or {}).get(start.id, start.id)


def import_bindings(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """The names one import statement binds, each mapped to what it binds them to:
    ``import a.b`` binds ``a`` to ``a``, ``import a.b as c`` binds ``c`` to ``a.b``, ``from a
    import b as c`` binds ``c`` to ``a.b``. A ``*`` binds nothing it names (the scan flags it)."""
    if isinstance(node, ast.Import):
        return {a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                for a in node.names}
    module = "." * node.level + (node.module or "")
    return {a.asname or a.name: f"{module}.{a.name}" for a in node.names if a.name != "*"}


def _leaves(target: ast.expr) -> Iterator[ast.expr]:
    """The names, attributes and items a target stores into, through tuples, lists and ``*``."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _leaves(element)
    elif isinstance(target, ast.Starred):
        yield from _leaves(target.value)
    else:
        yield target


def targets_of(node: ast.AST) -> Iterator[tuple[int, ast.expr | str]]:
    """``(line, target)`` for each target ``node`` binds or deletes, if it is a binding node:
    an expression (``ast.Name``, ``ast.Attribute``, ``ast.Subscript``) for an assignment of any
    kind, ``del``, a ``for``, ``with ... as``, comprehension or ``:=`` target (tuples, lists and
    ``*`` unpacked at any depth), or a name (``str``) for an import, a ``def`` or ``class``, an
    ``except ... as`` or a ``case`` pattern's capture. Nothing for any other node."""
    if isinstance(node, (ast.Assign, ast.Delete)):
        expressions = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension,
                           ast.NamedExpr)):
        expressions = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        expressions = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, _TYPE_ALIAS):
        expressions = [node.name]
    else:
        expressions = []
    for expression in expressions:
        for leaf in _leaves(expression):
            yield leaf.lineno, leaf
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = list(import_bindings(node))
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler,
                           ast.MatchAs, ast.MatchStar)):
        names = [node.name] if node.name else []
    elif isinstance(node, ast.MatchMapping):
        names = [node.rest] if node.rest else []
    else:
        names = []
    for name in names:
        yield node.lineno, name


def binding_targets(tree: ast.AST) -> Iterator[tuple[ast.AST, int, ast.expr | str]]:
    """``(node, line, target)`` for every target (:func:`targets_of`) of every binding node in
    ``tree``, nested functions and classes included."""
    for node in ast.walk(tree):
        for line, target in targets_of(node):
            yield node, line, target


def bound_name(target: ast.expr | str) -> str | None:
    """The name a target binds (``x`` of ``x = ...``, of ``except E as x``), None for an
    attribute or item store."""
    return target if isinstance(target, str) else target.id if isinstance(target, ast.Name) else None


def bound_values(node: ast.AST) -> list[ast.expr]:
    """The expressions whose values a binding node gives its targets as they are: the value of
    an assignment or ``:=`` (and each element of a tuple or list written there), the elements of
    a tuple, list or set a ``for`` or comprehension iterates over."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        values, source = [node.value] if node.value is not None else [], node.value
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        values, source = [], node.iter
    else:
        return []
    if isinstance(source, (ast.Tuple, ast.List, ast.Set)):
        values += [e.value if isinstance(e, ast.Starred) else e for e in source.elts]
    return values


def bound_to(bindings: list, is_one, names: set) -> set:
    """``names`` and every name of ``bindings`` (what :func:`binding_targets` yields) bound,
    directly or through names found so far, to a value for which ``is_one(value, found)`` holds
    (``found``: the names so far; ``is_one`` turns true only when the name a value starts from
    is found). Linear in the bindings: a binding is read again only when its value's name is found."""
    names = set(names)
    todo, waiting = [], {}  # waiting: a name -> the bindings whose values start from it
    for node, _, target in bindings:
        name, values = bound_name(target), bound_values(node)
        if name and values:
            todo.append((name, values))
            for value in values:
                waiting.setdefault(_first_name(value), []).append((name, values))
    while todo:
        name, values = todo.pop()
        if name not in names and any(is_one(value, names) for value in values):
            names.add(name)
            todo += waiting.pop(name, [])
    return names


def _first_name(node: ast.AST) -> str | None:
    """The name a chain of attributes starts from (``a`` of ``a.b.c``), None if none."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def is_module_part(node: ast.AST, roots: set) -> bool:
    """Whether ``node`` is a name in ``roots`` or a chain of attributes of one (no call, no item)."""
    return _first_name(node) in roots


def store_flags(bindings: list, course: dict, aliases: dict, held: set) -> list[tuple[int, str]]:
    """``(line, reason)`` for the targets of ``bindings`` (what :func:`binding_targets` yields):
    a name of ``course`` (the course's names -> what they import, or None) rebound, by an import
    only if to something else; an attribute changed on a module, on a name of ``aliases`` (this
    cell's ``import`` names -> modules) or ``held`` (names bound to a part of a module), or on
    anything reached through a call (``type(x).f = g``); a module given another name."""
    found = []
    for node, line, target in bindings:
        name = bound_name(target)
        if name in course and not (isinstance(node, (ast.Import, ast.ImportFrom)) and
                                   course[name] in (None, import_bindings(node)[name])):
            found.append((line, f"rebinds {name}, a name the course imports"))
        if isinstance(target, ast.Attribute):  # item stores (plt.rcParams[...] = ...) are ordinary
            start = root(target)
            through_call = any(isinstance(n, ast.Call) for n in ast.walk(target.value))
            if through_call or root_name(target, aliases) in set(course) | set(aliases.values()) or \
                    (isinstance(start, ast.Name) and (start.id in aliases or start.id in held)):
                found.append((line, f"changes {ast.unparse(target)[:60]}, part of a module "
                                    "or of the interpreter"))
        found += [(v.lineno, f"aliases {v.id}, a module") for v in bound_values(node)
                  if isinstance(v, ast.Name) and (v.id in course or v.id in aliases)]
    return found


def _is_namespace(node: ast.AST) -> bool:
    """Whether ``node`` is a namespace held as a dict: ``vars(x)``, ``globals()``, ``locals()``,
    ``x.__dict__``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
            node.func.id in NAMESPACE_CALLS) or \
        (isinstance(node, ast.Attribute) and node.attr == "__dict__")


def _class_scope(cls: ast.ClassDef) -> Iterator[ast.AST]:
    """The nodes of a class body that run in the class's own namespace (not in the functions
    and classes it defines)."""
    todo = list(cls.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _NEW_SCOPES):
            todo.extend(ast.iter_child_nodes(node))


def namespace_and_posing_flags(tree: ast.AST, bindings: list) -> list[tuple[int, str]]:
    """``(line, reason)`` for each item store into, or change through a method of, a namespace
    (``vars(m)["f"] = g``, ``del x.__dict__["f"]``, ``globals().update(...)``), and for each
    construct that poses as another class or function: a store of ``__class__``,
    ``__qualname__``, ``__module__`` or ``__name__`` on any object (``E.__qualname__ = "Old"``,
    ``for f.__name__ in ...``), a class body that binds one of those (or ``__instancecheck__``,
    ``__subclasscheck__``) in any way, a name of those bound anywhere else (``__name__ = ...``
    names the module of every class defined after it), a dict key or keyword of that name.
    ``bindings``: what :func:`binding_targets` yields for ``tree``."""
    found, classes = [], {}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in NAMESPACE_METHODS and _is_namespace(node.func.value):
            found.append((line, f"changes {ast.unparse(node.func.value)[:60]} through "
                                f".{node.func.attr}, a namespace (vars, __dict__, globals)"))
        if isinstance(node, ast.Dict):
            found += [(key.lineno, f"sets {key.value} in a dict: {POSES}") for key in node.keys
                      if isinstance(key, ast.Constant) and key.value in POSING_NAMES]
        if isinstance(node, ast.Call):
            found += [(line, f"sets {k.arg} as a keyword: {POSES}") for k in node.keywords
                      if k.arg in POSING_NAMES]
        if isinstance(node, ast.ClassDef):
            classes[node] = [(line, name) for scoped in _class_scope(node) for line, target in targets_of(scoped)
                             if (name := bound_name(target)) in CLASS_POSING_NAMES]
    for cls, posing in classes.items():
        found += [(line, f"sets {name} in the body of class {cls.name}: {POSES}") for line, name in posing]
        if posing:
            found.append((cls.lineno, f"class {cls.name} {POSES} (its body sets "
                                      f"{', '.join(sorted({name for _, name in posing}))})"))
    in_classes = {pair for posing in classes.values() for pair in posing}
    for _, line, target in bindings:
        name = bound_name(target)
        if name in POSING_NAMES and (line, name) not in in_classes:
            found.append((line, f"rebinds {name}: {POSES}"))
        if isinstance(target, ast.Subscript) and _is_namespace(target.value):
            found.append((line, f"changes {ast.unparse(target)[:60]}, an item of a namespace "
                                "(vars, __dict__, globals)"))
        elif isinstance(target, ast.Attribute) and target.attr in POSING_NAMES:
            found.append((line, f"sets {ast.unparse(target)[:60]}: {POSES}"))
    return found
