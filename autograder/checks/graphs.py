"""Checks of assignment 03 (tf.function and AutoGraph), and the graph-aware helpers that the
checks of 04 share.

Graph-aware means: a decorated function is called as a graph, more than once, on inputs that
reach every branch; traces are counted; ``tf.print`` output is captured at the file-descriptor
level (:mod:`autograder.checks.capture`); student code is called through
:mod:`autograder.checks.harness`, which names the exceptions TensorFlow raises for known mistakes
(M07, M09, M15, M16, M18, ...) and runs every check as graphs even when
``run_functions_eagerly(True)`` was left on (M19). Some mistakes only show in graph mode, which is
why the checks never settle for one eager call. No traced function is kept between calls.
Reference values come from NumPy and analytic derivatives.
"""
from __future__ import annotations

import re

import numpy as np
import tensorflow as tf

from .capture import capture_output
from .compare import assert_close, case_label, fail, passed
from .harness import call, check, is_tf_function, require_tf_function

__all__ = [
    "check_square_if_positive", "check_noisy_square", "check_accumulator",
    "check_make_celsius_to_fahrenheit", "check_grad_through",
    "is_tf_function", "require_tf_function", "tracing_count", "graph_op_types", "printed_lines",
]


# --------------------------------------------------------------------------- graph helpers

def tracing_count(fn) -> int:
    """How many times the ``tf.function`` ``fn`` has traced (made a concrete function) so far."""
    return fn.experimental_get_tracing_count()


def graph_op_types(fn, *input_signature) -> list[str]:
    """The op types of ``fn``'s graph for ``input_signature`` (``tf.TensorSpec`` s or values),
    in graph order; ops inside a loop or branch body are not listed (the ``While``/``If`` is)."""
    concrete = fn.get_concrete_function(*input_signature)
    return [op.type for op in concrete.graph.get_operations()]


_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?", re.IGNORECASE)


def printed_lines(captured, value: float | None = None, rtol: float = 1e-3) -> list[str]:
    """Non-empty captured lines; with ``value``, only those holding a number close to it
    (``tf.print`` writes 3.0 as ``3`` and 0.1 as ``0.1``)."""
    lines = captured.lines()
    if value is None:
        return lines
    return [line for line in lines
            if any(np.isclose(float(n), value, rtol=rtol, atol=1e-6) for n in _NUMBER.findall(line))]


def _scalar(x) -> tf.Tensor:
    return tf.constant(x, dtype=tf.float32)


# --------------------------------------------------------------------------- 03 checks

@check("square_if_positive")
def check_square_if_positive(fn, cases=None, hidden=False):
    """Check ``square_if_positive(x)``: ``x * x`` when ``x > 0``, else ``x``, written with
    ``tf.cond`` so that it runs as a graph without AutoGraph.

    The check wraps ``fn``'s Python function in ``tf.function(..., autograph=False)`` itself
    (whatever decorator the student wrote), calls it twice per case on float32 scalars, and
    compares with ``np.where(x > 0, x * x, x)``. The graph must hold an ``If``/``StatelessIf``
    op (that is what ``tf.cond`` builds).

    Args:
        fn: the student's function (decorated or not) of a float32 scalar tensor.
        cases: float inputs; default ``[3.0, -2.0]``. Cover both branches.
    Raises:
        CheckFailed: M09 when a Python ``if`` on the tensor fails without AutoGraph.
    """
    __tracebackhide__ = True
    cases = [3.0, -2.0] if cases is None else cases
    name = "square_if_positive"
    graph = tf.function(getattr(fn, "python_function", fn), autograph=False)
    for index, x in enumerate(cases):
        label = case_label(x, hidden, index)
        expected = np.where(x > 0, np.float32(x) * np.float32(x), np.float32(x))
        for _ in range(2):
            got = call(graph, _scalar(x), what=f"{name} as a graph without AutoGraph ({label})")
            assert_close(got, expected, f"{name} ({label})", check_dtype="float")
    ops = graph_op_types(graph, tf.TensorSpec([], tf.float32))
    if not {"If", "StatelessIf"} & set(ops):
        fail(f"{name} gives the right values but its graph has no If op, so it does not use "
             f"tf.cond (ops: {', '.join(sorted(set(ops)))}).",
             fix="write tf.cond(tf.greater(x, 0), if_true, if_false) with two functions of no "
                 "arguments.")
    passed(name, len(cases))


