"""Grader halves of the checks of 07 (graph-mode pitfalls and debugging), NumPy only; see
:mod:`autograder.checks.judge`.

Each judge takes a case, the observations of the kernel half (``autograder/checks/pitfalls.py``)
and a :class:`~autograder.checks.judge.Context`. References come from NumPy (the values a
fixed function must return) or from constants of TensorFlow's documented behaviour (how many
times a Python ``print`` runs, how many traces a sequence of calls makes). Much of 07's evidence
is what only the kernel can observe: trace counts, whether a function's Python body ran eagerly,
the op types of a graph, which values a ``tf.function`` returned, whether ``tape.gradient`` ran
while a function traced, the node counts of a GraphDef; the kernel half sends it as counts,
booleans and lists of op type names.

Two kinds of exercise:

- **predictions** (``predict_*``): the student writes what a cell will show before running it;
  the judge compares the prediction with the behaviour, and a wrong one is answered with the
  misconception it reveals (a catalogue mistake where there is one). A prediction has no
  mechanism to grade beyond its value: it must be a plain Python value written down (a number,
  a bool, None, a list), not a tensor measured by running the code.
- **find-and-fix** exercises: a broken function is given, the student fixes it, and the judge
  requires the right values from calls of the fixed function as a graph, more than once, on
  inputs that reach every branch, and the evidence of the fix's idea (a tf.Variable read on
  every call, one trace, a tape, XLA, ...); the broken code's symptom is named by its mistake.

Messages show values only when ``ctx.reveal`` (a student's visible check).
"""
from __future__ import annotations

import re

import numpy as np

from . import exercise
from .readers import count, flag, matches, op_types, values

MODULE = "autograder.checks.pitfalls"

#: Op types that run Python code from a graph (tf.py_function, tf.numpy_function).
PY_FUNC_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}
#: Op types that change a tf.Variable in place.
ASSIGN_OPS = {"AssignAddVariableOp", "AssignSubVariableOp", "AssignVariableOp"}
#: Op types that read a tf.Variable (or an iterator) inside a graph.
STATE_READ_OPS = {"ReadVariableOp", "ResourceGather", "IteratorGetNext",
                  "IteratorGetNextAsOptional"}
#: Op types of a tf.data iterator's next element.
ITERATOR_OPS = {"IteratorGetNext", "IteratorGetNextAsOptional"}
#: Op types that make a new tf.data iterator (inside a graph: one on every call).
ITERATOR_MAKE_OPS = {"AnonymousIterator", "AnonymousIteratorV2", "AnonymousIteratorV3",
                     "MakeIterator", "IteratorV2"}

#: Most op type names, values or calls a judge reads (the course's graphs have a few dozen ops).
MAX_ITEMS = 5000

NOT_TF_FUNCTION = ("{what}: the function is not a tf.function, so it runs eagerly and the "
                   "pitfall the exercise fixes cannot happen: the fix must work in graph mode.",
                   "keep the function a tf.function (the fix changes its body, not the decorator).")
XLA_PRINT = ("{what} raised InvalidArgumentError: XLA compiles the whole of a jit_compile=True "
             "function, and it has no kernel for tf.print (or string operations).",
             "XLA cannot compile tf.print: move the arithmetic into a tf.function of its own "
             "compiled with XLA (jit_compile), and call it from rms_normalize, a plain "
             "tf.function that keeps the tf.print.")
#: M36 as hinge_total meets it: a variable set only in the if branch of a tensor condition.
ELSE_BRANCH = ("{what} raised {type}: AutoGraph made the `if` on a tensor a tf.cond, whose "
               "branches must both give every variable the code reads afterwards; `loss` is "
               "set only when the condition holds ('must also be initialized in the else "
               "branch').",
               "AutoGraph traces both branches of a tensor if: give the variable a value on every "
               "path, before the if or in an else branch.")
#: M37 as hinge_total meets it: a loop variable that starts as a Python int.
LOOP_DTYPE = ("{what} raised {type}: the `for` over a tensor is a tf.while_loop, whose loop "
              "variables keep one dtype and shape; `total = 0` starts as an int32 and the body "
              "adds float32 values to it.",
              "a graph loop's variable keeps the dtype it starts with: start it as a float, the "
              "dtype the loop body gives it.")
#: M57 as hinge_total meets it: a Python range over scores.shape[0], None for unknown length.
STATIC_LENGTH = ("{what}, traced for scores of unknown length, raised TypeError: the loop is a "
                 "Python range over the static length (scores.shape[0] is None when the length "
                 "is not known), so it runs while tracing, not in the graph.",
                 "let the loop run in the graph: iterate the tensor itself (AutoGraph makes that "
                 "a tf.while_loop) or a tf.range over its dynamic size, or use a vector op and no "
                 "loop at all.")
#: M09 as WarmupSchedule's draft meets it: Python asks the symbolic step for a truth value.
PYTHON_BOOL = ("WarmupSchedule.next_lr raised OperatorNotAllowedInGraphError as a graph: "
               "Python code that needs the step's value (min() or max() of a tensor, int() "
               "compared in Python, bool()) asks a symbolic tensor for a truth value, which it "
               "has only when running eagerly; the draft's rates were right eagerly only.",
               "compute the rate from the step with ops of the graph (a comparison or a "
               "minimum of tensors, or an `if` on the tensor itself, which AutoGraph makes a "
               "tf.cond), the count cast to float32 for the arithmetic.")
#: M13 as td_update meets it: tf.stop_gradient around the whole TD error (or the loss).
TD_ALL_STOPPED = ("{what}: tape.gradient returned None for w: tf.stop_gradient holds the whole "
                  "TD error (or the loss) fixed, not only the target, so no gradient reaches w "
                  "and the update cannot be computed.",
                  "hold only the target fixed: tf.stop_gradient around the target alone, and the "
                  "current estimate v(s) outside it, so that the gradient flows through v(s) into "
                  "w.")
PY_FUNCTION = ("runs Python from the graph (tf.py_function or tf.numpy_function), which does "
               "not fix the graph itself")


# --------------------------------------------------------------------------- shared helpers

