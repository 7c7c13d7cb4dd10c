"""Tensor-aware comparison and reporting shared by every check.

Checks raise :class:`CheckFailed` (an ``AssertionError``) with a message written for the student:
what was expected, what came back, and the likely cause. nbgrader scores a test cell 0 when it
shows an error, so a raised ``CheckFailed`` is what costs the points. Passing checks print one
line to stdout (never stderr, which nbgrader would score as a failure).
"""
from __future__ import annotations

import numpy as np

# The ids of STUDENT_MISTAKES.md, with the short name used in messages.
MISTAKES = {
    "M01": "unwatched tf.constant",
    "M02": "integer input to the tape",
    "M03": "variable replaced by a tensor",
    "M04": "gradient called twice on a non-persistent tape",
    "M05": "loss computed outside the tape",
    "M06": "a source the tape never watched",
    "M07": "tf.Variable created inside a tf.function",
    "M08": "Python side effect in a tf.function",
    "M09": "Python if on a tensor in graph mode",
    "M10": "bytes compared with str",
    "M11": "TensorArray.write result dropped",
}


class CheckFailed(AssertionError):
    """A check found a wrong answer. ``mistake`` is an id of STUDENT_MISTAKES.md or None."""

    def __init__(self, message: str, mistake: str | None = None):
        self.mistake = mistake
        if mistake:
            message = f"[{mistake}: {MISTAKES[mistake]}] {message}"
        super().__init__(message)


def fail(message: str, mistake: str | None = None):
    """Raise :class:`CheckFailed` with ``message``, tagged with a mistake id such as ``"M01"``."""
    __tracebackhide__ = True  # IPython and pytest leave this frame out of the traceback
    raise CheckFailed(message, mistake)


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
                 check_dtype: str | None = None, check_shape: bool = True) -> None:
    """Assert that ``actual`` equals ``expected`` within tolerances, element by element.

    Args:
        actual: the student's value: a tf.Tensor, tf.Variable, np.ndarray, Python number or list.
        expected: the reference value (array-like), computed from mathematics by the check.
        what: how the message names the value, e.g. "square_grad(3.0)".
        rtol, atol: tolerances of ``np.allclose`` (defaults suit float32 arithmetic).
        check_dtype: None, or a dtype kind the result must have: "float" or "int".
        check_shape: whether the shapes must be equal (no broadcasting).

    Raises:
        CheckFailed: with expected and actual values in the message.
    """
    __tracebackhide__ = True
    got = to_numpy(actual, what)
    want = np.asarray(expected)
    if check_dtype == "float" and not np.issubdtype(got.dtype, np.floating):
        fail(f"{what} should have a floating-point dtype, got {got.dtype}.")
    if check_dtype == "int" and not np.issubdtype(got.dtype, np.integer):
        fail(f"{what} should have an integer dtype, got {got.dtype}.")
    if check_shape and got.shape != want.shape:
        fail(f"{what} should have shape {want.shape}, got shape {got.shape}.")
    if not np.issubdtype(got.dtype, np.number) and got.dtype != bool:
        fail(f"{what} should be numeric, got dtype {got.dtype}.")
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        fail(f"{what}: expected {_short(want)}, got {_short(got)}.")


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
