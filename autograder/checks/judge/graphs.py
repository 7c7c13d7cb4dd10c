"""Grader halves of the checks of assignment 03 (tf.function and AutoGraph), NumPy only.

Each judge takes a case, the observations of the kernel half (``autograder/checks/graphs.py``)
and a :class:`~autograder.checks.judge.Context`; references come from NumPy and analytic
derivatives. Much of 03's evidence can only be observed in the kernel (trace counts, printed
lines, the op types of a graph, which values ``tape.gradient`` produced): the kernel half sends
it as counts, booleans and lists of op type names, never as text the student printed, and the
judges decide from it. Messages show values only when ``ctx.reveal`` (a student's visible check).

Besides its own inputs, a case's kernel half also calls the student's code on a *probe*, an
input derived from the case by the functions below (both halves use them): an answer worked out
by hand for the inputs it is checked on is right there and wrong on the probe (M21).
"""
from __future__ import annotations

import numpy as np

from . import exercise
from .pitfalls import PREDICTION_LABEL, _predicted, _same, _wrong
from .readers import (PY_FUNC_OPS, check_probe, count, matches, op_types, refuse_py_function,
                      require_from, values)

MODULE = "autograder.checks.graphs"

#: Op types of a branch built by tf.cond (AutoGraph's converted ``if`` builds the same).
CONDITIONAL_OPS = {"If", "StatelessIf"}
#: Op types that change a tf.Variable in place.
ASSIGN_OPS = {"AssignAddVariableOp", "AssignSubVariableOp", "AssignVariableOp"}
#: Op types of tf.print.
PRINT_OPS = {"PrintV2", "Print"}

# --------------------------------------------------------------------------- predictions
# Graded as 07's predict_* cells are (autograder.checks.judge.pitfalls): a prediction's case is
# None and its observations are {"values": [the prediction variables' values]}.

#: What a Python ``if`` on a graph tensor raises without AutoGraph, and its base class.
IF_ERRORS = ("OperatorNotAllowedInGraphError", "TypeError")


@exercise("predict_if_error", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="without AutoGraph a Python if on a graph tensor cannot be decided while "
               "TensorFlow traces (the tensor has no value yet): the first call raises "
               "OperatorNotAllowedInGraphError, a TypeError.")
def predict_if_error(case, obs, ctx):
    """``obs``: ``values`` = [predicted_if_error], the name of an exception class (the kernel
    half turns a class into its name) or None (\"it returns\"). Reference:
    OperatorNotAllowedInGraphError (or its base class, TypeError)."""
    name = "predicted_if_error"
    [got] = values(obs, "values", 1)
    if got is not None and (not isinstance(got, str) or not 0 < len(got) <= 100):
        ctx.fail(f"{ctx.what}: {name} should be the name of an exception class as a string "
                 f"(\"ValueError\"), or None if you expect a value, written in the prediction "
                 f"cell before the code runs.",
                 mistake="M71", fix=f"set `{name} = \"...\"` in the prediction cell.",
                 code="prediction_type")
    if got is None or got.strip().rsplit(".", 1)[-1] not in IF_ERRORS:
        _wrong(ctx, name, got, IF_ERRORS[0], "While tracing, x >= 0 is a symbolic tensor with "
               "no value: Python's if asks for its truth value, and without AutoGraph nothing "
               "turns the if into a tf.cond, so the first call raises.", mistake="M09")


#: The calls of the draft in the trace prediction (the notebook's reveal cell makes them):
#: 20.0, 25.0, 20.0 (Python floats), a float32 scalar, float32 vectors of 2 and 3.
DRAFT_TRACES = 4


@exercise("predict_retraces", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="with reduce_retracing=True Python floats are still traced by value (20.0 and "
               "25.0 make a graph each, the second 20.0 reuses the first); a float32 scalar "
               "tensor makes a third, a vector a fourth, which reduce_retracing generalises "
               "to every shape, so the last vector reuses it: 4 traces.")
def predict_retraces(case, obs, ctx):
    """``obs``: ``values`` = [predicted_draft_traces]. Reference: 4."""
    names = ("predicted_draft_traces",)
    [traces] = got = values(obs, "values", 1)
    _predicted(ctx, got, names, ("count",))
    if not _same(traces, DRAFT_TRACES):
        why = ("reduce_retracing relaxes shapes, not Python values: 20.0 and 25.0 are traced "
               "by value (two graphs), the scalar tensor makes a third, the first vector a "
               "fourth, generalised to any shape, which the second vector reuses.")
        _wrong(ctx, names[0], traces, DRAFT_TRACES, why,
               mistake="M26" if traces in (1, 2, 3) else None)