def _floats(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def _not_py_function(ctx, ops: set, fix: str) -> None:
    __tracebackhide__ = True
    if PY_FUNC_OPS & ops:
        ctx.fail(f"{ctx.what} returns the right values, but its graph {PY_FUNCTION}.",
                 mistake="M21", fix=fix, code="py_function")


def _shown(ctx, text: str) -> str:
    """``text`` when messages may show values (a visible check), else nothing."""
    return text if ctx.reveal else ""


# --------------------------------------------------------------------------- predictions
# A prediction's case is None; its observations are {"values": [the variables' values]}.

def _prediction_values(obs, names) -> list:
    got = values(obs, "values", len(names))
    return got


def _plain_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _predicted(ctx, got, names, kinds) -> None:
    """Fail unless each predicted value is a plain Python value of its kind: ``"count"`` (an
    int >= 0), ``"number"`` (int or float), ``"bool"``, ``"number_or_none"``, ``"list"``."""
    __tracebackhide__ = True
    for value, name, kind in zip(got, names, kinds):
        ok = {"count": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
              "number": _plain_number(value),
              "bool": isinstance(value, bool),
              "number_or_none": value is None or _plain_number(value),
              "list": isinstance(value, list) and len(value) <= 100
              and all(_plain_number(v) or isinstance(v, bool) for v in value)}[kind]
        if ok:
            continue
        wanted = {"count": "a whole number such as 2", "number": "a number such as 2.0",
                  "bool": "True or False", "number_or_none": "a number, or None",
                  "list": "a list such as [1.0, 2.0]"}[kind]
        ctx.fail(f"{ctx.what}: {name} should be {wanted}, written in the prediction cell "
                 f"(a prediction is written down before the code runs, not measured).",
                 mistake="M71",
                 fix=f"set `{name} = ...` to a plain Python value in the prediction cell.",
                 code="prediction_type")


def _wrong(ctx, name: str, got, want, why: str, mistake: str | None = None,
           fix: str | None = None) -> None:
    __tracebackhide__ = True
    shown = _shown(ctx, f" (you predicted {got!r}; it is {want!r})")
    ctx.fail(f"{ctx.what}: {name} is not what happens{shown}. {why}", mistake=mistake,
             fix=fix or "run the cell that shows it, read the explanation below it, and "
                        "correct your prediction.", code="wrong_prediction")


def _same(got, want) -> bool:
    if want is None or isinstance(want, bool):
        return got is want
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            _same(g, w) for g, w in zip(got, want))
    return _plain_number(got) and abs(float(got) - float(want)) <= 1e-6 * max(1.0, abs(want))


PREDICTION_LABEL = lambda case: "your prediction"  # noqa: E731


@exercise("predict_eager", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="tf.config.run_functions_eagerly is read on every call, not when a function "
               "traces: a tf.function traced already runs its Python body on each call with the "
               "switch on (2 prints for 2 calls), and with the switch off again it runs the "
               "graph it traced before (1 print, while tracing, for the 2 calls off).")
def predict_eager(case, obs, ctx):
    """``obs``: ``values`` = [predicted_prints_eager, predicted_prints_graph]. Reference: 2 and
    1 (the cell calls one function four times with the same tensor: switch off, on, on, off;
    measured on TF 2.21)."""
    names = ("predicted_prints_eager", "predicted_prints_graph")
    eager, graph = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("count", "count"))
    if not _same(eager, 2):
        _wrong(ctx, names[0], eager, 2, "The switch is read on every call, not when the "
               "function traces: with run_functions_eagerly(True) a tf.function runs as plain "
               "Python, its print included, on each of the two calls, although call 1 had "
               "traced its graph already.")
    if not _same(graph, 1):
        _wrong(ctx, names[1], graph, 1, "As a graph, the Python body runs only while "
               "TensorFlow traces: call 1 traces and prints; call 4, with the switch off "
               "again, runs the graph call 1 traced (turning the switch on did not throw it "
               "away) and prints nothing.", mistake="M08" if graph == 2 else None)


@exercise("predict_buggy_add", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="a global Python value is read once, while the function traces: after y = 10, "
               "buggy_add(tf.constant(1)) still returns 2 (the int32 graph holds y = 1), and "
               "a call with a float32 tensor traces again and returns 11.")
def predict_buggy_add(case, obs, ctx):
    """``obs``: ``values`` = [predicted_int_call, predicted_float_call]. Reference: 2, 11."""
    names = ("predicted_int_call", "predicted_float_call")
    same, new = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("number", "number"))
    if not _same(same, 2):
        _wrong(ctx, names[0], same, 2, "The int32 graph was traced while y was 1: the "
               "value of y became a constant of that graph, and changing the Python global "
               "does not retrace.", mistake="M22" if _same(same, 11) else None)
    if not _same(new, 11):
        _wrong(ctx, names[1], new, 11.0, "A float32 tensor is a new input type: TensorFlow "
               "traces again, and this trace reads y as it is now, 10.")


@exercise("predict_log", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="a Python list appended inside a tf.function grows once per trace, not per "
               "call, and a loop over tf.range is one While op whose body is traced once, not "
               "per iteration: two calls with int32 scalars (3, then 5) leave one entry, a "
               "graph tensor.")
def predict_log(case, obs, ctx):
    """``obs``: ``values`` = [predicted_log_length]. Reference: 1 (sum_of_squares_logged called
    on tf.constant(3) and tf.constant(5): one trace, the loop's body traced once in it)."""
    names = ("predicted_log_length",)
    [length] = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("count",))
    if _same(length, 1):
        return
    if _same(length, 8):
        _wrong(ctx, names[0], length, 1, "A loop over tf.range is one While op of the graph: "
               "its Python body, the append included, is traced once, not run once per "
               "iteration.", mistake="M23")
    _wrong(ctx, names[0], length, 1, "The append is Python: it runs while TensorFlow "
           "traces, once for two calls with int32 scalars, and the graph loop's body is "
           "traced once in that trace.", mistake="M23" if length > 1 else None)


@exercise("predict_iterator", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="next() on a Python iterator runs while the function traces: three calls "
               "print the first value three times, [1, 1, 1].")
def predict_iterator(case, obs, ctx):
    """``obs``: ``values`` = [predicted_values]. Reference: [1, 1, 1]."""
    names = ("predicted_values",)
    [printed] = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("list",))
    if not _same(printed, [1, 1, 1]):
        _wrong(ctx, names[0], printed, [1, 1, 1], "next(iterator) is a Python call: it ran "
               "once, while tracing, and the graph holds the value it gave as a constant.",
               mistake="M24" if _same(printed, [1, 2, 3]) else None)


@exercise("predict_counter", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="a Python int attribute incremented in a tf.function counts traces: five calls "
               "with three input signatures (a float32 scalar, a float32 vector of length 2, an "
               "int32 scalar) make 3; a tf.Variable with assign_add counts calls (5).")
def predict_counter(case, obs, ctx):
    """``obs``: ``values`` = [predicted_python_count, predicted_variable_count]. Reference:
    3, 5 (calls with tf.constant(1.0), [1.0, 2.0], 2.0, [3.0, 4.0] and tf.constant(5))."""
    names = ("predicted_python_count", "predicted_variable_count")
    python, variable = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("count", "count"))
    if not _same(python, 3):
        if _same(python, 5):
            _wrong(ctx, names[0], python, 3, "`self.python_count += 1` on a Python int runs "
                   "while TensorFlow traces, not on every call.", mistake="M25")
        _wrong(ctx, names[0], python, 3, "The Python int counts traces: one per input "
               "signature (dtype and shape) the function meets, and a call with a signature "
               "seen before reuses its graph.")
    if not _same(variable, 5):
        _wrong(ctx, names[1], variable, 5, "assign_add is an op of the graph: it runs on "
               "every call.")


@exercise("predict_traces", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="a Python float is part of the trace key by value (0.1 and 0.05 make two "
               "traces), a NumPy scalar, np.float64 included, is converted to a tensor and "
               "traced by dtype and shape like tf.constant: the float32 ones share a third "
               "trace, the float64 ones a fourth: 4 in all.")
