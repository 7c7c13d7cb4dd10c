"""What the grader halves share to read observations (NumPy only): each reader raises
ValueError on observations of an unexpected form, which the grader turns into a "malformed"
finding (:func:`autograder.checks.judge.judge_observation`)."""
from __future__ import annotations

import numpy as np

#: Most op type names a judge reads (a graph of this course has a few dozen).
MAX_OP_TYPES = 5000


def op_types(obs, key: str = "op_types") -> set:
    """The op type names the kernel observed, as a set of str (ValueError when malformed)."""
    names = obs[key]
    if not isinstance(names, list) or len(names) > MAX_OP_TYPES or not all(
            isinstance(name, str) for name in names):
        raise ValueError("op types of an unexpected form")
    return set(names)


def values(obs, key: str, count: int | None = None) -> list:
    """``obs[key]``, a list (of exactly ``count`` items when given); ValueError otherwise."""
    items = obs[key]
    if not isinstance(items, list) or len(items) > MAX_OP_TYPES or (
            count is not None and len(items) != count):
        raise ValueError(f"{key}: not a list of {count} values")
    return items


def count(obs, key: str) -> int:
    """``obs[key]``, a non-negative int (ValueError otherwise)."""
    value = obs[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key}: not a count")
    return value


def flag(obs, key: str) -> bool:
    """``obs[key]``, a bool (ValueError otherwise)."""
    value = obs[key]
    if not isinstance(value, bool):
        raise ValueError(f"{key}: not a bool")
    return value


def matches(actual, expected, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Whether a student's value (decoded) is numeric, of the reference's shape and close."""
    if actual is None or not isinstance(actual, (np.ndarray, int, float, list)) \
            or isinstance(actual, bool):
        return False
    try:
        got = np.asarray(actual, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    want = np.asarray(expected, dtype=np.float64)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=rtol, atol=atol))


def check_probe(ctx, got, want, got_case, want_case, probe: str, shown: str, fix: str,
                rtol: float = 1e-5, atol: float = 1e-6, **close) -> None:
    """Judge the result ``got`` of the student's code on a probe input (``want`` its reference;
    ``got_case``/``want_case``: the result and reference on the case's own input). When the
    probe's result is the case's own although the references differ, the result does not
    follow the input: a value worked out by hand (M21). Any other difference is a wrong value.
    ``probe`` names the probe input without a value, ``shown`` with it (used when
    ``ctx.reveal``)."""
    __tracebackhide__ = True
    if matches(got, want, rtol, atol):
        return
    if matches(got, got_case, 0.0, 0.0) and not matches(want, want_case, rtol, atol):
        ctx.fail(f"{ctx.what} returns the right value here, but the same value for "
                 f"{probe}: the result does not follow the input, so it is not computed by "
                 f"the code the exercise asks for (a value worked out by hand?).",
                 mistake="M21", fix=fix, code="constant")
    ctx.close(got, want, f", for {shown if ctx.reveal else probe}", rtol=rtol, atol=atol,
              **close)


#: Op types that run Python code from a graph (tf.py_function, tf.numpy_function).
PY_FUNC_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}


def refuse_py_function(ctx, obs, fix: str, key: str = "op_types") -> None:
    """Fail (M21, code ``py_function``) when the graph the kernel observed (every function it
    calls included) runs Python code: tf.py_function or tf.numpy_function. What such an op
    computes, prints or loops over is Python's doing, not the graph's."""
    __tracebackhide__ = True
    if PY_FUNC_OPS & op_types(obs, key):
        ctx.fail(f"{ctx.what} returns the right values, but its graph calls Python code "
                 f"(tf.py_function or tf.numpy_function): what the exercise asks of the graph "
                 f"happens in Python instead.", mistake="M21", fix=fix, code="py_function")


def require_from(ctx, obs, wanted: set, what_op: str, fix: str, code: str) -> None:
    """Fail (M21, ``code``) unless one of the op types ``wanted`` is among the ops the returned
    value is computed from (``obs["output_ops"]``: the outputs' ancestors in the function's own
    graph, which the kernel walked): a loop or branch beside the answer does not count."""
    __tracebackhide__ = True
    if not wanted & op_types(obs, "output_ops"):
        ctx.fail(f"{ctx.what} gives the right values and its graph has {what_op}, but the "
                 f"returned value is not computed from it: it stands beside the answer, which "
                 f"is computed another way.", mistake="M21", fix=fix, code=code)


def require_loop_work(ctx, obs, what_value: str, fix: str) -> None:
    """Fail (M21, ``loop_does_nothing``) when the kernel found that every While loop the
    returned value comes through hands it on unchanged (``obs["loop_work"]`` False,
    :func:`autograder.checks.graphs.loop_work`): the value was computed before the loop."""
    __tracebackhide__ = True
    if obs.get("loop_work") is False:
        ctx.fail(f"{ctx.what} gives the right {what_value}, and it comes out of a While loop, "
                 f"but the loop's body hands it on unchanged: it was computed before the loop, "
                 f"which does no work on it.", mistake="M21", fix=fix, code="loop_does_nothing")