@exercise("predict_prints", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="a Python print runs while TensorFlow traces (once for the three float32 "
               "scalars, once more for the vector: 2 lines); tf.print is an op of the graph "
               "and runs on each of the four calls (4 lines).")
def predict_prints(case, obs, ctx):
    """``obs``: ``values`` = [predicted_python_prints, predicted_tf_prints]. Reference: 2, 4."""
    names = ("predicted_python_prints", "predicted_tf_prints")
    python, printed = got = values(obs, "values", 2)
    _predicted(ctx, got, names, ("count", "count"))
    if not _same(python, 2):
        _wrong(ctx, names[0], python, 2, "Python's print runs only while TensorFlow traces: "
               "the three scalars share one graph, and the vector (a new shape) traces once "
               "more.", mistake="M08" if python == 4 else None)
    if not _same(printed, 4):
        _wrong(ctx, names[1], printed, 4, "tf.print is an op of the graph: it runs on every "
               "call, four times, whichever graph the call runs.")



# --------------------------------------------------------------------------- shared helpers

def nearby(x: float) -> float:
    """The probe of a scalar case: another input on the same side of 0 (``2x + 1`` for x > 0,
    else ``2x - 1``), so the same branch is taken."""
    x = float(x)
    return 2.0 * x + 1.0 if x > 0 else 2.0 * x - 1.0


#: Most readings a case of make_celsius_to_fahrenheit may hold.
MAX_READINGS = 1000


def _readings(c) -> np.ndarray:
    """A case of make_celsius_to_fahrenheit: a non-empty vector of finite readings (ValueError
    otherwise)."""
    array = np.asarray(c, dtype=np.float64)
    if array.ndim != 1 or not 0 < array.size <= MAX_READINGS or not np.isfinite(array).all():
        raise ValueError("a case of make_celsius_to_fahrenheit is a vector of readings")
    return array


def celsius_inputs(c) -> list:
    """The inputs a case ``c`` (a vector of readings) of make_celsius_to_fahrenheit is called
    on, in order: ``c`` as a float32 vector twice, then the probes: a longer float32 vector
    (``c``, ``c + 10``, then c's first reading: 2n + 1 readings), a vector of one reading (c's
    first - 5) and, last, a list of Python floats of other values (``c + 1``)."""
    v = _readings(c)
    return [v.astype(np.float32), v.astype(np.float32),
            np.concatenate([v, v + 10.0, v[:1]]).astype(np.float32),
            np.array([np.float32(v[0]) - 5], np.float32), (v + 1.0).tolist()]


#: What celsius_refusals gives, in order (how messages name them).
REFUSALS = ("a matrix of two sensors' readings", "a Python float")


def celsius_refusals(c) -> list:
    """What the function made for a case ``c`` must refuse at the call, as :data:`REFUSALS`
    names them: a float32 matrix (``c`` stacked twice) and a Python float (c's first)."""
    v = _readings(c)
    return [np.stack([v, v]).astype(np.float32), float(v[0])]


# --------------------------------------------------------------------------- square_if_positive

def _square_if_positive(x: float) -> np.ndarray:
    x = np.float32(x)
    return np.where(x > 0, x * x, np.float32(0.0))


#: Op types that compute x * x: outside tf.cond's branches they run on every call.
SQUARE_OPS = {"Mul", "Square", "Pow"}
#: Op types of a branch in the graph: tf.cond's (and tf.case's) If, tf.switch_case's Case.
BRANCH_OPS = CONDITIONAL_OPS | {"Case", "StatelessCase"}
#: Op types a branch that returns a zero may hold (tf.constant(0.0), tf.zeros_like(x), a cast).
ZERO_OPS = {"Const", "Identity", "ZerosLike", "Fill", "Shape", "Cast", "NoOp", "Reshape"}
#: ... and a product of x with a constant (0.0 * x): made of these alone, a branch that gives 0
#: at a negative x has a zero factor, so it is 0 for every x (relu, square, maximum are none).
ZERO_BRANCH_OPS = ZERO_OPS | {"Mul"}


def returns_zero(body: list[str]) -> bool:
    """Whether a branch of these op types makes a zero (0.0, tf.zeros_like(x), 0.0 * x) rather
    than computing it by arithmetic that is 0 where x <= 0 (relu(x) ** 2)."""
    return set(body) <= ZERO_OPS or (set(body) <= ZERO_BRANCH_OPS and "Const" in body)
#: Op types of tf.where: both values computed, one picked afterwards.
SELECT_OPS = {"Select", "SelectV2"}
#: M72 as square_if_positive meets it, in the kernel: tf.cond's TypeError.
BRANCHES_DISAGREE = ("{what} raised TypeError: the two branches of tf.cond return tensors of "
                     "different dtypes or structures, and the If op has one output, of one "
                     "dtype, whichever branch runs.",
                     "make both branches return a float32 tensor of x's shape: a float literal "
                     "(0.0) or a tensor made from x, not the int 0.")