def predict_traces(case, obs, ctx):
    """``obs``: ``values`` = [predicted_traces]. Reference: 4 (0.1; 0.05; np.float32(0.1),
    np.float32(0.05) and tf.constant(0.3), float32 scalars; np.float64(0.4) and
    np.float64(0.2), float64 scalars), as TensorFlow 2.21 traces them."""
    names = ("predicted_traces",)
    [traces] = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("count",))
    if not _same(traces, 4):
        why = ("Python floats are traced by value: 0.1 and 0.05 make two graphs. NumPy scalars "
               "are not Python numbers to tf.function, np.float64 included: they are converted "
               "to tensors and traced by dtype and shape, so the two np.float32 values share a "
               "graph with tf.constant(0.3), and the two np.float64 values share a float64 one.")
        # 5 to 7: the NumPy scalars taken by value, as Python numbers are
        _wrong(ctx, names[0], traces, 4, why,
               mistake="M26" if traces in (5, 6, 7) else None)


@exercise("predict_gradients", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="tf.stop_gradient and tape.stop_recording hide a path from the tape (dy/dx of "
               "x * stop_gradient(x) at 3 is 3, not 6; of x * z with z recorded under "
               "stop_recording, 9, not 27), and a source the target does not use gets None.")
def predict_gradients(case, obs, ctx):
    """``obs``: ``values`` = [predicted_stop_gradient, predicted_stop_recording,
    predicted_unused]. Reference: 3.0, 9.0, None."""
    names = ("predicted_stop_gradient", "predicted_stop_recording", "predicted_unused")
    stop, recording, unused = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("number", "number", "number_or_none"))
    if not _same(stop, 3.0):
        _wrong(ctx, names[0], stop, 3.0, "tf.stop_gradient(x) is a constant to the tape: "
               "y = x * c with c = 3 has dy/dx = c = 3.")
    if not _same(recording, 9.0):
        _wrong(ctx, names[1], recording, 9.0, "z = x * x was computed while the tape "
               "stopped recording, so z is a constant to it: d(x * z)/dx = z = 9.")
    if unused is not None:
        _wrong(ctx, names[2], unused, None, "The target does not depend on the unused "
               "variable at all: tape.gradient returns None for it (0.0 only with "
               "unconnected_gradients=tf.UnconnectedGradients.ZERO).")


@exercise("predict_xla", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="XLA compiles numeric ops but has no kernels for tf.print or string ops: of "
               "the three jit_compile=True functions only the numeric one runs, "
               "[True, False, False].")
def predict_xla(case, obs, ctx):
    """``obs``: ``values`` = [predicted_compiles]. Reference: [True, False, False]."""
    names = ("predicted_compiles",)
    [compiles] = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("list",))
    if not _same(compiles, [True, False, False]):
        believed = [v is True for v in compiles[1:3]] if len(compiles) == 3 else []
        _wrong(ctx, names[0], compiles, [True, False, False], "XLA compiles numeric "
               "operations; tf.print and tf.strings ops have no XLA kernel, so "
               "jit_compile=True raises InvalidArgumentError for them.",
               mistake="M18" if any(believed) else None)


# --------------------------------------------------------------------------- run_eagerly

def _probe_value(x: float) -> np.float32:
    """What the check's probe function returns: 2 * (x * x + 1), in float32."""
    x = np.float32(x)
    return np.float32(2) * (x * x + np.float32(1))


@exercise("run_eagerly", module=MODULE,
          cases=[{"x": 2.0, "before": False, "raises": False},
                 {"x": -1.5, "before": True, "raises": False},
                 {"x": 3.0, "before": False, "raises": True}],
          label=lambda c: (f"input x={c['x']}, switch {'on' if c['before'] else 'off'} before"
                           + (", fn raises" if c["raises"] else "")),
          idea="run_eagerly(fn, *args) runs fn and every tf.function it calls eagerly (their "
               "Python bodies run on every call), by turning tf.config.run_functions_eagerly "
               "on, and puts the switch back as it was, even when fn raises.",
          kernel_evidence="whether the Python bodies of the probe's outer and inner "
                          "tf.functions ran eagerly on each call, and the switch's state "
                          "after each call")
def run_eagerly(case, obs, ctx):
    """``obs``: ``calls``, two dicts (two calls of run_eagerly on the check's probe) with
    ``result`` (None when it raised), ``raised`` (the exception's type name or None),
    ``outer`` and ``inner`` (one bool per run of each Python body: was it eager?),
    ``switch`` (per run of fn's body: was tf.config's switch on, read by TensorFlow's own
    function, captured before student code) and
    ``after`` (the switch after the call). Reference: the probe returns 2 * (x * x + 1);
    when ``raises``, it raises ValueError."""
    before, raises = bool(case["before"]), bool(case["raises"])
    for number, call in enumerate(values(obs, "calls", 2), start=1):
        raised, after = call["raised"], flag(call, "after")
        outer, inner = values(call, "outer"), values(call, "inner")
        if raises:
            if raised != "ValueError":
                ctx.fail(f"{ctx.what}: fn raised ValueError, but run_eagerly did not pass it "
                         f"on to its caller.", fix="let the exception propagate: restore the "
                                                   "switch in a finally clause (try/finally), "
                                                   "with no except that swallows the error.",
                         code="swallowed")
        else:
            ctx.close(call["result"], _probe_value(case["x"]), f", result of call {number}",
                      check_dtype="float")
        if after != before:
            if after:
                shown = " when fn raised" if raises and ctx.reveal else ""
                ctx.fail(f"{ctx.what}: tf.config.run_functions_eagerly is still on after the "
                         f"call{shown}, so every later tf.function of the notebook runs "
                         f"eagerly.", mistake="M19",
                         fix="remember tf.config.functions_run_eagerly() first, and restore "
                             "it in a `finally:` block, so it is restored even when fn "
                             "raises.")
            ctx.fail(f"{ctx.what}: the switch was on before the call and is off after it: "
                     f"run_eagerly must put it back as it was, not always off.",
                     mistake="M69",
                     fix="read the switch's state (tf.config.functions_run_eagerly) before "
                         "switching it on, and put that state back in a finally clause.",
                     code="not_restored")
        if not (outer and all(v is True for v in outer)):
            ctx.fail(f"{ctx.what} returns the right value, but fn ran as a graph (its Python "
                     f"body ran while tracing, not on the call): the switch was not on.",
                     mistake="M21",
                     fix="switch every tf.function to eager execution (read "
                         "tf.config.run_functions_eagerly) before calling fn.",
                     code="not_eager")
        if len(outer) != 1:
            ctx.fail(f"{ctx.what}: fn should be called once per call of run_eagerly.",
                     fix="call fn once, with the arguments given, and return its result.", code="calls")
        if raises:
            continue
        if not (inner and all(v is True for v in inner)):
            ctx.fail(f"{ctx.what} runs fn's own Python body, but the tf.function fn calls "
                     f"still ran as a graph: calling fn.python_function makes only the "
                     f"outer function eager.", mistake="M80",
                     fix="switch every tf.function to eager execution (read "
                         "tf.config.run_functions_eagerly), and call fn itself.",
                     code="outer_only")
        switch = values(call, "switch")
        if not (switch and all(v is True for v in switch)):
            ctx.fail(f"{ctx.what} returns the right value and fn's bodies ran eagerly, but "
                     f"not by tf.config's switch (a patched call, or a body swapped in): the "
                     f"switch was not on while fn ran.", mistake="M21",
                     fix="switch every tf.function to eager execution (read "
                         "tf.config.run_functions_eagerly) before calling fn.",
                     code="not_eager")


