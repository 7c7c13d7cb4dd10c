"""Tensor-aware comparison and reporting shared by every check.

Checks raise :class:`CheckFailed` (an ``AssertionError``) with a message written for the student:
what was expected, what came back, the likely cause, and the fix on its own line. nbgrader scores
a test cell 0 when it shows an error, so a raised ``CheckFailed`` is what costs the points; in a
notebook IPython shows only the message (``_render_traceback_``), never the checks' own frames.
Passing checks print one line to stdout (never stderr, which nbgrader would score as a failure).
"""
from __future__ import annotations

import linecache
import textwrap

import numpy as np

from .mistakes import MISTAKES

#: Width of message lines: nbgrader's Validate dialog and feedback pages do not wrap them.
WIDTH = 78


class CheckFailed(AssertionError):
    """A check found a wrong answer.

    Attributes:
        mistake: an id of :data:`autograder.checks.mistakes.MISTAKES` (``"M01"``) or None.
        cause: what went wrong (one paragraph, unwrapped).
        fix: what to change, or None; shown on its own line(s) after ``Fix:``.
        exercise: the exercise's name, set by the check (``square_grad``); the message starts
            with it unless the cause already names it.
        notes: extra paragraphs, e.g. the M19 note when ``run_functions_eagerly(True)`` is on.
        code: a finding code of :data:`autograder.checks.judge.FINDINGS` (``"no_tape"``), or
            None; what a grading kernel sends instead of the message (the grader words it).
    ``str(error)`` is the whole message, wrapped at :data:`WIDTH` columns; its first line holds
    ``[Mxx: name]`` when a mistake is named.
    """

    def __init__(self, message: str, mistake: str | None = None, fix: str | None = None,
                 exercise: str | None = None, code: str | None = None):
        if mistake is not None and mistake not in MISTAKES:
            raise KeyError(f"unknown mistake id {mistake!r}")
        self.mistake, self.cause, self.fix, self.exercise = mistake, message, fix, exercise
        self.code = code
        self.notes: list[str] = []
        super().__init__(self.render())

    def add_context(self, exercise: str | None = None, note: str | None = None) -> None:
        """Name the exercise (when not named yet) and add a note; the message is re-rendered."""
        if exercise and not self.exercise:
            self.exercise = exercise
        if note and note not in self.notes:
            self.notes.append(note)
        self.args = (self.render(),)

    def render(self) -> str:
        """The message: ``[Mxx: name] exercise: cause`` wrapped, then ``Fix: ...``, then notes."""
        head = f"[{self.mistake}: {MISTAKES[self.mistake]}] " if self.mistake else ""
        named = self.exercise and self.exercise.split("(")[0] in self.cause
        lead = f"{self.exercise}: " if self.exercise and not named else ""
        blocks = [textwrap.fill(head + lead + self.cause, WIDTH, break_on_hyphens=False)]
        if self.fix:
            blocks.append(textwrap.fill("Fix: " + self.fix, WIDTH, subsequent_indent="     ",
                                        break_on_hyphens=False))
        blocks += [textwrap.fill(note, WIDTH, break_on_hyphens=False) for note in self.notes]
        return "\n".join(blocks)

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for this error: the message alone (no frames, no chained errors).
        The output is still an error output, so nbgrader scores the cell 0."""
        first, *rest = str(self).splitlines()
        return [f"\x1b[1;31m{first}\x1b[0m", *rest]


def fail(message: str, mistake: str | None = None, fix: str | None = None,
         code: str | None = None):
    """Raise :class:`CheckFailed`: ``message`` says what went wrong, ``mistake`` names a known
    one (``"M01"``), ``fix`` says what to change, ``code`` is the finding a grading kernel
    reports instead of the message (:data:`autograder.checks.judge.FINDINGS`)."""
    __tracebackhide__ = True  # IPython and pytest leave this frame out of the traceback
    raise CheckFailed(message, mistake, fix, code=code) from None


def passed(check_name: str, n_cases: int) -> None:
    """Print the one-line success report of a check to stdout."""
    print(f"\u2714 {check_name}: {n_cases} case{'s' if n_cases != 1 else ''} passed")


def case_label(inputs, hidden: bool, index: int) -> str:
    """How a message names a case: its inputs when visible, only its number when hidden
    (hidden inputs must not reach students through feedback)."""
    return f"hidden case {index + 1}" if hidden else f"input {inputs}"


def to_numpy(value, what: str):
    """Convert a tensor, variable, NumPy array, Python number or nested list to a NumPy array.

    Raises CheckFailed when ``value`` is None (with ``what`` naming it) or cannot be converted.
    """
    __tracebackhide__ = True
    if value is None:
        fail(f"{what} is None.")
    if hasattr(value, "numpy"):
        value = value.numpy()
    try:
        return np.asarray(value)
    except Exception as error:  # pragma: no cover - message path
        fail(f"{what} should be a tensor or a number, got {type(value).__name__} ({error}).")


def assert_close(actual, expected, what: str, *, rtol: float = 1e-5, atol: float = 1e-6,
                 check_dtype: str | None = None, check_shape: bool = True,
                 reveal: bool = True) -> None:
    """Assert that ``actual`` equals ``expected`` within tolerances, element by element.

    Args:
        actual: the student's value: a tf.Tensor, tf.Variable, np.ndarray, Python number or list.
        expected: the reference value (array-like), computed from mathematics by the check.
        what: how the message names the value, e.g. "square_grad(3.0)".
        rtol, atol: tolerances of ``np.allclose`` (defaults suit float32 arithmetic).
        check_dtype: None, or a dtype kind the result must have: "float" or "int".
        check_shape: whether the shapes must be equal (no broadcasting).
        reveal: whether the message may show values; False when grading, where neither the
            expected values (made from hidden inputs) nor the student's (which could carry
            anything) may reach feedback.

    Raises:
        CheckFailed: with expected and actual values in the message (when ``reveal``).
    """
    __tracebackhide__ = True
    got = to_numpy(actual, what)
    want = np.asarray(expected)
    got_dtype = str(got.dtype) if reveal else "another dtype"
    if check_dtype == "float" and not np.issubdtype(got.dtype, np.floating):
        fail(f"{what} should have a floating-point dtype, got {got_dtype}.", code="dtype")
    if check_dtype == "int" and not np.issubdtype(got.dtype, np.integer):
        fail(f"{what} should have an integer dtype, got {got_dtype}.", code="dtype")
    if check_shape and got.shape != want.shape:
        if reveal:
            fail(f"{what} should have shape {want.shape}, got shape {got.shape}.", code="shape")
        fail(f"{what} has the wrong shape.", code="shape")
    if not np.issubdtype(got.dtype, np.number) and got.dtype != bool:
        fail(f"{what} should be numeric, got dtype {got_dtype}.", code="dtype")
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        if reveal:
            fail(f"{what}: expected {_short(want)}, got {_short(got)}.", code="value")
        fail(f"{what}: the values differ from the expected ones.", code="value")


def _short(array: np.ndarray) -> str:
    """A compact, rounded rendering of an array for messages."""
    return np.array2string(np.asarray(array), precision=4, threshold=12, suppress_small=True)


def as_text(value) -> str:
    """Decode a bytes value (as tf.string tensors give in NumPy) to str; leave str as is."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    return value.decode("utf-8") if isinstance(value, bytes) else value


def function_from_source(source: str, name: str, namespace: dict):
    """A function defined by the source text a hidden case carries (issue: hidden test material
    stays on the grader). Hidden cases' functions are written in the solution notebook's hidden
    tests, as text, so they never ship in the package students receive; the kernel half builds
    the TensorFlow function (``namespace={"tf": tf}``), the grader half its NumPy reference
    (``namespace={"np": np}``).

    Args:
        source: Python source text defining ``name`` (``def name(...): ...``); from the
            instructor's graded cell, never from a student.
        name: the function's name in ``source``.
        namespace: the globals the source sees (modules it may use); copied, not changed.

    Returns:
        the function object.

    Raises:
        KeyError: ``source`` defines no ``name``. SyntaxError: the text is not Python.
    """
    scope = dict(namespace)
    # AutoGraph reads a function's source through linecache: register the text under its name.
    filename = f"<hidden case {name} {hash(source) & 0xFFFFFFFF:08x}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - the instructor's text
    return scope[name]