COND_FIX = ("read tf.cond: a predicate and two functions of no arguments, one per branch; the "
            "square is computed only in the branch for positive x.")


#: Ops that compare or take a sign: a mask made inside a branch decides what the cond is for.
COMPARE_OPS = {"Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual", "Sign"}


@exercise("square_if_positive", module=MODULE, cases=[3.0, -2.0],
          idea="the branch happens in the graph, built by tf.cond without AutoGraph: the graph "
               "of the function, traced with autograph=False, holds an If op (or tf.switch_case's "
               "Case op) that the returned value is computed from (no Python function called "
               "from the graph), decided by a predicate computed from x; x * x is computed "
               "inside the branch taken, not before the cond (nothing computed from x outside "
               "the branches but the predicate), with branches that differ and no tf.where in "
               "them; both branches return a float32 scalar; and the value follows x (also on "
               "a probe input of the same sign).",
          kernel_evidence="the op types of the graph traced with autograph=False (branch "
                          "bodies included, and outside them), those the returned value is "
                          "computed from, and the shape of its output",
          findings={"branches_disagree": BRANCHES_DISAGREE})
def square_if_positive(case, obs, ctx):
    """``obs``: ``results`` (two calls on x, as a graph without AutoGraph), ``probe`` (the
    result for :func:`nearby` x), ``op_types`` (of that graph and its branches),
    ``output_ops`` (the op types the returned value is computed from), ``outside_ops`` (the
    graph's own op types, branch bodies left out), ``output_shape`` (its output's shape, None
    when its rank is unknown), ``computed_outside`` (the op types computed from x that the
    output depends on outside the branch ops, their predicates left out), ``pred_from_x``
    (whether a branch op's predicate is computed from x), ``same_branches`` (whether a branch
    op's branches have the same op types). Reference: x * x if x > 0 else 0.0, in float32."""
    x = float(case)
    got = values(obs, "results", 2)
    shape = obs["output_shape"]
    if shape is not None and (not isinstance(shape, list) or len(shape) > 32):
        raise ValueError("output_shape of an unexpected form")
    if shape is None:  # a known shape that is not () is the values' check's (a wrong shape)
        ctx.fail(f"{ctx.what}: the graph's output has no known shape: the two "
                 f"branches of tf.cond return tensors of different shapes (a tensor of shape "
                 f"[1] beside the scalar x * x, say), so the If op's output has no one shape.",
                 mistake="M72", fix="make both branches return a float32 scalar, as x * x is: "
                                    "a float literal (0.0) or a tensor made from x.",
                 code="shapes_disagree")
    for value in got:
        ctx.close(value, _square_if_positive(x), check_dtype="float")
    check_probe(ctx, obs["probe"], _square_if_positive(nearby(x)), got[0],
                _square_if_positive(x), "another input of the same sign",
                f"the input {nearby(x)}", "compute the value from x inside the branches.",
                check_dtype="float")
    ops = op_types(obs)
    if not BRANCH_OPS & ops:
        shown = f" (ops: {', '.join(sorted(ops))})" if ctx.reveal else ""
        ctx.fail(f"{ctx.what} gives the right values but its graph has no If op, so it does "
                 f"not use tf.cond{shown}: tf.where (or arithmetic such as relu(x) ** 2) "
                 f"computes x * x on every call and picks afterwards. The exercise is the "
                 f"branch in the graph.",
                 mistake="M21", fix=COND_FIX, code="no_cond")
    refuse_py_function(ctx, obs, COND_FIX)
    require_from(ctx, obs, BRANCH_OPS, "an If op", COND_FIX, "cond_beside")
    if not isinstance(obs["pred_from_x"], bool) or not isinstance(obs["same_branches"], bool):
        raise ValueError("pred_from_x and same_branches should be booleans")
    if not obs["pred_from_x"]:
        ctx.fail(f"{ctx.what} gives the right values through tf.cond, but the cond's predicate "
                 f"is not computed from x (a constant, say): the branch is decided before the "
                 f"call and the same branch runs for every x, so whatever picks the value "
                 f"happens inside it.", mistake="M21",
                 fix="make the predicate x > 0, so that the graph decides at each call which "
                     "branch runs.", code="pred_not_x")
    if SELECT_OPS & ops:
        ctx.fail(f"{ctx.what} gives the right values through tf.cond, but a branch picks its "
                 f"value with tf.where: both x * x and 0.0 are computed and one kept, which is "
                 f"what the cond is there to avoid.", mistake="M21",
                 fix="let the cond do the picking: x * x in the function for x > 0, 0.0 in the "
                     "other, no tf.where.", code="where_inside")
    outside = op_types(obs, "computed_outside")
    if SQUARE_OPS & op_types(obs, "outside_ops") or outside:
        ctx.fail(f"{ctx.what} gives the right values through tf.cond, but x * x is computed "
                 f"before the cond, outside its branches: it runs on every call, for a "
                 f"negative x too, as with tf.where. A branch computes only what it returns.",
                 mistake="M21", fix="compute x * x inside the function for x > 0, the "
                                    "true_fn handed to tf.cond.", code="both_sides")
    if obs["same_branches"]:
        ctx.fail(f"{ctx.what} gives the right values through tf.cond, but its two branches do "
                 f"the same work: whichever way x > 0 goes, the same ops run, so the cond "
                 f"decides nothing and the squaring happens on every call.", mistake="M21",
                 fix="x * x in the function for x > 0 only; the other returns 0.0.",
                 code="same_branches")
    bodies = obs.get("branch_bodies", [])
    if not isinstance(bodies, list) or len(bodies) > 8 or not all(
            isinstance(b, list) and all(isinstance(o, list) and all(isinstance(n, str) for n in o)
                                        for o in b) for b in bodies):
        raise ValueError("branch_bodies of an unexpected form")
    if any(COMPARE_OPS & set(body) for branches in bodies for body in branches):
        ctx.fail(f"{ctx.what} gives the right values through tf.cond, but a branch compares x "
                 f"again (a mask such as tf.cast(x > 0, x.dtype), tf.sign): the value is picked "
                 f"by that arithmetic inside the branch, whichever branch the cond took.",
                 mistake="M21", fix="let the cond's predicate, x > 0, make the choice: x * x in "
                                    "one branch, 0.0 in the other, no comparison inside them.",
                 code="branch_decides")
    # Judged on a case x <= 0, once that branch's values are known to be right.
    if x <= 0 and bodies and not any(returns_zero(body) for branches in bodies for body in branches):
        ctx.fail(f"{ctx.what} gives the right values through tf.cond, but the branch for "
                 f"x <= 0 computes from x too (relu(x) ** 2, say) instead of returning 0.0: "
                 f"that branch's value then comes from arithmetic, not from the cond's choice.",
                 mistake="M21", fix="both branches of tf.cond must give the same dtype: the "
                                    "branch for non-positive x returns a float zero, only the "
                                    "other one computes the square.",
                 code="other_branch_computes")