# --------------------------------------------------------------------------- make_scaler

@exercise("make_scaler", module=MODULE,
          cases=[{"initial": 2.0, "x": [1.0, -3.0], "scales": [0.5, [4.0, -1.0], 3.0]},
                 {"initial": -1.0, "x": [[2.0], [0.25]], "scales": [3.0]}],
          label=lambda c: f"input initial={c['initial']}, scales={c['scales']}",
          idea="a graph reads state that changes between calls from a tf.Variable: scaled(x) "
               "follows every set_scale(value), a scale of another shape included, with one "
               "trace and no Python run from the graph.",
          kernel_evidence="the trace count of scaled and the op types of its graph",
          findings={"not_tf_function": NOT_TF_FUNCTION})
def make_scaler(case, obs, ctx):
    """``obs``: ``results``: scaled(x) twice with the initial scale, then once after each
    set_scale(s) of ``scales``, then once more after set_scale(initial); ``traces``,
    ``op_types`` (of scaled's graph). Reference: x * the scale set last."""
    x, initial = _floats(case["x"]), float(case["initial"])
    scales = [initial, initial] + [np.asarray(s, dtype=np.float64) for s in case["scales"]] + [initial]
    got = values(obs, "results", len(scales))
    ops = op_types(obs)
    for step, (value, scale) in enumerate(zip(got, scales)):
        want = (x * scale).astype(np.float32)
        stuck = (step >= 2 and not matches(value, want) and matches(value, x * initial)
                 and not np.array_equal(scale, initial))
        if stuck and "ReadVariableOp" in ops:
            ctx.fail(f"{ctx.what}: scaled's graph reads a tf.Variable, but after set_scale it "
                     f"still multiplies by the first scale{_shown(ctx, f' {initial}')}. The "
                     f"graph holds the variable object it captured when it traced; binding the "
                     f"name to a new tf.Variable in set_scale leaves that one unchanged.",
                     mistake="M70",
                     fix="a tf.function keeps the variable object it captured: make the "
                         "tf.Variable once, in make_scaler, and change its value in place in "
                         "set_scale (read tf.Variable's assign; no nonlocal, no new tf.Variable).")
        if stuck:
            ctx.fail(f"{ctx.what}: after set_scale, scaled(x) still multiplies by the first "
                     f"scale{_shown(ctx, f' {initial}')}. A Python number read inside a "
                     f"tf.function becomes a constant of the graph when it traces; changing "
                     f"it later changes nothing.", mistake="M22",
                     fix="a Python value is read once, at trace time: keep the scale in a "
                         "tf.Variable made once in make_scaler, change it in place in set_scale, "
                         "and read the variable in scaled.")
        part = ", scaled(x)" + (f" after set_scale({np.asarray(scale).tolist()})" if ctx.reveal and step >= 2
                                else " after set_scale" if step >= 2 else "")
        ctx.close(value, want, part, check_dtype="float")
    _not_py_function(ctx, ops, "read a tf.Variable inside scaled; assign to it in set_scale.")
    if count(obs, "traces") != 1:
        ctx.fail(f"{ctx.what} gives the right values, but scaled traced again for a new "
                 f"scale: a graph per value is the retracing the fix should avoid.",
                 mistake="M21", fix="one graph that reads a tf.Variable: assign the new "
                 "value in set_scale, never rebuild the function.", code="retraced")
    if not {"ReadVariableOp"} & ops:
        ctx.fail(f"{ctx.what} gives the right values, but scaled's graph reads no "
                 f"tf.Variable.", mistake="M21",
                 fix="keep the scale in a tf.Variable and read it inside scaled.",
                 code="no_variable")


# --------------------------------------------------------------------------- Recorder

@exercise("Recorder", check="check_recorder", module=MODULE,
          cases=[{"inputs": [[1.0, 2.0], [3.0, 0.5], [-1.0, 1.0]]},
                 {"inputs": [[2.0], [0.5, 0.5], [1.5]]}],
          label=lambda c: f"input {c['inputs']}",
          idea="Python bookkeeping stays out of the graph: record(x) runs a tf.function that "
               "returns sum(x * x), and the Python list log gets the returned value outside "
               "it, one concrete entry per call.",
          kernel_evidence="how many tf.function calls each record(x) made from Python, the "
                          "op types of their graphs, and whether log's entries are graph "
                          "(symbolic) tensors")
def recorder(case, obs, ctx):
    """``obs``: ``results`` (record(x) for each input), ``log`` (its entries' values, None for
    a graph tensor), ``symbolic`` (how many entries are graph tensors), ``log_is_list``,
    ``graph_calls`` (tf.function calls made from Python during each record call),
    ``op_types`` (of the functions called). Reference: sum(x * x) per input."""
    inputs = [_floats(x) for x in case["inputs"]]
    want = [np.float32((x * x).sum()) for x in inputs]
    got = values(obs, "results", len(inputs))
    for value, ref in zip(got, want):
        ctx.close(value, ref, ", record(x)", rtol=1e-5, atol=1e-5, check_dtype="float")
    if flag(obs, "log_is_list") is not True:
        ctx.fail(f"{ctx.what}: Recorder.log should be a Python list.",
                 fix="keep the Python list that __init__ makes and append to it, outside the "
                     "tf.function.", code="not_list")
    log = values(obs, "log")
    if count(obs, "symbolic") or len(log) < len(inputs):
        shown = _shown(ctx, f" ({len(log)} {'entry' if len(log) == 1 else 'entries'} for "
                            f"{len(inputs)} calls)")
        ctx.fail(f"{ctx.what}: log does not get one value per call{shown}. A Python "
                 f"list.append inside a tf.function runs while TensorFlow traces, once per "
                 f"trace, and stores a graph tensor that has no value outside the graph.",
                 mistake="M23",
                 fix="a Python side effect runs only while tracing: let the tf.function return "
                     "the value, and append what it returned in plain Python, outside it.")
    if len(log) != len(inputs):
        ctx.fail(f"{ctx.what}: log should hold exactly one entry per call of record.",
                 fix="append once per call, outside the tf.function.", code="log_length")
    for entry, ref in zip(log, want):
        ctx.close(entry, ref, ", an entry of log", rtol=1e-5, atol=1e-5)
    calls = values(obs, "graph_calls", len(inputs))
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in calls):
        ctx.fail(f"{ctx.what} gives the right log, but record(x) ran no tf.function: the sum "
                 f"of squares must still run as a graph.", mistake="M21",
                 fix="keep the computation in a tf.function (a method) that record calls.",
                 code="no_graph")
    _not_py_function(ctx, op_types(obs), "return the value from the tf.function and append it "
                     "outside.")


# --------------------------------------------------------------------------- make_next_value

