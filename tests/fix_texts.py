"""Find the fix texts of the course's checks that hand the student a line of the answer.

A check's ``Fix:`` line should name the idea (what TensorFlow does, which concept or API to read
about), never spell the code that solves the exercise. :func:`fix_texts` collects every fix text
the check modules can show: ``fix=`` arguments (string constants, f-strings, and the module or
function constants they name), the second field of ``(cause, fix)`` findings, the third of
``(mistake, cause, fix)`` tables, arguments passed positionally to a parameter named ``fix``, and
the third field of :data:`autograder.checks.mistakes.CATALOGUE`. :func:`spelt` says whether a
text spells an answer, by these heuristics:

* a decorator (``@tf.function``), or a ``return`` of a TensorFlow call (``return tf.function(``);
* an assignment statement (``w = w - lr * g``, ``ta = ta.write(i, v)``), unless its value is a
  placeholder (``name = ...``, which says where a prediction goes, not what it is);
* a call with arguments written as code: inside backticks, on a dotted name
  (``tape.watch(x)``, ``tf.Variable(0.0)``), or found as written in a solution notebook;
* a call of several arguments (``make_train_step(model, optimizer, ...)``), a method chain
  with arguments (``.shuffle(len(x)).batch(batch_size)``), a comparison with a call on one side
  (``s.decode() == word``);
* a backticked ``return`` of a value, or a backticked ``if``, ``elif``, ``while`` or ``for``
  line (``if x > 0:``, ``for item in items:``).
"""
from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "autograder" / "checks"
SOLUTIONS = ROOT / "solutions"

_TICKED = re.compile(r"`([^`]+)`")
_DECORATOR = re.compile(r"(?:^|[\s`(])@[A-Za-z_][\w.]*")
_RETURN_TF = re.compile(r"\breturn\s+`?(?:tf|keras|np)\.[\w.]*\(")
_ASSIGN = re.compile(r"(?<![\w.=!<>+\-*/])([A-Za-z_][\w.\[\]]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s+"
                     r"(=|\+=|-=|\*=|/=)\s+(\S[^,;:]*)")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_CHAIN = re.compile(r"(?<![\w.])((?:\.[A-Za-z_]\w*\([^()]*(?:\([^()]*\)[^()]*)*\))+)")
