"""Checks of assignment 04 (control flow in graphs: if, while, for, FizzBuzz).

Every check is in two halves (:mod:`autograder.checks.judge`): a kernel half here,
``collect_<name>(fn, case, ctx)``, calls the student's code and returns what it observed as
plain data; the grader half in :mod:`autograder.checks.judge.control_flow` computes the
reference from plain Python and NumPy and decides. The visible ``check_<name>`` runs both.

Every decorated function is called as a graph, more than once, on inputs that reach every branch
(and loops that run zero, one and many times), and once more on a probe derived from the case;
``tf.print`` output is captured at the file-descriptor level and sent as counts of lines; the
op types of a graph (loop and branch bodies included) are sent as names; trace counts as
numbers; string results as bytes (a ``tf.string`` tensor gives ``bytes`` in NumPy), compared as
text by the grader.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from . import kernel_entry  # noqa: F401  (the grader's way into a grading kernel)
from .capture import capture_output
from .graphs import (graph_evidence, graph_op_types, graph_ops, printed_count,
                     snapshot, tracing_count)
from .harness import call, exercise_check, require_tf_function
from .judge.control_flow import (classify_reference, count_word_probe, fizzbuzz_reference,
                                 sum_even_probe, tanh_probe)

__all__ = ["check_classify", "classify_reference", "check_tanh_loop", "check_fizzbuzz",
           "check_count_word", "check_sum_even", "fizzbuzz_reference", "graph_op_types",
           "text_observation"]


def text_observation(value) -> dict:
    """A result that should be a ``tf.string`` tensor, as plain data: ``{"string": True,
    "value": its bytes (an object array), "kind": ...}``, or ``{"string": False, "value":
    None, "kind": what it is}`` (the kind holds the student's value: the grader shows it only in
    a visible check)."""
    if tf.is_tensor(value) and value.dtype == tf.string:
        return {"string": True, "value": np.asarray(value.numpy(), dtype=object),
                "kind": "a string tensor"}
    kind = f"a {value.dtype.name} tensor" if tf.is_tensor(value) else \
        f"{type(value).__name__} {value!r}"
    return {"string": False, "value": None, "kind": kind[:80]}


def collect_classify(fn, case, ctx):
    """Kernel half of ``check_classify``: ``classify(x)`` is a ``tf.function`` with plain
    Python ``if``/``elif``/``else`` returning the ``tf.string`` ``"positive"``, ``"negative"``
    or ``"zero"`` for the float32 scalar ``x``. Idea graded: the branch is a Python ``if``
    converted by AutoGraph, taken in the graph.

    The check calls ``fn`` twice, reads the op types of its graph for a float32 scalar and
    ``tf.autograph.to_code(fn.python_function)`` (which must hold AutoGraph's
    ``ag__.if_stmt``).

    Returns:
        ``{"results": [two text observations], "op_types": [...], "output_ops": [...],
        "autograph_if": bool}`` (output_ops: the op types the returned word is computed from).
    Raises:
        CheckFailed: M09 if the ``if`` cannot run in the graph (``autograph=False``); M18 for
            jit_compile=True; not_tf_function.
    """
    __tracebackhide__ = True
    require_tf_function(fn, ctx.exercise)
    x = float(case)
    got = [text_observation(call(fn, tf.constant(x, tf.float32), what=ctx.what))
           for _ in range(2)]
    ops = call(graph_ops, fn, tf.TensorSpec([], tf.float32), what=ctx.what)
    try:
        code = tf.autograph.to_code(fn.python_function)
    except Exception:  # no source (a lambda in a string, a builtin): nothing converted
        code = ""
    return {"results": got, **ops, "autograph_if": "ag__.if_stmt" in code}


check_classify = exercise_check("check_classify", collect_classify)


def collect_tanh_loop(fn, case, ctx):
    """Kernel half of ``check_tanh_loop``: ``tanh_loop(x)`` is a ``tf.function`` that, while
    ``tf.reduce_sum(x) > 1``, applies ``x = tf.tanh(x)`` and ``tf.print``s x, then returns x.
    Idea graded: the loop runs in the graph (a While op), printing on each iteration.

    The check calls ``fn`` twice on the float32 vector, capturing the output of each call at
    the file-descriptor level and counting its non-empty lines; counts the traces the second
    call makes; calls ``fn`` on a probe of the same shape (output discarded); counts the lines a
    fresh copy prints while it traces (a Python print) and reads the graph's op types.

    Returns:
        ``{"results", "lines", "retraced", "probe", "trace_lines", "op_types",
        "output_ops"}`` (output_ops: the op types the returned x is computed from).
    """
    __tracebackhide__ = True
    require_tf_function(fn, ctx.exercise)
    values = np.asarray(case, np.float32)
    spec = tf.TensorSpec(values.shape, tf.float32)
    got, lines, traces = [], [], []
    for _ in range(2):
        with capture_output() as out:
            got.append(call(fn, tf.constant(values), what=ctx.what))
        lines.append(printed_count(out))
        traces.append(tracing_count(fn))
    with capture_output():
        probe = call(fn, tf.constant(np.asarray(tanh_probe(case), np.float32)),
                             what=ctx.what)
    with capture_output() as traced:
        call(tf.function(fn.python_function).get_concrete_function, spec, what=ctx.what)
    with capture_output():
        ops = call(graph_ops, fn, spec, what=ctx.what)
    return {"results": got, "lines": lines, "retraced": traces[1] - traces[0], "probe": probe,
            "trace_lines": printed_count(traced), **ops}


check_tanh_loop = exercise_check("check_tanh_loop", collect_tanh_loop)


def collect_fizzbuzz(fn, case, ctx):
    """Kernel half of ``check_fizzbuzz``: ``fizzbuzz(n)`` is a ``tf.function`` of an int32
    scalar tensor ``n`` returning a ``tf.string`` tensor of shape (n,) with FizzBuzz of 1..n.
    Idea graded: one graph computes the words for any tensor n (no table written in advance,
    no Python function called from the graph).

    The check calls ``fn`` twice with ``tf.constant(n)`` and once with ``tf.constant(n + 1)``,
    counts the traces these calls made, and reads the graph for an int32 scalar
    (:func:`~autograder.checks.graphs.graph_evidence`: op types, the largest constant or
    captured tensor, its numeral strings).

    Returns:
        ``{"results": [two text observations], "probe": text observation, "traces",
        "op_types", "largest_constant", "numeral_strings", "captured_resources",
        "output_ops"}``.
    """
    __tracebackhide__ = True
    require_tf_function(fn, ctx.exercise)
    n = int(case)
    before = tracing_count(fn)
    got = [text_observation(call(fn, tf.constant(n), what=ctx.what)) for _ in range(2)]
    probe = text_observation(call(fn, tf.constant(n + 1), what=ctx.what))
    traces = tracing_count(fn) - before
    evidence = call(graph_evidence, fn, tf.TensorSpec([], tf.int32), what=ctx.what)
    return {"results": got, "probe": probe, "traces": traces, **evidence}


check_fizzbuzz = exercise_check("check_fizzbuzz", collect_fizzbuzz)


def collect_count_word(fn, case, ctx):
    """Kernel half of ``check_count_word``: ``count_word(labels, word)`` is how many entries of
    the 1-D ``tf.string`` tensor ``labels`` equal the Python ``str`` ``word`` exactly, as a
    Python ``int``. Idea graded: the bytes of a tf.string tensor are decoded (or the word
    encoded) before they are compared, and the count follows the labels.

    The check calls ``fn`` (eager, not decorated) on the case and on a probe with the word once
    more (:func:`~autograder.checks.judge.control_flow.count_word_probe`).

    Returns:
        ``{"result", "probe"}``: what ``fn`` returned.
    """
    __tracebackhide__ = True
    labels, word = case
    got = call(fn, tf.constant(list(labels), tf.string), word, what=ctx.what)
    probe = call(fn, tf.constant(count_word_probe(labels, word), tf.string), word,
                         what=ctx.what)
    return {"result": snapshot(got), "probe": snapshot(probe)}


check_count_word = exercise_check("check_count_word", collect_count_word)


def collect_sum_even(fn, case, ctx):
    """Kernel half of ``check_sum_even``: ``sum_even(items)`` is a ``tf.function`` that loops
    over the 1-D int32 tensor ``items`` with ``for``, skips odd entries with ``continue`` and
    returns the int32 sum of the even ones (0 for none, or an empty tensor). Idea graded: the
    loop runs in the graph (a While op for a vector of unknown length).

    The check calls ``fn`` twice on the case (counting the traces of the second call), once on
    a probe (:func:`~autograder.checks.judge.control_flow.sum_even_probe`), and reads the op
    types of its graph for ``tf.TensorSpec([None], tf.int32)``.

    Returns:
        ``{"results", "retraced", "probe", "op_types", "output_ops"}``.
    Raises:
        CheckFailed: M15 for a Python list filled in the loop (harness); M20, ...
    """
    __tracebackhide__ = True
    require_tf_function(fn, ctx.exercise)
    items = np.asarray(case, np.int32).reshape(-1)
    got, traces = [], []
    for _ in range(2):
        got.append(call(fn, tf.constant(items, tf.int32), what=ctx.what))
        traces.append(tracing_count(fn))
    probe = call(fn, tf.constant(np.asarray(sum_even_probe(case), np.int32)),
                         what=ctx.what)
    ops = call(graph_ops, fn, tf.TensorSpec([None], tf.int32),
               what=f"{ctx.exercise} traced for a vector of unknown length")
    return {"results": got, "retraced": traces[1] - traces[0], "probe": probe, **ops}


check_sum_even = exercise_check("check_sum_even", collect_sum_even)