@exercise("make_next_value", module=MODULE,
          cases=[{"values": [3.0, 1.0, 4.0]}, {"values": [-2.5, 0.5]}],
          label=lambda c: f"input {c['values']}",
          idea="a graph that consumes a sequence takes it from TensorFlow state made once, "
               "outside the graph (a tf.data iterator, or a tf.Variable index): each call of "
               "next_value() returns the next element, with one trace and no Python run from "
               "the graph.",
          kernel_evidence="the trace count of next_value and the op types of its graph",
          findings={"not_tf_function": NOT_TF_FUNCTION})
def make_next_value(case, obs, ctx):
    """``obs``: ``results`` (one per element), ``traces``, ``op_types``. Reference: the
    elements in order, float32."""
    want = np.asarray(case["values"], dtype=np.float32)
    got = values(obs, "results", len(want))
    ops = op_types(obs)
    first_only = (len(want) > 1 and all(matches(v, want[0]) for v in got)
                  and not np.all(want == want[0]))
    if first_only and ITERATOR_MAKE_OPS & ops:
        ctx.fail(f"{ctx.what}: every call returns the first element. The graph makes its "
                 f"iterator itself (iter(dataset) inside the tf.function), so every call runs "
                 f"a new iterator from the start, and takes its first element.",
                 mistake="M40",
                 fix="make the dataset's iterator once, outside the tf.function (in "
                     "make_next_value), and take the next element from that iterator inside it.")
    if first_only:
        ctx.fail(f"{ctx.what}: every call returns the first element. next() on a Python "
                 f"iterator runs while TensorFlow traces, once; the graph keeps the value it "
                 f"gave as a constant.", mistake="M24",
                 fix="iterate a tf.data.Dataset made from the values instead (read "
                     "from_tensor_slices): the next element of its iterator, taken inside the "
                     "tf.function, is an op that runs on every call.")
    for step, (value, ref) in enumerate(zip(got, want), start=1):
        ctx.close(value, ref, f", call {step}" if ctx.reveal else ", a call", check_dtype="float")
    _not_py_function(ctx, ops, "take the elements from a tf.data iterator inside the graph.")
    if count(obs, "traces") != 1:
        ctx.fail(f"{ctx.what} returns the right values, but next_value traced more than once: "
                 f"a graph per element is not one graph that advances.", mistake="M21",
                 fix="one tf.function of no arguments that calls next() on a tf.data "
                     "iterator.", code="retraced")
    if not STATE_READ_OPS & ops:
        ctx.fail(f"{ctx.what} returns the right values, but next_value's graph reads no "
                 f"iterator or variable.", mistake="M21",
                 fix="call next() on a tf.data iterator inside the tf.function.",
                 code="no_state")


# --------------------------------------------------------------------------- WarmupSchedule

#: Most elements of one constant WarmupSchedule's graph needs (its numbers are scalars).
MAX_SCHEDULE_CONSTANT = 4
#: The schedule every check builds besides its cases: many warm-up steps, its step set far into
#: them before one call. Its k-th rate is base_lr * k / warmup_steps, k = step + 1 = 4321 here.
WARMUP_PROBE = {"base_lr": 0.5, "warmup_steps": 10_000, "step": 4_320}
#: Most constant elements the probe's graph holds together (base_lr, warmup_steps, 1, casts...);
#: a table of its rates holds 10,001.
MAX_PROBE_CONSTANTS = 64


def warmup_rates(base_lr: float, warmup_steps: int, calls: int) -> np.ndarray:
    """The learning rate of calls 1..calls: base_lr * k / warmup_steps for k <= warmup_steps,
    then base_lr (float32)."""
    k = np.arange(1, calls + 1, dtype=np.float64)
    return (base_lr * np.minimum(k, warmup_steps) / warmup_steps).astype(np.float32)


@exercise("WarmupSchedule", check="check_warmup_schedule", module=MODULE,
          cases=[{"base_lr": 0.1, "warmup_steps": 3, "calls": 5},
                 {"base_lr": 1.0, "warmup_steps": 2, "calls": 2}],
          label=lambda c: f"input base_lr={c['base_lr']}, warmup_steps={c['warmup_steps']}, "
                          f"{c['calls']} calls",
          idea="a graph's step counter is a tf.Variable updated with assign_add on every call, "
               "and the warm-up condition on it is a tensor condition: the learning rates "
               "ramp up then stay flat, with one trace and an assign op in the graph.",
          kernel_evidence="the trace count of next_lr, the op types of its graph and the "
                          "type of step",
          findings={"not_tf_function": NOT_TF_FUNCTION, "python_bool": PYTHON_BOOL})
def warmup_schedule(case, obs, ctx):
    """``obs``: ``instances``, two dicts (two fresh schedules, the same calls) with ``rates``
    (what next_lr returned), ``step_is_variable``, ``step`` (its value after the calls),
    ``traces`` and ``op_types`` (of next_lr's graph). Reference: :func:`warmup_rates`."""
    calls, steps = int(case["calls"]), int(case["warmup_steps"])
    if not 0 < calls <= MAX_ITEMS or steps < 1:
        raise ValueError("case out of range")
    want = warmup_rates(float(case["base_lr"]), steps, calls)
    for number, instance in enumerate(values(obs, "instances", 2)):
        got = values(instance, "rates", calls)
        if calls > 1 and not np.all(want == want[0]) and all(matches(v, want[0], 1e-5, 1e-7)
                                                             for v in got):
            ctx.fail(f"{ctx.what}: next_lr returns the same rate on every call. A Python int "
                     f"counter (`self.step += 1`) changes only while TensorFlow traces, once; "
                     f"the graph holds its value then, and an `if` on it was decided then "
                     f"too.", mistake="M25",
                     fix="a Python counter changes only while tracing: make the counter a "
                         "tf.Variable in __init__, add to it in place (read assign_add), and "
                         "compute the rate from its value.")
        if number == 1 and not matches(got[0], want[0], 1e-5, 1e-7):
            ctx.fail(f"{ctx.what}: a second, fresh WarmupSchedule does not start from the "
                     f"first step: it continued the first schedule's count.",
                     fix="create the counter tf.Variable in __init__, one per schedule, not "
                         "shared between them.", code="shared")
        for k, (value, ref) in enumerate(zip(got, want), start=1):
            ctx.close(value, ref, f", rate of call {k}" if ctx.reveal else ", a rate",
                      rtol=1e-5, atol=1e-7, check_dtype="float")
        if flag(instance, "step_is_variable") is not True:
            ctx.fail(f"{ctx.what}: WarmupSchedule.step should be a tf.Variable.",
                     fix="make the step counter a tf.Variable, in __init__.", code="not_variable")
        ctx.close(instance["step"], calls, ", step after the calls")
        ops = op_types(instance)
        _not_py_function(ctx, ops, "count with a tf.Variable and assign_add inside the graph.")
        if not ASSIGN_OPS & ops or count(instance, "traces") != 1:
            ctx.fail(f"{ctx.what} returns the right rates, but next_lr's graph does not update "
                     f"the step (no assign op), or it traced more than once.", mistake="M21",
                     fix="one graph: the counter variable is advanced in place inside next_lr, "
                         "and the rate is computed from its value.", code="not_updated")
        if count(instance, "largest_constant") > MAX_SCHEDULE_CONSTANT:
            ctx.fail(f"{ctx.what} returns the right rates, but next_lr's graph holds a table "
                     f"of values worked out in advance (a constant or captured tensor of many "
                     f"entries, looked up by the step with tf.gather): the rate is not computed "
                     f"from the step by ops of the graph, and any step past the table is "
                     f"wrong.", mistake="M21",
                     fix="compute the rate from the counter's value with tensor ops: the warm-up "
                         "fraction is the step (capped at warmup_steps, cast to float32) over "
                         "warmup_steps, times base_lr.",
                     code="lookup_table")
    _warmup_probe_holds(ctx, obs.get("probe"))


