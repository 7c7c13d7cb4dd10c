"""The verdict of a graded cell, decided by the grader outside the student's interpreter.

A graded cell of this course is one or more check calls, in the instructor's source (nbgrader
puts it back as released, hidden tests included)::

    checks.check_square_grad(square_grad)
    ### BEGIN HIDDEN TESTS
    checks.check_square_grad(square_grad, cases=[0.5, -4, 7, 10.25], hidden=True)
    ### END HIDDEN TESTS

That source never runs in the student's kernel. :func:`parse_graded_cell` reads it here: each
call names an exercise (:data:`autograder.checks.judge.EXERCISES`); its positional arguments are
the student's objects, expressions evaluated in the kernel; its keyword arguments (``cases``,
``hidden``, options such as ``threshold``) are evaluated here. :func:`request_arguments` is
what the grader's door into the kernel (:mod:`.preprocessors.door`, silently, out of its history)
passes the course's entry to run the exercise's kernel half on the cases
(:mod:`autograder.checks.kernel_entry`); the kernel answers with plain data of bounded
size, and :func:`decide` judges it against references computed here, in the grader's own words.
:func:`outputs` turns the verdict into the cell's outputs, from which nbgrader scores the cell
as usual (an error output: 0; none: full points).

A cell of another form (an nbgrader test cell of ``assert`` statements, say) is not this
module's: :func:`parse_graded_cell` raises :class:`NotChecks` and the cell runs in the kernel as
nbgrader runs it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

import nbformat
import numpy as np

from autograder.checks import judge, plain
from autograder.checks.compare import CheckFailed
from autograder.grading.preprocessors import door

__all__ = ["CheckCall", "NotChecks", "Verdict", "parse_graded_cell", "request_arguments",
           "decide", "outputs"]

# What the keyword arguments of a graded cell may use (the instructor's source: trusted).
_NAMESPACE = {"__builtins__": {"range": range, "list": list, "tuple": tuple, "dict": dict,
                               "float": float, "int": int, "abs": abs, "True": True,
                               "False": False, "None": None},
              "np": np}

# The note a failure carries when the student left tf.config.run_functions_eagerly(True) on.
EAGER_NOTE = ("Note [M19: tf.config.run_functions_eagerly(True) left on]: your notebook runs "
              "every tf.function eagerly; the grader ran your functions as graphs. Call "
              "tf.config.run_functions_eagerly(False) when you are done debugging.")


class NotChecks(ValueError):
    """The graded cell is not made of this course's check calls."""


@dataclass(frozen=True)
class CheckCall:
    """One check call of a graded cell.

    ``check``: the check's name (``check_square_grad``); ``args``: the source of its positional
    arguments, expressions of the notebook (``square_grad``, ``splits.x_val``); ``cases``: the
    cases (None: the exercise's visible ones); ``hidden``: whether messages name cases by
    number; ``options``: the other keyword arguments.
    """
    check: str
    args: tuple[str, ...]
    cases: list | None = None
    hidden: bool = False
    options: dict = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The names the call's arguments use (``square_grad``, ``splits``), which a NameError
        may name."""
        return tuple(n.id for a in self.args for n in ast.walk(ast.parse(a)) if isinstance(n, ast.Name))

    @property
    def exercise(self) -> judge.Exercise:
        return judge.load()[self.check]

    def case_list(self) -> list:
        """The cases as the kernel and the judge see them (through plain data)."""
        cases = self.exercise.cases if self.cases is None else self.cases
        return [plain.roundtrip(case) for case in cases]


def parse_graded_cell(source: str) -> list[CheckCall]:
    """The check calls of a graded cell's source, in order.

    Raises:
        NotChecks: when the source is anything but calls ``<module>.check_<name>(...)`` (or
            ``check_<name>(...)``) of registered exercises, or a keyword argument cannot be
            evaluated with NumPy alone.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise NotChecks(f"not Python: {error}") from None
    calls = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not isinstance(call, ast.Call):
            raise NotChecks("a statement that is not a check call")
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in judge.load() or any(isinstance(a, ast.Starred) for a in call.args):
            raise NotChecks(f"{name!r} is not a check of this course")
        options = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                raise NotChecks("**kwargs in a check call")
            try:
                options[keyword.arg] = eval(compile(ast.Expression(keyword.value), "<graded cell>",
                                                    "eval"), dict(_NAMESPACE))
            except Exception as error:
                raise NotChecks(f"keyword {keyword.arg}: {type(error).__name__}: {error}") from None
        cases, hidden = options.pop("cases", None), bool(options.pop("hidden", False))
        calls.append(CheckCall(name, tuple(ast.unparse(a) for a in call.args),
                               None if cases is None else list(cases), hidden, options))
    if not calls:
        raise NotChecks("no check call")
    return calls