@check("noisy_square")
def check_noisy_square(fn, cases=None, hidden=False):
    """Check ``noisy_square(x)``: a ``tf.function`` returning ``x * x`` that prints x with
    ``tf.print`` on every call.

    Each case ``(x, calls)`` calls ``fn`` ``calls`` times with the same float32 scalar, capturing
    stdout and stderr at the file-descriptor level (``tf.print`` writes from C++), and expects at
    least ``calls`` printed lines holding x. Output is captured, never shown.

    Args:
        fn: the student's ``tf.function``.
        cases: ``(x, calls)`` pairs; default ``[(3.0, 3)]``.
    Raises:
        CheckFailed: M08 when fewer lines than calls appear (a Python ``print`` runs only while
            TensorFlow traces the function, not on every call); M18 for jit_compile=True.
    """
    __tracebackhide__ = True
    cases = [(3.0, 3)] if cases is None else cases
    name = "noisy_square"
    require_tf_function(fn, name)
    for index, (x, calls) in enumerate(cases):
        label = case_label(x, hidden, index)
        with capture_output() as out:
            results = [call(fn, _scalar(x), what=f"{name} ({label})") for _ in range(calls)]
        for got in results:
            assert_close(got, np.float32(x) * np.float32(x), f"{name} ({label})", check_dtype="float")
        lines = printed_lines(out, x)
        if len(lines) < calls:
            fail(f"{name} was called {calls} times ({label}) but printed x only {len(lines)} "
                 f"time(s). A Python print() runs once, while TensorFlow traces the function; "
                 f"the graph it builds has no print in it.", mistake="M08",
                 fix="use tf.print(...), an op of the graph that runs on every call.")
    passed(name, len(cases))


@check("Accumulator")
def check_accumulator(cls, cases=None, hidden=False):
    """Check the ``Accumulator`` class: ``Accumulator()`` holds ``total``, a float32
    ``tf.Variable`` starting at 0, and its ``tf.function`` method ``add(x)`` adds x to it and
    returns the new total.

    Each case is a list of values: a fresh ``Accumulator`` is made and ``add`` called on each
    value (float32 scalar tensors); the returned totals must be the running sums
    (``np.cumsum``), and a second fresh instance must start again at 0.

    Args:
        cls: the student's class.
        cases: lists of floats; default ``[[1.0, 2.0, 3.0]]``.
    Raises:
        CheckFailed: M07 when ``add`` raises the ValueError of a ``tf.Variable`` created
            inside a ``tf.function``.
    """
    __tracebackhide__ = True
    cases = [[1.0, 2.0, 3.0]] if cases is None else cases
    name = "Accumulator"
    for index, values in enumerate(cases):
        label = case_label(values, hidden, index)
        for _ in range(2):  # a second instance must not share the first one's total
            acc = call(cls, what=f"{name}()")
            require_tf_function(acc.add, "Accumulator.add")
            expected = np.cumsum(np.asarray(values, np.float32))
            for step, (x, want) in enumerate(zip(values, expected)):
                got = call(acc.add, _scalar(x), what=f"{name}.add ({label}, call {step + 1})")
                assert_close(got, want, f"{name}.add total after {step + 1} call(s) ({label})",
                             check_dtype="float")
            total = getattr(acc, "total", None)
            if not isinstance(total, tf.Variable):
                fail(f"{name}.total should be a tf.Variable, got {type(total).__name__}.",
                     fix="make it once, in __init__: self.total = tf.Variable(0.0).")
            assert_close(total, expected[-1], f"{name}.total after the calls ({label})")
    passed(name, len(cases))