# --------------------------------------------------------------------------- grad_through

#: Derivatives of the named functions of check_grad_through (autograder.checks.graphs).
DERIVATIVES = {
    "poly": lambda x: 3 * x ** 2 - 2.0,
    "branchy": lambda x: 2 * x if x > 1.0 else 3.0,
    "sin_x": lambda x: np.cos(x) * x + np.sin(x),
}


def grad_function_spec(spec):
    """What a grad_through case's function is: ``("name", None)`` for a named function, or
    ``("polynomial", coefficients)`` for ``{"coefficients": [a0, a1, ...]}`` (a0 + a1 x + ...),
    functions a student has never seen. ValueError for anything else."""
    if isinstance(spec, str):
        if spec not in DERIVATIVES:
            raise ValueError("unknown function")
        return spec, None
    if isinstance(spec, dict) and set(spec) == {"coefficients"}:
        coefficients = [float(a) for a in spec["coefficients"]]
        if not 1 <= len(coefficients) <= 12:
            raise ValueError("coefficients")
        return "polynomial", coefficients
    raise ValueError("unknown function")


#: The named functions of check_grad_through themselves (the kernel's are in TensorFlow).
VALUES = {
    "poly": lambda x: x ** 3 - 2.0 * x,
    "branchy": lambda x: x * x if x > 1.0 else 3.0 * x,
    "sin_x": lambda x: np.sin(x) * x,
}


def _value(spec, x: float) -> float:
    """f(x) of a grad_through case's function, in float64."""
    kind, coefficients = grad_function_spec(spec)
    if kind == "polynomial":
        return float(sum(a * x ** k for k, a in enumerate(coefficients)))
    return float(VALUES[kind](np.float64(x)))


def _derivative(spec, x: float) -> float:
    kind, coefficients = grad_function_spec(spec)
    if kind == "polynomial":
        return float(sum(k * a * x ** (k - 1) for k, a in enumerate(coefficients) if k))
    return float(DERIVATIVES[kind](np.float64(x)))


NO_AUTODIFF = "returns the right derivative, but no tape computed it"