def _warmup_probe_holds(ctx, probe) -> None:
    """Fail unless the probe's schedule (:data:`WARMUP_PROBE`) gave the rate computed from its
    step, from a graph of a few constants: the rates of the cases' few steps can come from a
    table or from branches written per step; those of 10,000 steps cannot."""
    if probe is None:
        return
    if not isinstance(probe, dict):
        raise ValueError("probe of an unexpected form")
    base_lr, steps, k = (WARMUP_PROBE[key] for key in ("base_lr", "warmup_steps", "step"))
    want = np.float32(base_lr * min(k + 1, steps) / steps)
    setting = (f"a WarmupSchedule({base_lr}, {steps}) whose step was set to {k}, called once "
               f"(the rate it should give is {float(want):.5f})")
    fix = ("compute the rate from the step by ops of the graph, whatever the number of warm-up "
           "steps: a ramp proportional to the step until the warm-up ends, then base_lr.")
    if flag(probe, "raised"):
        ctx.fail(f"{ctx.what} gives the cases' rates, but {setting} raised an error: the "
                 f"schedule works only for the few steps the cases reach (a table or branches "
                 f"written per step, say).", mistake="M21", fix=fix, code="lookup_table")
    if count(probe, "constant_elements") > MAX_PROBE_CONSTANTS:
        ctx.fail(f"{ctx.what} gives the cases' rates, but for {setting}, next_lr's graph holds "
                 f"{count(probe, 'constant_elements')} constant numbers, about one per step: a "
                 f"table of rates worked out in advance (one tensor, or a constant per branch), "
                 f"not a rate computed from the step.", mistake="M21", fix=fix,
                 code="lookup_table")
    if not matches(values(probe, "rates", 1)[0], want, 1e-5, 1e-7):
        ctx.fail(f"{ctx.what} gives the cases' rates, but not the rate of {setting}: the "
                 f"schedule is right only for the steps the cases reach.", mistake="M21",
                 fix=fix, code="lookup_table")


# --------------------------------------------------------------------------- descend

def descend_reference(case) -> np.ndarray:
    """w after w -= lr * grad for every (grad, lr) of the case, in float32 steps."""
    w = np.asarray(case["w"], dtype=np.float32)
    for grad, lr in zip(case["grads"], case["lrs"]):
        w = w - np.float32(lr) * np.asarray(grad, dtype=np.float32)
    return w


@exercise("descend", module=MODULE,
          cases=[{"w": [1.0, -1.0], "grads": [[0.5, 1.0], [1.0, -2.0], [0.0, 1.0],
                                             [2.0, 2.0], [-1.0, 0.5], [1.0, 1.0]],
                  "lrs": [0.3, 0.15, 0.075, 0.0375, 0.01875, 0.009375]}],
          label=lambda c: f"input w={c['w']}, lrs={c['lrs']}",
          idea="a tf.function called in a Python loop is made once, outside the loop, and "
               "takes what changes (the gradient, the learning rate) as tensor arguments: "
               "every update of w is made by that graph, and it traces at most once for the "
               "whole loop.",
          kernel_evidence="the tf.function calls descend made from Python, w before and after "
                          "each, how many distinct functions they were and how many times "
                          "they traced")
def descend(case, obs, ctx):
    """``obs``: ``w`` (the variable after descend), ``returned`` (what descend returned),
    ``graph_calls`` (tf.function calls made from Python), ``moves`` ([w before, w after] of
    each call that changed w), ``functions`` and ``traces`` (distinct functions called, and
    their new traces, on a second run). Reference: :func:`descend_reference`."""
    steps = len(case["lrs"])
    want = descend_reference(case)
    ctx.close(obs["w"], want, ", w after descend", rtol=1e-5, atol=1e-6, check_dtype="float")
    ctx.close(obs["returned"], want, ", the value descend returned", rtol=1e-5, atol=1e-6)
    moves = values(obs, "moves")
    if count(obs, "graph_calls") < 1 or not moves:
        ctx.fail(f"{ctx.what} gives the right weights, but no tf.function changed w: the "
                 f"updates did not run as a graph.", mistake="M21",
                 fix="make every in-place update of w (read tf.Variable's assign_sub) inside a "
                     "tf.function that descend calls once per step.", code="no_graph")
    start = np.asarray(case["w"], dtype=np.float32)
    chained = len(moves) <= steps and all(
        isinstance(move, list) and len(move) == 2 for move in moves)
    if chained:
        previous = start
        for before, after in moves:
            chained = chained and matches(before, previous, 0, 0)
            previous = after
        chained = chained and matches(obs["w"], previous, 0, 0)
    if not chained:
        ctx.fail(f"{ctx.what} gives the right weights, but w changed outside the tf.function "
                 f"calls: an update applied by hand beside a graph is not an update made by "
                 f"the graph.", mistake="M21",
                 fix="let the tf.function make every in-place update of w, and change w nowhere "
                     "else.", code="by_hand")
    traces, functions = count(obs, "traces"), count(obs, "functions")
    shown = _shown(ctx, f" ({traces} traces for {steps} steps)")
    if traces > 1 and functions > 1:
        ctx.fail(f"{ctx.what} gives the right weights, but it makes a new tf.function for "
                 f"each step{shown}: a tf.function created inside the loop is a new function "
                 f"every time, with an empty trace cache, so every step traces again.",
                 mistake="M41",
                 fix="create the tf.function once, before the loop (or at module level), with the "
                     "gradient and the learning rate as its arguments, and call it in the loop.")
    if traces > 1:
        ctx.fail(f"{ctx.what} gives the right weights, but its tf.function traced again for "
                 f"each new learning rate{shown}: a Python float argument is part of the "
                 f"trace key, so every new value makes a new graph (and TensorFlow warns "
                 f"'triggered tf.function retracing').", mistake="M26",
                 fix="a Python number is part of the trace key, a tensor's value is not: pass the "
                     "learning rate as a float32 tensor.")


# --------------------------------------------------------------------------- td_update

#: Most steps, and the largest state size, of a td_update case.
MAX_TD_STEPS, MAX_TD_SIZE = 1000, 1000
#: (rtol, atol) of td_update's values: v(s) = w . s may be a matrix product (tf.tensordot),
#: which a GPU with TensorFloat-32 (Ampere and newer) computes from inputs rounded to 10 bits of
#: mantissa (relative error up to about 5e-4); the semi- and full-gradient updates of the cases
#: differ by far more.
TD_TOLERANCE = (2e-3, 2e-4)