@check("make_celsius_to_fahrenheit")
def check_make_celsius_to_fahrenheit(make_fn, cases=None, hidden=False):
    """Check ``make_celsius_to_fahrenheit()``: it returns a ``tf.function`` computing
    ``c * 9 / 5 + 32`` that traces once for every float32 input, Python floats and tensors of
    any shape included.

    The check makes a fresh function with ``make_fn()``, calls it twice per case, compares with
    NumPy, and expects exactly one trace over all the calls. A plain ``tf.function`` retraces for
    every new Python float (the value is part of the trace key) and ``reduce_retracing=True``
    does not change that; an ``input_signature`` with
    ``tf.TensorSpec(shape=None, dtype=tf.float32)`` does.

    Args:
        make_fn: the student's function of no arguments returning the ``tf.function``.
        cases: inputs: Python floats or nested lists of floats; default ``[0.0, 100.0, -40.0]``.
    """
    __tracebackhide__ = True
    cases = [0.0, 100.0, -40.0] if cases is None else cases
    name = "make_celsius_to_fahrenheit()"
    fn = call(make_fn, what="make_celsius_to_fahrenheit()")
    require_tf_function(fn, "The function returned by make_celsius_to_fahrenheit()",
                        fix="return tf.function(fahrenheit, input_signature=[...]).")
    for index, c in enumerate(cases):
        label = case_label(c, hidden, index)
        expected = np.asarray(c, np.float32) * 9 / 5 + 32
        for _ in range(2):
            got = call(fn, c, what=f"{name} called on {label}")
            assert_close(got, expected, f"{name} called on {label}", rtol=1e-5, atol=1e-4,
                         check_dtype="float")
    traces = tracing_count(fn)
    if traces > 1:
        fail(f"{name} gave the right values but traced {traces} times for {len(cases)} inputs: "
             f"each new Python float (or shape) made a new graph (reduce_retracing=True does "
             f"not help with Python numbers).",
             fix="pass an input_signature, tf.function(fahrenheit, input_signature=["
                 "tf.TensorSpec(shape=None, dtype=tf.float32)]), so every input becomes one "
                 "float32 tensor and one graph serves all calls.")
    passed("make_celsius_to_fahrenheit", len(cases))


# Functions f of check_grad_through with their analytic derivatives, by name. The check wraps
# each in a new tf.function per case: a traced function kept from one call to the next would
# remember the variables of the first call (a student may pass f a tf.Variable of their own).
def _poly(x):
    return x ** 3 - 2.0 * x


def _branchy(x):
    if x > 1.0:  # AutoGraph: tf.cond; the gradient flows through the branch taken
        return x * x
    return 3.0 * x


def _sin_x(x):
    return tf.sin(x) * x


GRAD_FUNCTIONS = {
    "poly": (_poly, lambda x: 3 * x ** 2 - 2.0),
    "branchy": (_branchy, lambda x: 2 * x if x > 1.0 else 3.0),
    "sin_x": (_sin_x, lambda x: np.cos(x) * x + np.sin(x)),
}


@check("grad_through")
def check_grad_through(fn, cases=None, hidden=False):
    """Check ``grad_through(f, x)``: the derivative df/dx at the float32 scalar tensor ``x``
    (a ``tf.constant``) of a ``tf.function`` ``f``, computed with ``tf.GradientTape``.

    Cases name functions of :data:`GRAD_FUNCTIONS` (each wrapped in a new ``tf.function`` per
    case; one has a data-dependent ``if``) and a point; the expected value is the analytic
    derivative.

    Args:
        fn: the student's function ``grad_through(f, x)``.
        cases: ``(function name, x)`` pairs; default ``[("poly", 2.0), ("branchy", 3.0)]``.
    Raises:
        CheckFailed: M01 when the gradient is None for a constant input (not watched).
    """
    __tracebackhide__ = True
    cases = [("poly", 2.0), ("branchy", 3.0)] if cases is None else cases
    name = "grad_through"
    for index, (f_name, x) in enumerate(cases):
        python_f, derivative = GRAD_FUNCTIONS[f_name]
        label = case_label(f"f={f_name}, x={x}", hidden, index)
        got = call(fn, tf.function(python_f), _scalar(x), what=f"{name} ({label})")
        if got is None:
            fail(f"{name} ({label}) returned None: x is a tf.constant, and a tape only records "
                 f"operations on what it watches.", mistake="M01",
                 fix="call tape.watch(x) inside the `with` block before calling f(x).")
        assert_close(got, derivative(np.float64(x)), f"{name} ({label})", rtol=1e-4, atol=1e-4,
                     check_dtype="float")
    passed(name, len(cases))