@exercise("grad_through", module=MODULE, cases=[("poly", 2.0), ("branchy", 3.0)],
          label=lambda case: f"input f={case[0]}, x={case[1]}",
          idea="the gradient flows through a tf.function: the value returned is one that "
               "tape.gradient (or tape.jacobian, tape.batch_jacobian, forward-mode autodiff) "
               "produced, of the target f(x), with f run as a graph.",
          kernel_evidence="which values tape.gradient, tape.jacobian, tape.batch_jacobian or "
                          "ForwardAccumulator.jvp produced while grad_through ran, the values "
                          "of those calls' targets, and whether the tf.function f was traced")
def grad_through(case, obs, ctx):
    """``obs``: ``result``, ``from_autodiff`` (whether a tape call or a ForwardAccumulator
    produced it), ``targets`` (the values of the targets of the calls that produced it),
    ``f_traced`` (whether the tf.function f ran as a graph). Reference: the analytic
    derivative at x, and f(x) for the target."""
    spec, x = case
    ctx.close(obs["result"], _derivative(spec, float(x)), rtol=1e-4, atol=1e-4,
              check_dtype="float")
    if obs["from_autodiff"] is not True:
        ctx.fail(f"{ctx.what} {NO_AUTODIFF}: the exercise is the gradient through a "
                 f"tf.function.",
                 fix="let a tape record f on x (a watched constant) and return the gradient the "
                     "tape computes of f's value with respect to x.",
                 mistake="M21", code="no_tape")
    targets = obs["targets"]
    if not isinstance(targets, list) or len(targets) > 64:
        raise ValueError("targets of an unexpected form")
    fx = _value(spec, float(x))
    if not any(isinstance(t, float) and np.isclose(t, fx, rtol=1e-4, atol=1e-4)
               for t in targets):
        ctx.fail(f"{ctx.what} returns the right derivative from a tape, but the "
                 f"target the tape differentiated is not f(x): the derivative was worked out "
                 f"another way and handed back through the tape.",
                 fix="differentiate f's own value: record f on x inside the tape's block, then "
                     "ask the tape for that value's gradient with respect to x.",
                 mistake="M21", code="target_not_f")
    if obs["f_traced"] is not True:
        ctx.fail(f"{ctx.what} returns the right derivative, but f never ran as a graph: the "
                 f"exercise is the gradient through the tf.function itself.",
                 fix="call f(x) as it is given (not f.python_function), inside the tape's "
                     "`with` block.", mistake="M21", code="f_not_traced")


# --------------------------------------------------------------------------- log_cosh

#: M30 as log_cosh meets it: the tape gets no gradient through tf.numpy_function.
NO_GRADIENT = ("{what}: the tape gets no gradient through it (None): "
               "the graph hands x to NumPy (tf.numpy_function), and NumPy's operations are "
               "not recorded.")
TF_OPS_FIX = ("compute it with TensorFlow ops on x (their NumPy namesakes are in tf.math), "
              "with no tf.numpy_function, tf.py_function or .numpy() in the function.")


#: M33 as log_cosh meets it: cosh(x) overflows float32, so log(cosh(x)) is inf there.
OVERFLOW = ("{what} is inf or nan where log(cosh(x)) is finite{shown}: cosh(x) overflows "
            "float32 for |x| above about 89, although log(cosh(x)) is only about |x| - log 2 "
            "there.")
OVERFLOW_FIX = ("rewrite log(cosh(x)) so that no intermediate value overflows: factor e^|x| out "
                "of cosh and take its log by hand, leaving a log of a value near 1 that "
                "tf.math.softplus or tf.math.log1p compute stably (or compute in float64).")


@exercise("log_cosh", module=MODULE, cases=[[0.5, -2.0, 0.0, 100.0]],
          label=lambda case: f"input {case}",
          idea="the gradient flows through a tf.function only through TensorFlow ops, and the "
               "loss stays finite for large errors: run as a graph, log_cosh gives log(cosh(x)) "
               "(also where cosh(x) overflows float32, |x| > 89) and a tape's gradient through "
               "it is tanh(x); NumPy (tf.numpy_function) gives no gradient, and Python "
               "(tf.py_function) runs outside the graph.",
          kernel_evidence="the gradient a tape took through the tf.function, and the op types "
                          "of its graph (no Python or NumPy function called from it)")
