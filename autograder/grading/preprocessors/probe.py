"""The grader's half of the integrity check: what is sent to the kernel, and how its answer is read.

The kernel half (:mod:`.kernel_side.integrity_probe`, sent as text) runs through the grader's
door (:mod:`.preprocessors.door`), with the modules the door bound before any student cell ran,
and answers ``{"changed": [...], "checks": [...], "code": {...}, "record": (...)}``. That answer
is the kernel's, so untrusted: :func:`findings` keeps only findings of the forms the kernel half
makes, with names the grader knows (the check modules and what their files define, read here),
and words anything else as "an unexpected form". What the grader compares the kernel against is
computed here, never kept in the kernel: the digest of each check function's code, compiled from
the files (:data:`REFERENCE`), and the digest of the state the kernel recorded at the last check
(:class:`Record`).
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import importlib.util
import linecache
import os
import re
import sys
import types
from pathlib import Path

from autograder.checks.judge import error_name
from autograder.grading.preprocessors import door

__all__ = ["SOURCE", "CHECKS_DIR", "CHANGES", "DEFINITIONS", "REFERENCE", "Record", "findings", "kernel_half",
           "failure"]

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


def _check_files():
    """``(module name, path)`` of every file of the check modules."""
    for path in sorted(Path(CHECKS_DIR).rglob("*.py")):
        parts = path.relative_to(Path(CHECKS_DIR).parent.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _course_names() -> frozenset:
    """The check modules' names and their top-level definitions (``autograder.checks.tapes``,
    ``autograder.checks.tapes.collect_square_grad``, ...), from the files: the only names a
    finding may carry."""
    names = set()
    for module, path in _check_files():
        names.add(module)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(f"{module}.{node.name}")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(f"{module}.{t.id}" for t in targets if isinstance(t, ast.Name))
    return frozenset(names)


def kernel_half() -> dict:
    """The namespace of the kernel half (:data:`SOURCE`) run here, with this process's modules
    pinned in place of the door's (no shell, no course entry): its functions as the kernel has
    them, for this module and for tests."""
    pinned = {"builtins": builtins, "sys": sys, "types": types, "os": os, "linecache": linecache,
              "sha256": hashlib.sha256, "SHELL": None, "ENTRY": None}
    namespace = {"PINNED": pinned}
    exec(compile(SOURCE, "integrity_probe.py", "exec"), namespace)
    return namespace


def _code_digest():
    """The kernel half's own ``code_digest`` (run here), so that both sides digest code alike."""
    return kernel_half()["code_digest"]


def _definitions() -> tuple[dict, dict]:
    """``(DEFINITIONS, REFERENCE)``: per check module, its file's top-level functions (None) and
    classes (the names of the methods their bodies define), and the digest of each one's code as
    compiled from the file (a class: the tuple of its methods' digests)."""
    digest, definitions, reference = _code_digest(), {}, {}
    for module, path in _check_files():
        source = path.read_text()
        compiled = compile(source, str(path), "exec", dont_inherit=True)
        codes = {c.co_name: c for c in compiled.co_consts if isinstance(c, types.CodeType)}
        names, digests = definitions.setdefault(module, {}), reference.setdefault(module, {})
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef):
                names[node.name], digests[node.name] = None, digest(codes[node.name])
            elif isinstance(node, ast.ClassDef):
                body = {c.co_name: c for c in codes[node.name].co_consts if isinstance(c, types.CodeType)}
                methods = tuple(m.name for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))
                names[node.name], digests[node.name] = methods, tuple(digest(body[m]) for m in methods)
    return definitions, reference


COURSE_NAMES = _course_names()
DEFINITIONS, REFERENCE = _definitions()

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
# The grader's own finding when the state the kernel recorded at the last check is not the one found.
RECORD_CHANGED = "the integrity check's record in the kernel was changed between two checks"
RECORD_NOT_PLAIN = "the interpreter's state holds values of the notebook's own types"
NOT_PLAIN = "not plain data"  # the kernel half's digest of a record that is not plain data
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
    word, and the grader's own: each check function whose code's digest is not the one of its
    file (:data:`REFERENCE`). Anything else is itself a finding ("an unexpected form")."""
    keys = {"changed", "checks", "code", "record"}
    if not (isinstance(found, dict) and set(found) == keys and isinstance(found["code"], dict)
            and all(isinstance(found[k], list) for k in ("changed", "checks"))):
        return {"changed": [], "checks": [_UNEXPECTED]}
    changed = [w for w in found["changed"] if isinstance(w, str) and w in CHANGES]
    checks = [w for w in map(_finding, found["checks"]) if w is not None]
    unexpected = len(changed) != len(found["changed"]) or len(checks) != len(found["checks"])
    for module, digests in found["code"].items():
        if module not in REFERENCE or not isinstance(digests, dict):
            unexpected = True
            continue
        checks += [f"{module}.{name} is not the course's code" for name, digest in REFERENCE[module].items()
                   if digests.get(name) != digest]
    if unexpected:
        checks.append(_UNEXPECTED)
    return {"changed": changed, "checks": sorted(set(checks), key=checks.index)}


class Record:
    """What the grader remembers of one notebook's integrity checks: the digest of the state the
    kernel recorded at the last one (the kernel keeps the state itself, where the notebook can
    reach it; a record changed, removed or made anew between two checks is a finding)."""

    _LOST = object()  # the last check got no answer: its record is not known

    def __init__(self):
        self.digest = None

    def answer(self, pin, result, problem) -> dict:
        """The findings from a check's answer: ``result`` and ``problem`` as
        :meth:`~.preprocessors.execute.GradingExecute._ask` returns them, ``pin`` the door's
        addresses (:func:`.preprocessors.door.read_pin`)."""
        if problem == "timed out":
            return self._lost("the integrity check got no answer (the interpreter was changed?)")
        if problem == "answered twice":
            return self._lost("the kernel answered the integrity check twice (a forged reply?)")
        if isinstance(result, dict) and result.get("status") == "error":
            return self._lost(failure(result.get("ename")))
        try:
            found = door.read(pin, "probe", result)
        except door.Altered as error:
            return self._lost(f"the grader's door into the kernel was altered ({error})")
        except ValueError:
            found = None
        record = found.get("record") if isinstance(found, dict) else None
        if not (isinstance(record, tuple) and len(record) == 2 and isinstance(record[1], str)):
            return self._lost(_UNEXPECTED)
        words = findings(found)
        if self.digest is not self._LOST and record[0] != self.digest:
            words["checks"].append(RECORD_CHANGED)
        if record[1] == NOT_PLAIN:  # a value of the notebook's own type could compare equal to any
            words["checks"].append(RECORD_NOT_PLAIN)
        self.digest = record[1]
        return words

    def _lost(self, finding) -> dict:
        self.digest = self._LOST
        return {"changed": [], "checks": [finding]}


def failure(ename) -> str:
    """The finding for an integrity check that raised ``ename`` (the kernel's word: shown only
    when it is an exception type of Python's or TensorFlow's own)."""
    return f"the integrity check failed: {error_name(ename)}"
