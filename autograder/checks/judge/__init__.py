"""The grader's half of every check: references and verdicts, from plain data (NumPy only).

Every graded exercise is one :class:`Exercise`, in two halves:

- its **kernel half**, ``collect(*args, case, ctx, **options)`` in ``autograder/checks/<topic>.py``,
  calls the student's code on one case, inside the student's kernel, and returns what it
  observed as plain data (:mod:`autograder.checks.plain`): the values the student's code
  returned, and the evidence of the idea the exercise grades (which values ``tape.gradient``
  produced, how often a step ran, ...). It may diagnose a failure by experiment and raise
  :class:`~autograder.checks.compare.CheckFailed`; a grading kernel then sends only the
  failure's mistake id and code, never its words.
- its **grader half**, the ``judge(case, obs, ctx, **options)`` registered here with
  :func:`exercise`, computes the reference from mathematics (NumPy) and decides: it raises
  ``CheckFailed`` or returns. It runs on the grader, outside the student's interpreter, when a
  class is graded (the grading pipeline's verdict module), and in the kernel for the visible check
  a student runs, on the same plain data, so the two verdicts agree.

References never enter a grading kernel, and a kernel's words never reach a report: a kernel
sends findings as codes, which :func:`render_finding` words.
"""
from __future__ import annotations

import builtins
import importlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..compare import CheckFailed, assert_close
from ..mistakes import CATALOGUE

__all__ = ["Exercise", "Context", "EXERCISES", "FINDINGS", "exercise", "load", "by_name",
           "render_finding", "judge_observation", "JUDGE_MODULES"]

#: What the kernel halves add to every autodiff result in their experiments on where a value
#: came from (:func:`autograder.checks.harness.shifted`), so the judges that replay them know it:
#: far above every tolerance, and no round number a formula would hold.
TAPE_SHIFT = 0.6180339887

#: The modules of this package that register exercises (imported by :func:`load`).
JUDGE_MODULES = ("tapes", "graphs", "control_flow", "software", "training", "pitfalls",
                 "scale")

#: Check function name (``"check_square_grad"``) -> its exercise.
EXERCISES: dict[str, "Exercise"] = {}

#: Finding code -> (cause, fix) for failures that a kernel reports without a catalogued mistake.
#: ``{what}`` is the call (``square_grad (hidden case 2)``), ``{type}`` an exception's type name.
FINDINGS = {
    "not_answered": ("{what} is not written yet: it raises NotImplementedError.",
                     "replace `raise NotImplementedError()` in the exercise cell with your code, "
                     "run that cell, then run the check cell."),
    "raised": ("{what} raised {type}.",
               "run the check cell above this test: it shows the error and its likely cause."),
    "no_gradients": ("{what}: the optimizer got no gradients (tape.gradient returned None for "
                     "every weight), so nothing on the tape links the weights to the loss.",
                     "compute the model's output and the loss inside the `with "
                     "tf.GradientTape() as tape:` block, with TensorFlow operations only."),
    "none": ("{what} returned None instead of a value.",
             "return the value the exercise asks for (a `return` statement may be missing)."),
    "type": ("{what} returned a value of the wrong kind (see the exercise's docstring).",
             "return exactly what the docstring's Returns section says."),
    "not_tf_function": ("{what}: the function is not a tf.function, so it would run eagerly "
                        "and graph mode could not be tested.",
                        "make it a tf.function (read tf.function as a decorator), so that it "
                        "traces a graph."),
    "failed": ("{what} did not pass this case.",
               "run the check cell above this test: it names what went wrong."),
    "no_entry": ("{what} could not be tested: the course's checks are not loaded in this "
                 "notebook (did the set-up cell fail?).",
                 "run the notebook from the top; the set-up cell must end without an error."),
    "not_defined": ("{what} could not be tested: a name it uses is not defined ({type}).",
                    "run the cell that defines it (and every cell above it) without errors."),
    "timed_out": ("{what} timed out after {type} s (an infinite loop?).",
                  "make sure every loop ends; run the check cell above this test."),
    "malformed": ("{what}: the grader could not read what the notebook's kernel sent back "
                  "(the interpreter was changed?).", None),
    "door_altered": ("{what} was not graded: the notebook's code changed the grader's way into "
                     "its kernel, so nothing read through it can be trusted.",
                     "leave the course's checks and the interpreter as they are; your "
                     "instructor will look at this notebook."),
}