def log_cosh(case, obs, ctx):
    """``obs``: ``result`` (log_cosh(x) as a graph), ``gradient`` (d sum(result)/dx from a
    tape, or None), ``op_types`` (of its graph). Reference: log(cosh(x)) and tanh(x), from
    float64."""
    x = np.asarray(case, np.float64)
    want = np.log(np.cosh(x)).astype(np.float32)
    ops = op_types(obs)
    if obs["gradient"] is None:
        if PY_FUNC_OPS & ops:
            ctx.fail(NO_GRADIENT.format(what=ctx.what), mistake="M30", fix=TF_OPS_FIX,
                     code="no_gradient")
        ctx.fail(f"{ctx.what}: the tape gets no gradient through it (None): the value is not "
                 f"computed from x by ops the tape records.",
                 mistake="M14", fix=TF_OPS_FIX, code="gradient_none")
    refuse_py_function(ctx, obs, TF_OPS_FIX)
    result = np.asarray(obs["result"], dtype=np.float64) if not isinstance(
        obs["result"], (str, bytes, dict)) else None
    gradient = np.asarray(obs["gradient"], dtype=np.float64) if not isinstance(
        obs["gradient"], (str, bytes, dict)) else None
    if result is not None and gradient is not None and result.shape == x.shape \
            and gradient.shape == x.shape:
        bad = (np.abs(x) > 80) & (~np.isfinite(result) | ~np.isfinite(gradient)
                                  | (np.abs(gradient) < 0.5))
        if bad.any():
            shown = f" (at x = {x[bad].tolist()})" if ctx.reveal else ""
            ctx.fail(OVERFLOW.format(what=ctx.what, shown=shown), mistake="M33",
                     fix=OVERFLOW_FIX, code="overflow")
    ctx.close(obs["result"], want, rtol=1e-5, atol=1e-5, check_dtype="float")
    ctx.close(obs["gradient"], np.tanh(x).astype(np.float32), ", its gradient", rtol=1e-4,
              atol=1e-5, check_dtype="float")


# --------------------------------------------------------------------------- make_celsius

def _fahrenheit(c) -> np.ndarray:
    return np.asarray(c, np.float32) * 9 / 5 + 32


RETRACED = ("{what} gives the right values but traced more than once for the vectors of one "
            "case: each new length (or shape) made a new graph, and reduce_retracing=True "
            "only generalises after a retrace.")
SIGNATURE_FIX = ("declare the input in an input_signature: one tf.TensorSpec of dtype float32 "
                 "whose shape says a vector and leaves its length free.")
ANY_SHAPE = ("{what} traces once, but its input_signature accepts any shape: a matrix or a "
             "scalar is answered instead of refused, and the signature a client reads says "
             "nothing about the rank. The design asks for a float32 vector of any length, and "
             "only that.")
REFUSED_INPUT = ("{what} raised TypeError: its input_signature refuses a float32 vector it "
                 "must accept (a vector of another length, or a list of Python floats).",
                 "a spec that binds every float32 vector, whatever its length.")


@exercise("make_celsius_to_fahrenheit", module=MODULE, cases=[[0.0, 100.0, -40.0], [36.6]],
          label=lambda case: f"input {case}",
          idea="the input_signature is the design: a fresh function from "
               "make_celsius_to_fahrenheit(), called on float32 vectors of several lengths and "
               "a list of Python floats, traces exactly once and computes c * 9 / 5 + 32 for "
               "each; its concrete function's signature is one float32 vector of any length, "
               "so a matrix and a Python float are refused at the call.",
          kernel_evidence="the trace count of the returned tf.function, whether it refused a "
                          "matrix and a Python float, the input signature of its concrete "
                          "function, and the op types of its graph (no Python function called "
                          "from it)",
          findings={"not_tf_function": ("{what}: the function returned by "
                                        "make_celsius_to_fahrenheit() is not a tf.function.",
                                        "return the tf.function that wraps fahrenheit itself, "
                                        "with an input_signature (read tf.function's "
                                        "input_signature and tf.TensorSpec)."),
                    "refused_input": REFUSED_INPUT})