def td_reference(case, semi: bool = True):
    """Linear TD(0) in float64: v(s) = w . s, target = r (done) or r + gamma * v(s_next),
    loss = 0.5 * (target - v(s)) ** 2, w -= lr * dloss/dw. ``semi``: the target held fixed
    (the semi-gradient, -delta * s); else the full gradient -delta * (s - gamma * s_next).
    Returns (losses, weights after each step)."""
    w = _floats(case["w"])
    gamma, lr = float(case["gamma"]), float(case["lr"])
    losses, ws = [], []
    for step in case["steps"]:
        s, s_next = _floats(step["s"]), _floats(step["s_next"])
        done = bool(step["done"])
        target = float(step["r"]) + (0.0 if done else gamma * float(w @ s_next))
        delta = target - float(w @ s)
        losses.append(0.5 * delta ** 2)
        grad = -delta * s if semi or done else -delta * (s - gamma * s_next)
        w = w - lr * grad
        ws.append(w)
    return losses, ws


TD_CASES = [{"w": [0.5, -0.5], "gamma": 0.9, "lr": 0.1,
             "steps": [{"s": [1.0, 0.0], "r": 1.0, "s_next": [0.0, 1.0], "done": False},
                       {"s": [0.0, 1.0], "r": 0.0, "s_next": [1.0, 1.0], "done": False},
                       {"s": [1.0, 1.0], "r": 2.0, "s_next": [0.0, 0.0], "done": True}]}]


@exercise("td_update", module=MODULE, cases=TD_CASES,
          label=lambda c: f"input w={c['w']}, gamma={c['gamma']}, {len(c['steps'])} steps",
          idea="the TD target is held fixed (tf.stop_gradient, or computed under "
               "tape.stop_recording): the update is the semi-gradient -delta * s computed by "
               "tape.gradient while td_update traces, on terminal and non-terminal steps.",
          kernel_evidence="whether tape.gradient ran while a fresh copy of td_update traced",
          findings={"not_tf_function": NOT_TF_FUNCTION, "stop_gradient_all": TD_ALL_STOPPED})
def td_update(case, obs, ctx):
    """``obs``: ``losses`` and ``weights`` (after each step), ``tape_calls`` (tape.gradient
    calls while a fresh copy traced). Reference: :func:`td_reference`."""
    if len(case["steps"]) > MAX_TD_STEPS or len(case["w"]) > MAX_TD_SIZE:
        raise ValueError("case too large")
    losses, ws = td_reference(case, semi=True)
    _, full_ws = td_reference(case, semi=False)
    got_losses = values(obs, "losses", len(losses))
    got_ws = values(obs, "weights", len(ws))
    for step, (loss, w, ref_loss, ref_w, full_w) in enumerate(
            zip(got_losses, got_ws, losses, ws, full_ws), start=1):
        where = f" after step {step}" if ctx.reveal else " after a step"
        if not matches(w, ref_w, *TD_TOLERANCE) and matches(w, full_w, *TD_TOLERANCE):
            ctx.fail(f"{ctx.what}: w{where} is what the full gradient gives: the gradient "
                     f"also flowed into the target r + gamma * v(s_next), so the update "
                     f"chases a target that moves with w.", mistake="M27",
                     fix="hold the target fixed: wrap the target alone in tf.stop_gradient (or "
                         "compute it while the tape stops recording: read "
                         "GradientTape.stop_recording).")
        ctx.close(loss, ref_loss, f", loss of step {step}" if ctx.reveal else ", a loss",
                  rtol=TD_TOLERANCE[0], atol=TD_TOLERANCE[1], check_dtype="float")
        ctx.close(w, ref_w, f", w{where}", rtol=TD_TOLERANCE[0], atol=TD_TOLERANCE[1])
    if count(obs, "tape_calls") < 1:
        ctx.fail(f"{ctx.what} gives the right weights, but no tape computed the gradient: "
                 f"the exercise is a tape told which path to leave out.", mistake="M21",
                 fix="keep the GradientTape and the tape's gradient of the loss with respect to "
                     "w; hold the target fixed with tf.stop_gradient.", code="no_tape")
    lr = float(case["lr"])
    for eager in values(obs, "eager_steps", len(ws)):
        change = eager["change"] if isinstance(eager, dict) else None
        gradients = values(eager, "gradients") if isinstance(eager, dict) else []
        if change is None or not any(matches(change, -lr * _floats(g), *TD_TOLERANCE)
                                     for g in gradients[:MAX_ITEMS] if g is not None):
            ctx.fail(f"{ctx.what} gives the right weights, but the update it applies is not "
                     f"what tape.gradient returned: the step is written by hand beside the "
                     f"tape, so the tape decides nothing.", mistake="M44",
                     fix="apply the tape's result: the update of w is the learning rate times the "
                         "gradient the tape returns, with the target held fixed inside the tape.")


# --------------------------------------------------------------------------- rms_normalize

