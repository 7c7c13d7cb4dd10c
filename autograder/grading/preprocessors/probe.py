"""The grader's half of the integrity check: what is sent to the kernel, and how its answer is read.

The kernel half (:mod:`.kernel_side.integrity_probe`, sent as text) runs through the grader's
door (:mod:`.preprocessors.door`), with the modules the door bound before any student cell ran,
and answers ``{"changed": [...], "checks": [...]}``. That answer is
the kernel's, so untrusted: :func:`findings` keeps only findings of the forms the kernel half makes,
with names the grader knows (the check modules and what their files define, read here), and
words anything else as "an unexpected form".
"""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from autograder.checks.judge import error_name

__all__ = ["SOURCE", "CHECKS_DIR", "CHANGES", "findings", "failure"]

SOURCE = (Path(__file__).parents[1] / "kernel_side" / "integrity_probe.py").read_text()

# Where the check modules are (the same path inside the sandbox, mounted read-only).
CHECKS_DIR = importlib.util.find_spec("autograder.checks").submodule_search_locations[0]


def _state_keys() -> frozenset:
    """What the integrity check may say changed: the keys of its ``_state`` (read from its
    source here, so that a kernel's own words never become a finding)."""
    for node in ast.walk(ast.parse(SOURCE)):
        if isinstance(node, ast.FunctionDef) and node.name == "_state":
            returned = [n.value for n in ast.walk(node) if isinstance(n, ast.Return)][0]
            return frozenset(k.value for k in returned.keys if isinstance(k, ast.Constant))
    return frozenset()


CHANGES = _state_keys()


def _course_names() -> frozenset:
    """The check modules' names and their top-level definitions (``autograder.checks.tapes``,
    ``autograder.checks.tapes.collect_square_grad``, ...), from the files: the only names a
    finding may carry."""
    names = set()
    for path in Path(CHECKS_DIR).rglob("*.py"):
        parts = path.relative_to(Path(CHECKS_DIR).parent.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names.add(module)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(f"{module}.{node.name}")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(f"{module}.{t.id}" for t in targets if isinstance(t, ast.Name))
    return frozenset(names)


COURSE_NAMES = _course_names()

# The forms of the integrity check's findings on the check modules, each with its words for a
# name the grader does not know: group 1 is the name the kernel put in, shown only when it is one
# of COURSE_NAMES (a module or class the notebook made is named by the notebook); what follows
# it (a path) is the kernel's and never shown.
_FORMS = [
    (re.compile(r"check module ([\w.]{1,100}) is not a file of the course \([^\n]{0,300}\)"),
     "check module {} is not a file of the course",
     "a check module the notebook made is not a file of the course"),
    (re.compile(r"([\w.]{1,150}) is not the course's code"),
     "{} is not the course's code", "a module or function the notebook named is not the course's code"),
    (re.compile(r"a class posing as the course's ([\w.]{1,150})"),
     "a class posing as the course's {}", "a class posing as one of the course's"),
]
_EXACT = {"the name 'checks' no longer refers to the course's check module",
          "the grader's entry kernel_entry.Entry was renamed or replaced"}
_UNEXPECTED = "the integrity check's answer had an unexpected form"


def _finding(text) -> str | None:
    """``text`` in the grader's words, or None when it is not a finding the check makes."""
    if not isinstance(text, str):
        return None
    if text in _EXACT:
        return text
    for form, words, unknown in _FORMS:
        found = form.fullmatch(text)
        if found:
            name = found.group(1)
            return words.format(name) if name in COURSE_NAMES else unknown
    return None


def findings(found) -> dict:
    """The integrity check's answer (untrusted: the value the kernel half returned, read as a
    literal) as ``{"changed": [...], "checks": [...]}`` holding only findings the grader can
    word; anything else is itself a finding ("an unexpected form")."""
    if not (isinstance(found, dict) and set(found) == {"changed", "checks"}
            and all(isinstance(found[k], list) for k in found)):
        return {"changed": [], "checks": [_UNEXPECTED]}
    changed = [w for w in found["changed"] if isinstance(w, str) and w in CHANGES]
    checks = [w for w in map(_finding, found["checks"]) if w is not None]
    if len(changed) != len(found["changed"]) or len(checks) != len(found["checks"]):
        checks.append(_UNEXPECTED)
    return {"changed": changed, "checks": sorted(set(checks), key=checks.index)}


def failure(ename) -> str:
    """The finding for an integrity check that raised ``ename`` (the kernel's word: shown only
    when it is an exception type of Python's or TensorFlow's own)."""
    return f"the integrity check failed: {error_name(ename)}"