def make_celsius_to_fahrenheit(case, obs, ctx):
    """``obs``: ``results`` (of the five calls of :func:`celsius_inputs`; the list's None when
    the vectors already traced more than once), ``traces`` (the function's trace count after
    the four vectors), ``traces_after_list`` (after the list too), ``refused`` (for each of :func:`celsius_refusals`,
    whether the call raised), ``signature`` (the specs of its concrete function's input
    signature, ``{"shape", "dtype"}``, or None without one), ``op_types`` (of its graph).
    Reference: c * 9 / 5 + 32 in float32, refused matrix and Python float."""
    inputs = celsius_inputs(case)
    got = values(obs, "results", len(inputs))
    for value, c in zip(got[:2], inputs[:2]):
        ctx.close(value, _fahrenheit(c), rtol=1e-5, atol=1e-4, check_dtype="float")
    fix = "return fahrenheit as a tf.function: c * 9.0 / 5.0 + 32.0 computed from c."
    for value, c, probe in zip(got[2:4], inputs[2:4], ("a longer vector",
                                                       "a vector of one reading")):
        check_probe(ctx, value, _fahrenheit(c), got[0], _fahrenheit(inputs[0]), probe,
                    f"{probe}, {np.asarray(c).tolist()}", fix, rtol=1e-5, atol=1e-4,
                    check_dtype="float")
    refuse_py_function(ctx, obs, "compute c * 9.0 / 5.0 + 32.0 with TensorFlow ops in the "
                                 "function.")
    traces = count(obs, "traces")
    if traces > 1:
        shown = (f" ({traces} traces for vectors of {len(inputs[0])}, {len(inputs[2])} and 1 "
                 f"readings)" if ctx.reveal else "")
        ctx.fail(RETRACED.format(what=ctx.what).rstrip(".") + f"{shown}.", mistake="M75",
                 fix=SIGNATURE_FIX, code="retraced")
    probe = "a list of Python floats"
    check_probe(ctx, got[4], _fahrenheit(inputs[4]), got[0], _fahrenheit(inputs[0]), probe,
                f"{probe}, {inputs[4]}", fix, rtol=1e-5, atol=1e-4, check_dtype="float")
    if count(obs, "traces_after_list") > 1:
        ctx.fail(f"{ctx.what} traced again for a list of Python floats: a Python value is "
                 f"traced by value unless an input_signature converts it to a tensor.",
                 mistake="M26", fix=SIGNATURE_FIX, code="retraced_list")
    refused = values(obs, "refused", len(REFUSALS))
    if not all(isinstance(r, bool) for r in refused):
        raise ValueError("refused: not booleans")
    signature = obs["signature"]
    if signature is not None and (not isinstance(signature, list) or len(signature) > 8 or
                                  not all(isinstance(s, dict) for s in signature)):
        raise ValueError("signature of an unexpected form")
    specs = signature or []
    vector = (len(specs) == 1 and specs[0].get("dtype") == "float32"
              and specs[0].get("shape") == [None])
    if not vector or not all(refused):
        if ctx.reveal:
            answered = [name for name, r in zip(REFUSALS, refused) if not r]
            shown = (f" (answered: {', '.join(answered)}; its signature: "
                     f"{specs if signature is not None else 'none'})")
        else:
            shown = ""
        ctx.fail(ANY_SHAPE.format(what=ctx.what).replace(" is answered instead of refused",
                                                         f" is answered instead of refused"
                                                         f"{shown}"),
                 mistake="M74", fix=SIGNATURE_FIX, code="any_shape")


# --------------------------------------------------------------------------- noisy_square

NOTHING_PRINTED = ("{what} returns x * x but prints nothing: the exercise is a print that runs "
                   "on every call of the graph.")

#: M16 as noisy_square meets it (``print(x.numpy())``): the cause, and the fix this exercise
#: accepts (a tf.py_function is refused: the print must be an op of the graph).
NUMPY_IN_GRAPH = ("{what} failed while TensorFlow traced it: inside a tf.function x is a "
                  "symbolic tensor with no value yet, so .numpy() (or NumPy) cannot read it "
                  "there.",
                  "print x with tf.print: an op of the graph, which prints x's value on every "
                  "call (no .numpy(), no Python print, no tf.py_function).")


@exercise("noisy_square", module=MODULE, cases=[(3.0, 3)],
          label=lambda case: f"input {case[0]}",
          idea="tf.print is an op of the graph and runs on every call: called `calls` times, "
               "the tf.function prints x at least `calls` times (a Python print runs only "
               "while tracing, and no Python function called from the graph prints).",
          kernel_evidence="how many captured lines hold x after the calls, whether the graph "
                          "has a print op, and how many lines a fresh trace printed",
          findings={"numpy_in_graph": NUMPY_IN_GRAPH})
