"""Kernel-side half of the integrity check (see :class:`~.preprocessors.GradingExecute`).

This file is not imported by the grader: its source is sent to the grading kernel and run there,
silently, before every cell, in a namespace of its own. ``probe(token)`` returns what changed in
the interpreter since the last probe (IPython input and AST transformers, custom exception
handlers, event hooks, excepthook/displayhook, trace functions, import hooks, builtins, IPython or
kernel methods replaced on the instance) and whether the course's check modules still hold the
code on disk. Student code runs in the same interpreter and could defeat this; it is evidence for
review, never a score.
"""
import builtins
import sys

from IPython import get_ipython


def _ids(items):
    return [id(item) for item in items]


def _state():
    ip = get_ipython()
    kernel = getattr(ip, "kernel", None)

    def shadowed(obj):  # methods of the class replaced by attributes of the instance
        return sorted(k for k, v in vars(obj).items() if callable(v) and callable(getattr(type(obj), k, None)))

    return {
        "an IPython input transformer": _ids(ip.input_transformers_cleanup) + _ids(ip.input_transformers_post),
        "an IPython AST transformer": _ids(ip.ast_transformers),
        "a custom exception handler": [repr(ip.custom_exceptions)],
        "an IPython event hook": sorted((name, _ids(cbs)) for name, cbs in ip.events.callbacks.items()),
        "sys.excepthook or sys.displayhook": _ids([sys.excepthook, sys.displayhook]),
        "a trace or profile function": _ids([sys.gettrace(), sys.getprofile()]),
        "an import hook": _ids(sys.meta_path) + _ids(sys.path_hooks),
        "a builtin": sorted((k, id(v)) for k, v in vars(builtins).items() if not k.startswith("_grader")),
        "a method of the IPython shell": shadowed(ip),
        "a method of the kernel": shadowed(kernel) if kernel is not None else [],
        "a kernel message handler": sorted(
            (k, getattr(getattr(v, "__func__", v), "__qualname__", "?"))
            for k, v in getattr(kernel, "shell_handlers", {}).items()),
    }


def _check_modules():
    """Findings on the course's check modules: each top-level function and class defined in a
    module's file on disk must be that module's attribute with the same code."""
    import ast
    import inspect
    import types

    found = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("autograder.checks.") or module is None:
            continue
        path = getattr(module, "__file__", None)
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
        except (OSError, TypeError):
            found.append(f"check module {name} has no readable file ({path})")
            continue
        compiled = compile(source, path, "exec")
        fresh = {c.co_name: c for c in compiled.co_consts if isinstance(c, types.CodeType)}
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                value = vars(module).get(node.name)
                if isinstance(node, ast.ClassDef):
                    ok = isinstance(value, type) and value.__module__ == name
                else:  # a decorated function is compared through its __wrapped__
                    inner = inspect.unwrap(value) if callable(value) else value
                    code = getattr(inner, "__code__", None)
                    same_code = code is not None and node.name in fresh and \
                        code.co_code == fresh[node.name].co_code and \
                        code.co_consts == fresh[node.name].co_consts
                    ok = getattr(inner, "__module__", None) == name and (
                        same_code or (node.decorator_list and inner is value))
                if not ok:
                    found.append(f"{name}.{node.name} is not the course's code")
    user_checks = get_ipython().user_ns.get("checks")
    if user_checks is not None and (
            not isinstance(user_checks, types.ModuleType)
            or sys.modules.get(getattr(user_checks, "__name__", "")) is not user_checks
            or not user_checks.__name__.startswith("autograder.checks.")):
        found.append("the name 'checks' no longer refers to the course's check module")
    return found


def probe(token, check_modules):
    """``{"changed": what changed since the last probe, "checks": findings on the check modules
    (when ``check_modules``)}``. The last state is kept on ``builtins`` under ``token``."""
    holder = vars(builtins).setdefault(token, {})
    now = _state()
    before = holder.get("state")
    holder["state"] = now
    return {"changed": [] if before is None else [w for w in now if now[w] != before.get(w)],
            "checks": _check_modules() if check_modules else []}