def request_arguments(call: CheckCall) -> str:
    """The arguments (Python source) with which a grading kernel's door calls the course's entry
    for ``call`` (:meth:`autograder.checks.kernel_entry.Entry.observe`): run its kernel half on the
    cases and return the observations as plain-data text. The cases are plain data; no reference
    is in them."""
    request = plain.dumps({"cases": call.case_list(), "hidden": call.hidden,
                           "options": call.options})
    args = "".join(f"{source}, " for source in call.args)
    return f"{call.check!r}, lambda: ({args}), {request!r}"


@dataclass
class Verdict:
    """The grader's decision on one check call: ``error`` is None when every case passed, else
    the CheckFailed (in the grader's words); ``review`` lists what the instructor should look at
    (the kernel sent something the grader could not read)."""
    call: CheckCall
    error: CheckFailed | None = None
    review: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.error is None


def _read_answer(answer):
    """The plain data of the entry's answer (untrusted text): a dict ``{"eager": bool, "cases":
    [...]}``; raises plain.Malformed otherwise."""
    if not isinstance(answer, str) or len(answer) > 2 * plain.MAX_BYTES:
        raise plain.Malformed("not a string")
    data = plain.loads(answer)
    if not (isinstance(data, dict) and isinstance(data.get("cases"), list)
            and isinstance(data.get("eager", False), bool)):
        raise plain.Malformed("not observations")
    return data


def decide(call: CheckCall, reply: dict | None, pin: dict, timed_out_s: float | None = None) -> Verdict:
    """Judge a kernel's ``user_expressions`` result for ``call``, asked through the door
    ``pin`` (:func:`.preprocessors.door.through`).

    Args:
        call: the check call.
        reply: the result as the kernel's reply holds it (``{"status": "ok", "data":
            {"text/plain": ...}}`` or an error), or None when none came.
        pin: the door's addresses, read when it was made (:func:`.preprocessors.door.read_pin`).
        timed_out_s: the time limit, seconds, when the request ran past it.
    Returns:
        the Verdict; never raises for anything the kernel sent. An answer through an altered
        door fails (``door_altered``) and is flagged for review with what changed.
    """
    entry, cases = call.exercise, call.case_list()
    first = entry.context(0, cases[0] if cases else None, call.hidden, reveal=False)
    if timed_out_s is not None:
        return Verdict(call, judge.render_finding(entry, first, {"code": "timed_out"},
                                                  seconds=timed_out_s))
    if isinstance(reply, dict) and reply.get("status") == "error":
        # The course's entry never raises: an error is the door's (altered, or gone: IndexError).
        ename = reply.get("ename")
        code = "no_entry" if ename == "IndexError" else "raised"
        return Verdict(call, judge.render_finding(entry, first, {"code": code, "type": ename},
                                                  call.names),
                       [f"{call.check}: the kernel could not answer the grader"
                        + ("" if code == "no_entry" else f" ({judge.error_name(ename)} in its door)")])
    try:
        data = _read_answer(door.read(pin, "observe", reply))
    except door.Altered as error:
        return Verdict(call, judge.render_finding(entry, first, {"code": "door_altered"}),
                       [f"{call.check}: the grader's door into the kernel was altered ({error}): "
                        f"no answer read through it was graded"])
    except (ValueError, plain.Malformed) as error:
        return Verdict(call, judge.render_finding(entry, first, {"code": "malformed"}),
                       [f"{call.check}: the kernel's answer could not be read ({error})"])
    for index, case in enumerate(cases):
        ctx = entry.context(index, case, call.hidden, reveal=False)
        answer = data["cases"][index] if index < len(data["cases"]) else None
        try:
            judge.judge_observation(entry, case, answer, ctx, call.options, call.names)
        except CheckFailed as error:
            if data.get("eager"):
                error.add_context(note=EAGER_NOTE)
            review = ([f"{call.check}: the kernel's observations could not be read"]
                      if error.code == "malformed" else [])
            return Verdict(call, error, review)
    return Verdict(call)


def outputs(verdicts: list[Verdict]) -> list:
    """The outputs of a graded cell: a line per passed call on stdout, then the first failure
    as an error output (``CheckFailed``), whose message is the grader's own."""
    made = []
    for verdict in verdicts:
        if verdict.passed:
            n = len(verdict.call.case_list())
            made.append(nbformat.v4.new_output(
                "stream", name="stdout",
                text=f"\u2714 {verdict.call.exercise.name}: {n} case{'s' if n != 1 else ''} passed\n"))
            continue
        message = str(verdict.error)
        first, *rest = message.splitlines()
        made.append(nbformat.v4.new_output(
            "error", ename="CheckFailed", evalue=message,
            traceback=[f"\x1b[1;31m{first}\x1b[0m", *rest]))
        break
    return made