def noisy_square(case, obs, ctx):
    """``obs``: ``results`` (one per call), ``probe`` (the result for :func:`nearby` x),
    ``lines`` (captured lines holding x during the calls), ``symbolic_lines`` (captured lines
    showing a symbolic tensor, ``Tensor("``), ``trace_lines`` (lines printed
    while a fresh copy traced), ``op_types``. Reference: x * x in float32."""
    x, calls = float(case[0]), int(case[1])
    want = np.float32(x) * np.float32(x)
    got = values(obs, "results", calls)
    for value in got:
        ctx.close(value, want, check_dtype="float")
    check_probe(ctx, obs["probe"], np.float32(nearby(x)) ** 2, got[0] if got else None, want,
                "another input", f"the input {nearby(x)}", "return x * x, computed from x.",
                check_dtype="float")
    lines, ops = count(obs, "lines"), op_types(obs)
    refuse_py_function(ctx, obs, "print x with tf.print, an op of the graph that prints the value "
                                 "on every call, and return the square.")
    if lines >= calls:
        return
    times = f" {calls} times" if ctx.reveal else ""
    if PRINT_OPS & ops and count(obs, "symbolic_lines") >= calls:
        ctx.fail(f"{ctx.what} prints on every call, but each line shows the symbolic tensor "
                 f"(Tensor(\"x:0\", ...)), not x's value: the f-string (or str()) ran once, "
                 f"while TensorFlow traced, and made a constant string of the graph's "
                 f"placeholder.", mistake="M31",
                 fix="hand x to tf.print as an argument of its own, not inside a string, so "
                     "the graph prints its value when it runs.", code="symbolic")
    if PRINT_OPS & ops:
        ctx.fail(f"{ctx.what} prints on every call, but x is not in what it prints.",
                 mistake="M21", fix="pass the tensor x itself to tf.print, as an argument of its "
                                    "own, not formatted into a string.", code="not_x")
    if count(obs, "trace_lines") == 0:
        ctx.fail(NOTHING_PRINTED.format(what=ctx.what), mistake="M21",
                 fix="print x with tf.print(...) inside the function.", code="no_print")
    ctx.fail(f"{ctx.what} was called{times} but did not print x on every call. A Python "
             f"print() runs once, while TensorFlow traces the function; the graph it builds "
             f"has no print in it.", mistake="M08",
             fix="use tf.print(...), an op of the graph that runs on every call.")


# --------------------------------------------------------------------------- Accumulator

NOT_UPDATED = ("{what} returns the right totals, but no op of add's graph updates the "
               "tf.Variable: the exercise is a variable updated inside a tf.function.")


@exercise("Accumulator", check="check_accumulator", module=MODULE, cases=[[1.0, 2.0, 3.0]],
          label=lambda case: f"input {case}",
          idea="a tf.Variable, made once in __init__, is updated inside the tf.function add: "
               "the totals are running sums, a second instance starts at 0, and add's graph "
               "holds an assign op (no Python function call).",
          kernel_evidence="whether total is a tf.Variable, and the op types of add's graph",
          findings={"not_tf_function": ("{what}: Accumulator.add is not a tf.function, so "
                                        "it would run eagerly.",
                                        "make add a tf.function: decorate the method itself (read "
                                        "how tf.function decorates a method).")})
def accumulator(case, obs, ctx):
    """``obs``: ``instances``, two dicts (two fresh instances, the same calls) with ``totals``
    (what add returned), ``total_is_variable``, ``total_type`` (its type's name), ``total``
    (its value after the calls) and ``op_types`` (of add's graph). Reference: np.cumsum."""
    added = np.asarray(case, np.float32).reshape(-1)
    expected = np.cumsum(added)
    first, second = values(obs, "instances", 2)
    totals = values(second, "totals", len(added))
    # One variable for all: the second instance goes on from the first one's last total,
    # whatever that variable held before (a visible check or a demonstration may have run).
    first_last = values(first, "totals", len(added))[-1] if added.size else None
    offset = (float(first_last) if isinstance(first_last, (int, float, np.floating, np.ndarray))
              and np.ndim(first_last) == 0 else 0.0)
    shared = expected + np.float32(offset)
    if added.size and np.any(expected != shared) and matches(totals, shared):
        shown = (f" (its totals were {[round(float(t), 4) for t in totals]}, not "
                 f"{[round(float(t), 4) for t in expected]})" if ctx.reveal else "")
        ctx.fail(f"{ctx.what}: a second Accumulator() starts where the first one stopped"
                 f"{shown}: both instances update one tf.Variable.", mistake="M32",
                 fix="give each instance its own tf.Variable, made once when the instance is made "
                     "(in __init__).", code="shared")
    for instance in (first, second):
        for step, (got, want) in enumerate(zip(values(instance, "totals", len(added)),
                                               expected)):
            part = (f", add's total after {step + 1} call(s)" if ctx.reveal
                    else ", a total add returned")
            ctx.close(got, want, part, check_dtype="float")
        if instance["total_is_variable"] is not True:
            shown = f", got {instance['total_type']}" if ctx.reveal else ""
            ctx.fail(f"{ctx.what}: Accumulator.total should be a tf.Variable{shown}.",
                     mistake="M21", fix="make the tf.Variable once per instance, in __init__, "
                                        "never inside the tf.function.",
                     code="not_variable")
        ctx.close(instance["total"], expected[-1] if added.size else np.float32(0.0),
                  ", total after the calls")
        ops = op_types(instance)
        if not ASSIGN_OPS & ops or PY_FUNC_OPS & ops:
            ctx.fail(NOT_UPDATED.format(what=ctx.what), mistake="M21",
                     fix="change the variable in place in add (read tf.Variable's assign_add) and "
                         "return its value.", code="not_updated")