#: Exception type names a message may show (a class name is the student's to choose: any other
#: is "an exception"): Python's own and TensorFlow's.
KNOWN_ERRORS = frozenset(
    [name for name, value in vars(builtins).items()
     if isinstance(value, type) and issubclass(value, BaseException)]
    + ["InvalidArgumentError", "ResourceExhaustedError", "OperatorNotAllowedInGraphError",
       "InaccessibleTensorError", "UnimplementedError", "FailedPreconditionError",
       "NotFoundError", "OutOfRangeError", "InternalError", "UnknownError", "AbortedError",
       "CancelledError", "DeadlineExceededError", "AlreadyExistsError",
       "PermissionDeniedError", "UnauthenticatedError", "DataLossError", "UnavailableError",
       "StagingError", "ConverterError", "SymbolicException", "CheckFailed",
       # The grader's own, written into outputs by the pipeline and nbclient.
       "CellTimeoutError", "NotGraded", "DeadKernelError", "CellExecutionError"])


#: How a message names an exception whose type is not one of :data:`KNOWN_ERRORS`.
OWN_CLASS = "an exception of the notebook's own class"
#: How a message names an exception raised on a hidden case: which of the ~60 known types the
#: student's code raised is its choice, so it could spell a hidden input (about 6 bits a cell).
HIDDEN_TYPE = "an exception (its type is not shown for a hidden case)"


def error_name(kind) -> str:
    """``kind`` (an exception type's name, as a kernel sent it: any object) when it is one of
    :data:`KNOWN_ERRORS`, else :data:`OWN_CLASS`: a name the notebook chose could carry what its
    code saw (a hidden input spelled in digits)."""
    return kind if isinstance(kind, str) and kind in KNOWN_ERRORS else OWN_CLASS


@dataclass(frozen=True)
class Context:
    """Where a judgement is made: the exercise, the case and how messages may name it.

    ``label`` is ``"input 3.0"`` for a visible case, ``"hidden case 2"`` for a hidden one;
    ``reveal`` is whether a message may show values (True in a student's visible check, False
    when grading: then neither references nor the student's values reach feedback).
    """
    exercise: str
    index: int
    label: str
    hidden: bool = False
    reveal: bool = True

    @property
    def what(self) -> str:
        """How messages name the call: ``square_grad (input 3.0)``."""
        return f"{self.exercise} ({self.label})"

    def fail(self, message: str, mistake: str | None = None, fix: str | None = None,
             code: str | None = None):
        """Raise CheckFailed naming this exercise."""
        __tracebackhide__ = True
        raise CheckFailed(message, mistake, fix, exercise=self.exercise, code=code) from None

    def close(self, actual, expected, part: str = "", **kwargs) -> None:
        """:func:`~autograder.checks.compare.assert_close` of ``actual`` (the student's,
        decoded) and ``expected`` (the reference); ``part`` names the value (", dz/dx")."""
        __tracebackhide__ = True
        if actual is None:
            self.fail(f"{self.what}{part} is None.", code="none")
        if not isinstance(actual, (np.ndarray, int, float, bool, list)):
            self.fail(f"{self.what}{part} should be a tensor or a number.", code="type")
        try:
            assert_close(actual, expected, f"{self.what}{part}", reveal=self.reveal, **kwargs)
        except CheckFailed as error:
            error.add_context(exercise=self.exercise)
            raise
        except (TypeError, ValueError):
            self.fail(f"{self.what}{part} should be a tensor or a number.", code="type")


@dataclass(frozen=True)
class Exercise:
    """One graded exercise (see the module's docstring).

    Attributes:
        name: how messages name it (``square_grad``).
        check: the check function test cells call (``check_square_grad``).
        module: the module of its kernel half (``autograder.checks.tapes``).
        idea: what it grades, one sentence; an answer that reaches the right numbers without
            it fails.
        judge: ``judge(case, obs, ctx, **options)``: raises CheckFailed or returns.
        cases: the visible cases (used when a check is called without ``cases``).
        label: a visible case's label (``lambda x: f"input {x}"``).
        kernel_evidence: what of the verdict rests on what only the kernel can observe (trace
            counts, printed lines, which values tape.gradient produced), or None; such evidence
            is as trustworthy as the kernel, which the integrity check watches.
        findings: this exercise's own finding codes, as :data:`FINDINGS`.
    """
    name: str
    check: str
    module: str
    idea: str
    judge: Callable
    cases: list
    label: Callable = field(default=lambda case: f"input {case}")
    kernel_evidence: str | None = None
    findings: dict = field(default_factory=dict)

    def context(self, index: int, case, hidden: bool, reveal: bool = True) -> Context:
        """The context of case ``index``: labelled by number when hidden, else by its inputs."""
        label = f"hidden case {index + 1}" if hidden else self.label(case)
        return Context(self.name, index, label, hidden, reveal)