_COMPARE = re.compile(r"[\w.\]]+\([^()]*\)\s*[=!]=\s*\S|\S\s*[=!]=\s*[\w.]+\([^()]*\)")
_HEADER = re.compile(r"^\s*(?:if|elif|while|for)\b.+:\s*$")
_PLACEHOLDER = re.compile(r"""^\s*(?:\.\.\.|["']\.\.\.["']|\{\w+\}|<[^>]*>)""")


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@lru_cache(maxsize=1)
def solution_code() -> str:
    """The code cells of every solution notebook, comments and whitespace removed (for matching
    calls: a formula in a comment, log(1 + e^x), is mathematics, not a line of code)."""
    parts = []
    for path in sorted(SOLUTIONS.rglob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = cell["source"]
                source = "".join(source) if isinstance(source, list) else source
                parts += [re.sub(r"#.*", "", line) for line in source.splitlines()]
    return _squash("\n".join(parts))


def _calls_with_arguments(text: str):
    for match in _CALL.finditer(text):
        name, args = match.groups()
        if args.strip() and not re.fullmatch(r"s|es|\.\.\.|\{\w*\}", args.strip()):
            yield name, match.group(0)


def _maths(call: str) -> bool:
    """Whether a call is a formula of prose (log(cosh(x)), log(1 + e^x)), not a line of code."""
    return "^" in call or call.split("(")[0] in {"log", "exp", "cosh", "sinh", "tanh", "sin",
                                                 "cos", "sqrt", "max", "min"}


def reasons(text: str, solutions: str | None = None) -> list[str]:
    """Why ``text`` (one fix text) spells a line of the answer: an empty list when it does not.
    ``solutions`` is the solution notebooks' code without whitespace (default: the course's)."""
    solutions = solution_code() if solutions is None else solutions
    found = []
    if _DECORATOR.search(text):
        found.append("a decorator line")
    if _RETURN_TF.search(text):
        found.append("returns a TensorFlow call")
    for match in _ASSIGN.finditer(text):
        value = match.group(3)
        if not _PLACEHOLDER.match(value):
            found.append(f"an assignment: {match.group(0).strip()}")
    for fragment in _TICKED.findall(text):
        for _, call in _calls_with_arguments(fragment):
            found.append(f"a backticked call: {call}")
        if re.match(r"\s*return\s+\S", fragment) and not _PLACEHOLDER.match(fragment[7:]):
            found.append(f"a backticked return: {fragment}")
    for fragment in _TICKED.findall(text):
        if _HEADER.match(fragment):
            found.append(f"a backticked statement: {fragment}")
    for chain in _CHAIN.findall(text):
        if any(args.strip() not in ("", "...") for args in re.findall(r"\(([^()]*)", chain)):
            found.append(f"a method chain written as code: {chain}")
    for match in _COMPARE.finditer(text):
        found.append(f"a comparison written as code: {match.group(0)}")
    for name, call in _calls_with_arguments(_TICKED.sub(" ", text)):
        if "." in name:
            found.append(f"a call written as code: {call}")
        elif "," in call and not _maths(call):
            found.append(f"a call of several arguments: {call}")
        elif len(_squash(call)) >= 8 and _squash(call) in solutions and not _maths(call):
            found.append(f"a call of the solutions: {call}")
    return found


def spelt(text: str, solutions: str | None = None) -> bool:
    """Whether the fix text ``text`` hands the student a line of the answer."""
    return bool(reasons(text, solutions))


# ------------------------------------------------------------------------- collecting texts

def _strings(node, names: dict) -> list[str]:
    """The texts an expression can evaluate to: constants, f-strings (``{}`` for each value),
    sums, ``a or b``, ``a if c else b``, names and subscripts of the constants in ``names``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [a + b for a in _strings(node.left, names) for b in _strings(node.right, names)]
    if isinstance(node, ast.BoolOp):
        return [t for value in node.values for t in _strings(value, names)]
    if isinstance(node, ast.IfExp):
        return _strings(node.body, names) + _strings(node.orelse, names)
    if isinstance(node, ast.Name) and node.id in names:
        return [t for value in names[node.id] for t in _strings(value, names)]
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)):
        out = []
        for value in names.get(node.value.id, []):
            if isinstance(value, ast.Tuple) and len(value.elts) > node.slice.value:
                out += _strings(value.elts[node.slice.value], names)
        return out
    return []


def _assigned(tree) -> dict:
    """Name -> the expressions assigned to it anywhere in the module (module constants and
    function locals alike: a local ``fix`` is a fix text wherever it is passed)."""
    names: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            names.setdefault(node.target.id, []).append(node.value)
    return names


def _fix_parameters(trees) -> dict:
    """Function name -> the position of its parameter ``fix``, for every check module."""
    where = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = [a.arg for a in node.args.posonlyargs + node.args.args]
                if "fix" in args:  # a method's self is not among a call's arguments
                    where[node.name] = args.index("fix") - (args[:1] == ["self"])
    return where


def _findings_fix(node, names) -> list[str]:
    """The fix field of a ``(cause, fix)`` finding (a tuple, or the name of one)."""
    values = names.get(node.id, []) if isinstance(node, ast.Name) else [node]
    return [t for v in values if isinstance(v, ast.Tuple) and len(v.elts) == 2
            for t in _strings(v.elts[1], names)]


def module_fix_texts(path: Path, fix_positions: dict) -> list[tuple[str, str]]:
    """``(where, text)`` for every fix text of one check module."""
    tree = ast.parse(path.read_text())
    names = _assigned(tree)
    found = []

    def add(node, texts):
        for text in texts:
            found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))

    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "fix":
            add(node.value, _strings(node.value, names))
        elif isinstance(node, ast.keyword) and node.arg == "findings" \
                and isinstance(node.value, ast.Dict):
            for value in node.value.values:
                add(value, _findings_fix(value, names))
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "FINDINGS" for t in node.targets):
            for value in node.value.values:
                add(value, _findings_fix(value, names))
        elif isinstance(node, ast.Tuple) and len(node.elts) == 3 and isinstance(
                node.elts[0], ast.Constant) and re.fullmatch(r"M\d+", str(node.elts[0].value)):
            add(node, _strings(node.elts[2], names))
        elif isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else \
                getattr(node.func, "id", None)
            index = fix_positions.get(callee)
            if index is not None:
                if index < len(node.args):
                    add(node.args[index], _strings(node.args[index], names))
    return found


def fix_texts() -> list[tuple[str, str]]:
    """``(where, text)`` for every fix text the checks can show: the check modules' and the
    catalogue's (``mistakes.py Mxx``)."""
    from autograder.checks.mistakes import CATALOGUE

    paths = sorted(p for p in CHECKS.rglob("*.py") if p.name != "mistakes.py")
    trees = [ast.parse(p.read_text()) for p in paths]
    positions = _fix_parameters(trees)
    found = []
    for path in paths:
        found += module_fix_texts(path, positions)
    found += [(f"mistakes.py {key}", entry[2]) for key, entry in CATALOGUE.items()]
    return list(dict.fromkeys(found))


def spelt_fixes() -> list[tuple[str, str, list[str]]]:
    """``(where, text, reasons)`` for every fix text that spells a line of the answer."""
    return [(where, text, why) for where, text in fix_texts() if (why := reasons(text))]


if __name__ == "__main__":
    texts = fix_texts()
    flagged = spelt_fixes()
    for where, text, why in flagged:
        print(f"{where}: {text}\n    -> {'; '.join(why)}")
    print(f"{len(flagged)} of {len(texts)} fix texts spell an answer")
