"""Checks of assignment 04 (control flow in graphs: if, while, for, FizzBuzz).

Every decorated function is called as a graph, more than once, on inputs that reach every branch
(and loops that run zero, one and many times); ``tf.print`` output is captured at the
file-descriptor level; string results are compared as text after decoding bytes (a ``tf.string``
tensor gives ``bytes`` in NumPy). References come from plain Python and NumPy.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from .capture import capture_output
from .compare import as_text, assert_close, case_label, fail, passed, to_numpy
from .graphs import graph_op_types, printed_lines, tracing_count
from .harness import call, check, require_tf_function

__all__ = ["check_classify", "classify_reference", "check_tanh_loop", "check_fizzbuzz", "check_count_word",
           "check_sum_even", "fizzbuzz_reference"]


def classify_reference(x: float) -> str:
    """The word for the sign of x: "positive" (x > 0), "negative" (x < 0) or "zero"."""
    return "positive" if x > 0 else "negative" if x < 0 else "zero"


@check("classify")
def check_classify(fn, cases=None, hidden=False):
    """Check ``classify(x)``: a ``tf.function`` with plain Python ``if``/``elif``/``else``
    returning the ``tf.string`` ``"positive"``, ``"negative"`` or ``"zero"`` for the float32
    scalar ``x`` (:func:`classify_reference`).

    The check calls ``fn`` twice per case (all three branches by default) and compares the
    decoded result, then reads ``tf.autograph.to_code(fn.python_function)``: it must hold
    AutoGraph's ``ag__.if_stmt``, i.e. a plain ``if`` on the tensor that AutoGraph converted.

    Args:
        fn: the student's ``tf.function``.
        cases: floats; default ``[2.0, -3.0, 0.0]``.
    Raises:
        CheckFailed: M09 if the ``if`` cannot run in the graph (``autograph=False``).
    """
    __tracebackhide__ = True
    cases = [2.0, -3.0, 0.0] if cases is None else cases
    name = "classify"
    require_tf_function(fn, name)
    for index, x in enumerate(cases):
        label = case_label(x, hidden, index)
        want = classify_reference(x)
        for _ in range(2):
            got = call(fn, tf.constant(x, tf.float32), what=f"{name} ({label})")
            if not tf.is_tensor(got) or got.dtype != tf.string:
                fail(f"{name} ({label}) should return a tf.string tensor, got {_describe(got)}.")
            if as_text(got) != want:
                _fail_if_decided_while_tracing(fn, f"{name} ({label})")
                fail(f"{name} ({label}): expected {want.encode()!r} (tf.string), got "
                     f"{to_numpy(got, name).item()!r}.")
    code = tf.autograph.to_code(fn.python_function)
    if "ag__.if_stmt" not in code:
        fail(f"{name} gives the right strings but tf.autograph.to_code shows no ag__.if_stmt: "
             f"the exercise is to write plain Python `if x > 0:` / `elif` / `else` and let "
             f"AutoGraph convert them.")
    passed(name, len(cases))


def _fail_if_decided_while_tracing(fn, what: str) -> None:
    """M17: a wrong answer from a graph without any ``If`` op: the ``if`` tested a Python value
    (``x is True``, ``x is None``, ``x == None``), which was decided once, while tracing."""
    __tracebackhide__ = True
    ops = set(graph_op_types(fn, tf.TensorSpec([], tf.float32)))
    if not {"If", "StatelessIf", "Select", "SelectV2", "Case", "StatelessCase"} & ops:
        fail(f"{what} took the wrong branch, and its graph has no If op: the `if` tested a "
             f"Python value, decided once while TensorFlow traced the function, not the "
             f"tensor's value on each call. `x is True`, `x is None` or `x == None` compare "
             f"the tensor object itself, so they are the same on every call.", mistake="M17",
             fix="test the value with a TensorFlow comparison: `if x > 0:` / `elif x < 0:`.")


def _describe(value) -> str:
    if tf.is_tensor(value):
        return f"a {value.dtype.name} tensor"
    return f"{type(value).__name__} {value!r}"


@check("tanh_loop")
def check_tanh_loop(fn, cases=None, hidden=False):
    """Check ``tanh_loop(x)``: a ``tf.function`` that, while ``tf.reduce_sum(x) > 1``, applies
    ``x = tf.tanh(x)`` and ``tf.print``s x, then returns x.

    The reference is the same loop in NumPy (float64); each case is called twice, with output
    captured at the file-descriptor level: one printed line per iteration is expected.

    Args:
        fn: the student's ``tf.function`` of a float32 vector (shape (n,)).
        cases: lists of floats; default ``[[1.0, 2.0]]`` (5 iterations). Include one with
            ``sum <= 1`` (no iteration).
    Raises:
        CheckFailed: M08 when fewer lines than iterations are printed (Python print).
    """
    __tracebackhide__ = True
    cases = [[1.0, 2.0]] if cases is None else cases
    name = "tanh_loop"
    require_tf_function(fn, name)
    for index, values in enumerate(cases):
        label = case_label(values, hidden, index)
        x = np.asarray(values, np.float64)
        steps = 0
        while x.sum() > 1:
            x = np.tanh(x)
            steps += 1
        for _ in range(2):
            with capture_output() as out:
                got = call(fn, tf.constant(values, tf.float32), what=f"{name} ({label})")
            assert_close(got, x, f"{name} ({label})", rtol=1e-4, atol=1e-5, check_dtype="float")
            lines = printed_lines(out)
            if len(lines) < steps:
                # Not how many lines: that depends on whether fn was traced before this call.
                fail(f"{name} ({label}) ran {steps} iterations but did not print once per "
                     f"iteration. A Python print() runs once, while TensorFlow traces the loop "
                     f"body, and the graph it builds has no print in it.", mistake="M08",
                     fix="print with tf.print(x) inside the loop: it runs on every iteration.")
            if len(lines) > steps:
                fail(f"{name} ({label}) ran {steps} iterations but printed {len(lines)} lines: "
                     f"print x once per iteration, inside the loop, after the tanh.")
    passed(name, len(cases))


def fizzbuzz_reference(n: int) -> list[str]:
    """FizzBuzz of 1..n in plain Python: "Fizz" on multiples of 3, "Buzz" on multiples of 5,
    "FizzBuzz" on multiples of both, else the number."""
    return ["FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0
            else str(i) for i in range(1, n + 1)]


@check("fizzbuzz")
def check_fizzbuzz(fn, cases=None, hidden=False):
    """Check ``fizzbuzz(n)``: a ``tf.function`` of an int32 scalar tensor ``n`` returning a
    ``tf.string`` tensor of shape (n,) with FizzBuzz of 1..n (:func:`fizzbuzz_reference`).

    Every case is called twice with ``tf.constant(n)``; all calls must share one trace (the loop
    is a ``tf.range`` loop, a ``while_loop`` in the graph, not a Python loop unrolled per n).

    Args:
        fn: the student's ``tf.function``.
        cases: values of n; default ``[15]``.
    Raises:
        CheckFailed: M11 when every entry is ``b''`` (the result of ``ta.write`` was dropped).
    """
    __tracebackhide__ = True
    cases = [15] if cases is None else cases
    name = "fizzbuzz"
    require_tf_function(fn, name)
    before = tracing_count(fn)
    for index, n in enumerate(cases):
        label = case_label(f"n={n}", hidden, index)
        want = fizzbuzz_reference(n)
        for _ in range(2):
            got = call(fn, tf.constant(n), what=f"{name} ({label})")
            if not tf.is_tensor(got) or got.dtype != tf.string:
                fail(f"{name} ({label}) should return a tf.string tensor, got {_describe(got)}.")
            values = got.numpy()
            if values.shape != (n,):
                fail(f"{name} ({label}) should have shape ({n},), got {values.shape}.")
            if n and all(v == b"" for v in values):
                fail(f"{name} ({label}) returned {n} empty strings b''. In a graph "
                     f"TensorArray.write returns a new TensorArray and leaves the old one "
                     f"unchanged; if its result is dropped, nothing is written (eager mode hides "
                     f"this).", mistake="M11", fix="assign it back: ta = ta.write(i, s).")
            for i, (v, w) in enumerate(zip(values, want)):
                if as_text(v) != w:
                    fail(f"{name} ({label}): entry {i} (for the number {i + 1}) should be "
                         f"{w.encode()!r}, got {v!r}.")
    traces = tracing_count(fn) - before
    if traces > 1:
        fail(f"{name} traced {traces} times for {len(cases)} values of n given as tensors: loop "
             f"with `for i in tf.range(1, n + 1)` so one graph serves every n.")
    passed(name, len(cases))


@check("count_word")
def check_count_word(fn, cases=None, hidden=False):
    """Check ``count_word(labels, word)``: how many entries of the 1-D ``tf.string`` tensor
    ``labels`` equal the Python ``str`` ``word`` exactly, as a Python ``int``.

    The reference counts in Python on the decoded strings.

    Args:
        fn: the student's function (eager, not decorated).
        cases: ``(labels, word)`` pairs of a list of str and a str; default FizzBuzz of 15 and
            ``"Fizz"`` (4).
    Raises:
        CheckFailed: M10 when the count is 0 but the word occurs (bytes compared with str).
    """
    __tracebackhide__ = True
    cases = [(fizzbuzz_reference(15), "Fizz")] if cases is None else cases
    name = "count_word"
    for index, (labels, word) in enumerate(cases):
        shown = labels if len(labels) <= 6 else labels[:5] + ["...", labels[-1]]
        label = case_label(f"labels={shown} ({len(labels)} entries), word={word!r}", hidden, index)
        want = sum(1 for s in labels if s == word)
        got = call(fn, tf.constant(labels, tf.string), word, what=f"{name} ({label})")
        got_value = to_numpy(got, f"{name} ({label})")
        if got_value.shape != () or not np.issubdtype(got_value.dtype, np.integer):
            fail(f"{name} ({label}) should return one integer, got {_describe(got)}.")
        if int(got_value) == 0 and want > 0:
            fail(f"{name} ({label}) returned 0, but {word!r} occurs {want} times. A tf.string "
                 f"tensor holds bytes: labels.numpy() gives b'{word}', and b'{word}' == "
                 f"'{word}' is False in Python.", mistake="M10",
                 fix="decode (s.decode() == word) or compare with word.encode().")
        if int(got_value) != want:
            fail(f"{name} ({label}): expected {want}, got {int(got_value)}.")
    passed(name, len(cases))


@check("sum_even")
def check_sum_even(fn, cases=None, hidden=False):
    """Check ``sum_even(items)``: a ``tf.function`` that loops over the 1-D int32 tensor
    ``items`` with ``for``, skips odd entries with ``continue`` and returns the int32 sum of
    the even ones (0 for none, or an empty tensor).

    Each case is called twice; the reference is NumPy's ``items[items % 2 == 0].sum()``.
    The graph for a vector of unknown length must hold a ``While`` loop (AutoGraph's
    conversion of ``for`` over a tensor).

    Args:
        fn: the student's ``tf.function``.
        cases: lists of ints; default ``[[1, 2, 3, 4], [5, 10, 15]]``.
    """
    __tracebackhide__ = True
    cases = [[1, 2, 3, 4], [5, 10, 15]] if cases is None else cases
    name = "sum_even"
    require_tf_function(fn, name)
    for index, values in enumerate(cases):
        label = case_label(values, hidden, index)
        items = np.asarray(values, np.int32).reshape(-1)
        want = items[items % 2 == 0].sum(dtype=np.int32)
        for _ in range(2):
            got = call(fn, tf.constant(items, tf.int32), what=f"{name} ({label})")
            assert_close(got, want, f"{name} ({label})", check_dtype="int")
    ops = set(call(graph_op_types, fn, tf.TensorSpec([None], tf.int32),
                         what=f"{name} traced for a vector of unknown length"))
    if not {"While", "StatelessWhile"} & ops:
        fail(f"{name} gives the right sums, but its graph for a vector of unknown length has no "
             f"While loop: write `for item in items:` over the tensor (AutoGraph makes it a "
             f"tf.while_loop) with `continue` for odd items.")
    passed(name, len(cases))