def exercise(name: str, *, module: str, idea: str, cases, check: str | None = None,
             label: Callable | None = None, kernel_evidence: str | None = None,
             findings: dict | None = None):
    """Register the decorated ``judge(case, obs, ctx, **options)`` as exercise ``name``."""
    def register(judge):
        entry = Exercise(name, check or f"check_{name}", module, idea, judge, list(cases),
                         label or (lambda case: f"input {case}"), kernel_evidence,
                         dict(findings or {}))
        EXERCISES[entry.check] = entry
        return judge
    return register


def load() -> dict[str, Exercise]:
    """Import every judge module (NumPy only) and return :data:`EXERCISES`."""
    for name in JUDGE_MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return EXERCISES


def by_name(name: str) -> Exercise:
    """The exercise named ``name`` (``square_grad``). Raises KeyError."""
    for entry in load().values():
        if entry.name == name:
            return entry
    raise KeyError(name)


def render_finding(entry: Exercise, ctx: Context, finding, names=(),
                   seconds: float | None = None) -> CheckFailed:
    """The grader's own message for a failure a kernel reported as ``finding`` (a dict with
    ``mistake``, ``code`` and ``type``, any of them missing or hostile): a catalogued mistake in
    the catalogue's words, a known code in :data:`FINDINGS` (or the exercise's own), anything
    else as "did not pass". No string of the kernel's reaches the message: ``type`` is shown only
    when it is one of :data:`KNOWN_ERRORS` or one of ``names`` (the names a test cell passes,
    which a NameError may name), else as :data:`OWN_CLASS`, and never for a hidden case
    (:data:`HIDDEN_TYPE`); ``seconds`` (the grader's time limit, for ``timed_out``) is formatted
    here."""
    finding = finding if isinstance(finding, dict) else {}
    mistake, code, kind = finding.get("mistake"), finding.get("code"), finding.get("type")
    if seconds is not None:
        kind = f"{seconds:.0f}"
    elif not (isinstance(kind, str) and kind in names):
        kind = "a name of the notebook's" if code == "not_defined" else \
            HIDDEN_TYPE if ctx.hidden else error_name(kind)
    if isinstance(mistake, str) and mistake in CATALOGUE:
        _, does, instead = CATALOGUE[mistake]
        known = entry.findings.get(code) if isinstance(code, str) else None
        if known:
            cause, fix = known
            return CheckFailed(cause.format(what=ctx.what, type=kind), mistake,
                               fix and fix.format(what=ctx.what, type=kind), exercise=entry.name,
                               code=code)
        return CheckFailed(f"{ctx.what}: {does}.", mistake, f"{instead}.", exercise=entry.name,
                           code=code if isinstance(code, str) else None)
    words = entry.findings.get(code) or FINDINGS.get(code) if isinstance(code, str) else None
    if words is None:
        code, words = "failed", FINDINGS["failed"]
    cause, fix = words
    return CheckFailed(cause.format(what=ctx.what, type=kind), None,
                       fix and fix.format(what=ctx.what, type=kind), exercise=entry.name,
                       code=code)


def judge_observation(entry: Exercise, case, reply, ctx: Context, options: dict,
                      names=()) -> None:
    """Decide one case from a kernel's reply for it: ``{"obs": {...}}`` (judged against the
    reference) or ``{"finding": {...}}`` (worded by :func:`render_finding`). Raises CheckFailed
    when the case fails; a reply of an unexpected form, or observations the judge cannot read,
    fail with the code ``malformed`` (the grader then flags the notebook for review)."""
    __tracebackhide__ = True
    if isinstance(reply, dict) and set(reply) == {"finding"}:
        raise render_finding(entry, ctx, reply["finding"], names)
    if not (isinstance(reply, dict) and set(reply) == {"obs"} and isinstance(reply["obs"], dict)):
        raise render_finding(entry, ctx, {"code": "malformed"})
    try:
        entry.judge(case, reply["obs"], ctx, **options)
    except CheckFailed:
        raise
    except Exception:  # observations of the wrong form: the judge read a missing key, ...
        raise render_finding(entry, ctx, {"code": "malformed"}) from None