def _rms_normalize(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return (x / np.sqrt(np.mean(x * x) + 1e-6)).astype(np.float32)


#: The numbers a printed line holds.
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _prints(line, value: float) -> bool:
    """Whether a printed ``line`` holds a number within 1e-4 (relative) of ``value``."""
    return isinstance(line, str) and any(
        abs(float(n) - value) <= 1e-4 * max(1.0, abs(value)) for n in NUMBER.findall(line[:200]))


@exercise("rms_normalize", module=MODULE, cases=[[3.0, 4.0], [[1.0, -1.0], [2.0, 0.5]]],
          label=lambda c: f"input {c}",
          idea="XLA compiles numeric code only: the arithmetic stays in a "
               "tf.function(jit_compile=True), and the tf.print that logs the root mean square "
               "on every call sits in a plain tf.function around it: x / sqrt(mean(x ** 2) + "
               "1e-6) is returned and the rms printed once per call.",
          kernel_evidence="whether a tf.function with jit_compile=True ran, and what the calls "
                          "printed",
          findings={"not_tf_function": NOT_TF_FUNCTION, "xla_print": XLA_PRINT})
def rms_normalize(case, obs, ctx):
    """``obs``: ``results`` (two calls), ``jit`` (the outer function is compiled),
    ``jit_called`` (a jit_compile=True tf.function ran), ``lines`` (what the calls printed).
    Reference: x / sqrt(mean(x ** 2) + 1e-6), float32, and the rms on one line per call."""
    want = _rms_normalize(case)
    rms = float(np.sqrt(np.mean(np.asarray(case, dtype=np.float64) ** 2) + 1e-6))
    for value in values(obs, "results", 2):
        ctx.close(value, want, rtol=1e-5, atol=1e-6, check_dtype="float")
    if flag(obs, "jit") is not True and flag(obs, "jit_called") is not True:
        ctx.fail(f"{ctx.what} returns the right values, but nothing in it is compiled by XLA "
                 f"any more: the fix keeps XLA for the arithmetic and moves only what XLA "
                 f"cannot compile out of it.", mistake="M21",
                 fix="XLA cannot compile tf.print: move the arithmetic into a tf.function of its "
                     "own compiled with XLA (jit_compile), and call it from rms_normalize, which "
                     "keeps the tf.print.", code="no_xla")
    printed = values(obs, "lines")
    if sum(1 for line in printed if _prints(line, rms)) >= 2:
        return
    if len(printed) == 1:
        ctx.fail(f"{ctx.what}: one line is printed for two calls, not one per call: a "
                 f"Python print runs while TensorFlow traces (and shows a symbolic tensor, no "
                 f"value); the graph holds no print.", mistake="M08",
                 fix="log the rms with tf.print, an op of the graph, in the plain tf.function.")
    ctx.fail(f"{ctx.what} returns the right values, but it no longer logs the root mean "
             f"square: the team needs that line on every call, and XLA for the arithmetic.",
             mistake="M21",
             fix="keep the tf.print in rms_normalize, a plain tf.function, and let it call a "
                 "function compiled with XLA (jit_compile) for the arithmetic only.", code="no_log")


# --------------------------------------------------------------------------- hinge_total

def _hinge_total(scores) -> np.float32:
    scores = np.asarray(scores, dtype=np.float64)
    return np.float32(np.maximum(0.0, 1.0 - scores).sum())


#: How many scores the long vector of hinge_total's check holds: longer than any loop unrolled
#: to a fixed length would plausibly be.
LONG_LENGTH = 600


def long_scores() -> np.ndarray:
    """The long vector every case of hinge_total is also checked on (both halves compute it):
    LONG_LENGTH float32 scores in [-2, 2.5], four in every seven below 1 (a margin lost)."""
    return ((np.arange(LONG_LENGTH) % 7) * 0.75 - 2.0).astype(np.float32)


def grown_lengths(n: int) -> tuple:
    """The two lengths hinge_total's graph is traced for, given a case's length ``n``: both
    nonzero (an empty vector traces a graph of its own, a few nodes smaller, whatever the
    loop), the second 16 longer."""
    first = max(int(n), 1)
    return first, first + 16


@exercise("hinge_total", module=MODULE,
          cases=[[[0.5, 2.0, -1.0], [3.0, 4.0], [0.25]]],
          label=lambda c: f"input {c}",
          idea="one graph sums max(0, 1 - s) for scores of any length, and its size does not "
               "grow with the length: the loop runs in the graph (a for over the tensor, which "
               "AutoGraph makes a tf.while_loop, with a variable read after a tensor if set on "
               "both branches and a loop variable of one dtype) or there is no loop, never a "
               "Python range over the static length, copied once per score while tracing.",
          kernel_evidence="the op types of the graph traced for scores of any length, its "
                          "value on a long vector (600 scores), and the node counts of the "
                          "graphs traced for each vector's own length (1 for an empty one) "
                          "and for a longer one",
          findings={"not_tf_function": NOT_TF_FUNCTION, "else_branch": ELSE_BRANCH,
                    "loop_dtype": LOOP_DTYPE, "static_length": STATIC_LENGTH})
def hinge_total(case, obs, ctx):
    """``obs``: ``results`` (one per vector of the case), ``op_types`` (of the graph traced
    for ``TensorSpec([None], float32)``), ``long`` (that graph's value on :func:`long_scores`),
    ``nodes`` (per vector, ``[n, nodes of the graph traced for length m, nodes for length
    m + 16]``, m and m + 16 :func:`grown_lengths`). Reference: sum(max(0, 1 - s)), float32;
    the two node counts equal."""
    if len(case) > MAX_ITEMS:
        raise ValueError("case too large")
    for value, scores in zip(values(obs, "results", len(case)), case):
        ctx.close(value, _hinge_total(scores), ", hinge_total(scores)", rtol=1e-5, atol=1e-5,
                  check_dtype="float")
    long_value, want = obs["long"], _hinge_total(long_scores())
    if not matches(long_value, want, 1e-5, 1e-3):
        shown = _shown(ctx, f" (got {long_value!r}, expected {want!r})")
        ctx.fail(f"{ctx.what} gives the right values for the case, but not for a vector of "
                 f"{LONG_LENGTH} scores{shown}: a loop written for a fixed number of scores "
                 f"(a Python range over a fixed count, a padded copy) misses the scores beyond "
                 f"it. One graph must sum every score, however many.",
                 fix="let the loop run in the graph over every score: iterate the tensor itself "
                     "or a tf.range over its dynamic size, "
                     "or use a vector op and no loop.", mistake="M77", code="fixed_length")
    for item, scores in zip(values(obs, "nodes", len(case)), case):
        n, short, longer = (count({"v": v}, "v") for v in values({"v": item}, "v", 3))
        if n != np.asarray(scores).size:
            raise ValueError("nodes: not for the case's own length")
        if short != longer:
            first, second = grown_lengths(n)
            shown = _shown(ctx, f" ({short} nodes for {first} scores, {longer} for {second})")
            ctx.fail(f"{ctx.what} gives the right values, but its graph grows with the number "
                     f"of scores{shown}: a Python range over the static length (len(scores) or "
                     f"scores.shape[0], a Python int while the length is known) runs while "
                     f"tracing and copies the body once per score, a new, larger graph for "
                     f"every length.", mistake="M57",
                     fix="let the loop run in the graph: iterate the tensor itself or a tf.range "
                         "over its dynamic size, or use a vector op and no loop.",
                     code="unrolled")
    _not_py_function(ctx, op_types(obs), "let AutoGraph turn the if and the for into graph "
                     "ops, with the variable set on both branches and total a float.")


# --------------------------------------------------------------------------- count_ops

@exercise("count_ops", module=MODULE, cases=["digit_sum", "affine"],
          label=lambda c: f"function {c if isinstance(c, str) else c.get('name')}",
          idea="a graph's ops are the nodes of its GraphDef plus the nodes of every function "
               "in its library, where loop bodies and branches live: the count of functions "
               "the student has never seen is that sum.",
          kernel_evidence="the node counts of the concrete function's GraphDef and of its "
                          "library functions")
def count_ops(case, obs, ctx):
    """``obs``: ``result`` (what count_ops returned), ``graph_nodes`` (nodes of the GraphDef),
    ``library_nodes`` (nodes of each library function). Reference: their sum."""
    graph = count(obs, "graph_nodes")
    library = values(obs, "library_nodes")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in library):
        raise ValueError("library node counts")
    want = graph + sum(library)
    got = obs["result"]
    if isinstance(got, bool) or not isinstance(got, (int, np.ndarray, float)):
        ctx.fail(f"{ctx.what}: count_ops should return a whole number.",
                 fix="return an int: the number of nodes.", code="type")
    if library and matches(got, graph, 0, 0):
        ctx.fail(f"{ctx.what} counts only the top-level graph: graph.get_operations() (or "
                 f"graph_def.node) misses the ops inside loops and conditions, which live in "
                 f"the library's functions.", mistake="M28",
                 fix="loop bodies and branches are functions of the GraphDef's library: add the "
                     "nodes of every function there (read GraphDef's library and FunctionDef's "
                     "node_def).")
    if library and matches(got, graph + len(library), 0, 0):
        ctx.fail(f"{ctx.what} counts the library's functions ({len(library)}), not the ops "
                 f"inside them: each loop condition, loop body and branch is one function "
                 f"holding a graph of its own.", mistake="M102",
                 fix="for every function of the library, add how many nodes its own graph "
                     "has (read FunctionDef's fields).")
    ctx.close(got, want, ", the number of ops", rtol=0, atol=0)
