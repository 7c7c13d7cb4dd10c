"""Checks of assignment 07 (graph-mode pitfalls and debugging): the kernel halves.

Every check is in two halves (:mod:`autograder.checks.judge`): a kernel half here,
``collect_<name>(fn, case, ctx)``, calls the student's code and returns what it observed as
plain data; the grader half in :mod:`autograder.checks.judge.pitfalls` computes the reference
with NumPy and decides. The visible ``check_<name>`` runs both.

Two kinds of exercise:

- **predictions**: ``check_predict_<topic>(predicted_a, ...)`` reads the values the student
  wrote before running a cell; :func:`collect_prediction` only passes them on. The cell that
  shows the answer starts with :func:`show_prediction` (03's), which refuses until the
  prediction is set.
- **find-and-fix**: a broken function is given in the notebook and the student writes the
  fixed one. Each kernel half calls the fix as a graph (the student's ``tf.function``, or a
  fresh copy of it), more than once, on inputs that reach every branch, and observes the
  evidence of the idea: trace counts, the op types of the graph (of every function it calls,
  loop and branch bodies included), which ``tf.function`` s ran from Python and what they
  traced (:func:`recording_graph_calls`), whether ``tape.gradient`` ran while a function traced
  (:func:`autograder.checks.harness.recording_gradients`), whether eager execution was on
  inside the function's body.

The mistakes the grader halves name for this module, by what the kernel half observes:
M19 (run_functions_eagerly left on), M69 (the switch put back to a fixed state, not the one it
had), M80 (fn.python_function called to debug eagerly: the tf.functions it calls stay graphs),
M09 (Python's min() or int() asking a symbolic tensor for a value, WarmupSchedule's draft),
M57 (a Python range over a tensor's static length, unrolled while tracing: the graph grows with
the length, hinge_total's draft, found from the graphs traced for two lengths), M22 (a
Python value read once at trace time), M70 (a tf.Variable replaced by a new one, not assigned:
the graph keeps the one it captured), M71 (a prediction that is not a plain value written
down), M16 (.numpy() inside the graph, found by :func:`autograder.checks.harness.call`), M23 (a
Python list appended inside a tf.function), M24 (a Python iterator consumed at trace time), M25
(a Python counter as a graph's state), M26 (a retrace per Python float), M27 (a TD target that
is not held fixed), M28 (ops of loops and conditions not counted), M18 (jit_compile on code XLA
cannot compile, found by :func:`autograder.checks.harness.call`), M13 (tf.stop_gradient around
the whole TD error, found by experiment), M40 (a tf.data iterator made inside the graph), M41 (a
tf.function created inside a loop), M36 and M37 (AutoGraph's rules for a variable set in one
branch only, and a loop variable that changes dtype, found by experiment), M44 (a weight update
that is not what tape.gradient returned), M21 (the right numbers without the idea). No
reference value is computed here: the judges compute them. Functions and inputs only the
hidden tests use are not here: they come as the cases of the request (source text, plain
data).
"""
from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from . import functions, kernel_entry  # noqa: F401  (kernel_entry: the grader's way in)
from .capture import capture_output
from .compare import CheckFailed, fail, function_from_source
from .graphs import graph_evidence, show_prediction
from .harness import (NOT_ANSWERED, call, collect_prediction, diagnose, exercise_check, explain_missing_gradient,
                      is_not_answered, is_tf_function, quiet_tensorflow, recording_gradients,
                      TAPE_SHIFT)
from .harness import POSING
from .judge.pitfalls import (ELSE_BRANCH, LOOP_DTYPE, PYTHON_BOOL, STATIC_LENGTH, TD_ALL_STOPPED,
                             WARMUP_PROBE, XLA_PRINT, grown_lengths, long_scores)

__all__ = [
    "check_predict_eager", "check_predict_buggy_add", "check_predict_log",
    "check_predict_iterator", "check_predict_counter", "check_predict_traces",
    "check_predict_gradients", "check_predict_xla",
    "check_run_eagerly", "check_make_scaler", "check_recorder", "check_make_next_value",
    "check_warmup_schedule", "check_descend", "check_td_update", "check_rms_normalize",
    "check_hinge_total", "check_count_ops", "recording_graph_calls", "all_op_types",
    "COUNT_FUNCTIONS", "show_prediction",
]

#: Most entries of a list the kernel sends (a log, a list of calls).
MAX_ENTRIES = 1000


# --------------------------------------------------------------------------- helpers

def _call(fn, *args, what: str, **kwargs):
    """:func:`harness.call`, with the finding code a grading kernel sends for the failures it
    words itself: ``not_answered`` (NotImplementedError), ``raised`` (an exception of no known
    cause)."""
    __tracebackhide__ = True
    try:
        return call(fn, *args, what=what, **kwargs)
    except CheckFailed as error:
        if error.code is None and error.mistake is None:
            if error.cause.endswith(NOT_ANSWERED[0]):
                error.code = "not_answered"
            elif error.cause.startswith(f"{what} raised "):
                error.code = "raised"
        raise


def _require_tf_function(fn, name: str, fix: str) -> None:
    """Fail (M21, code ``not_tf_function``) unless ``fn`` is a tf.function: every fix of this
    assignment must work in graph mode, where the pitfall lives."""
    __tracebackhide__ = True
    if functions.is_posing(fn):
        fail(POSING[0].format(name=name, type=type(fn).__name__), mistake="M87", fix=POSING[1],
             code="posing_function")
    if not is_tf_function(fn):
        fail(f"{name} is not a tf.function (got {type(fn).__name__}), so it runs eagerly and "
             f"the pitfall the exercise fixes cannot happen: the fix must work in graph mode.",
             mistake="M21", fix=fix, code="not_tf_function")


def all_op_types(concrete) -> list[str]:
    """The sorted op type names of a concrete function's graph and of every function in its
    GraphDef's library (loop bodies, branches, nested tf.functions)."""
    graph_def = concrete.graph.as_graph_def()
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    return sorted({node.op for node in nodes})


def _plain_value(value):
    """A value as the kernel sends it: None for a graph (symbolic) tensor, which has no value."""
    if tf.is_tensor(value) and tf.is_symbolic_tensor(value):
        return None
    return value


@dataclass
class GraphCall:
    """One call of a ``tf.function`` from Python (not from inside a graph being traced)."""
    function: object
    args: tuple
    kwargs: dict
    traces_before: int
    traces_after: int
    watched_before: object = None
    watched_after: object = None


@contextlib.contextmanager
def recording_graph_calls(watch=None):
    """Record every call of a ``tf.function`` made from Python (eagerly) inside the block,
    with the function's trace count before and after it; yields the list of
    :class:`GraphCall`. ``tf.function.__call__`` is wrapped for the block only. This is
    kernel-side evidence that a step ran as a graph, and of how often it traced.

    Args:
        watch: a tf.Variable or None; when given, each call records its value (NumPy) before
            and after the call, so a check can tell the changes made inside graph calls from
            changes made outside them.
    """
    cls = type(tf.function(lambda: None))
    original = cls.__call__
    record: list[GraphCall] = []

    def __call__(self, *args, **kwargs):
        if tf.inside_function() or not is_tf_function(self):
            return original(self, *args, **kwargs)
        before = functions.tracing_count(self)
        value = watch.numpy() if watch is not None else None
        result = original(self, *args, **kwargs)
        record.append(GraphCall(self, args, kwargs, before, functions.tracing_count(self),
                                value, watch.numpy() if watch is not None else None))
        return result

    cls.__call__ = __call__
    try:
        yield record
    finally:
        cls.__call__ = original


def _new_traces(record) -> int:
    """How many traces the functions called in ``record`` made during it."""
    spans = {}
    for entry in record:
        first, last = spans.get(id(entry.function), (entry.traces_before, entry.traces_after))
        spans[id(entry.function)] = (min(first, entry.traces_before),
                                     max(last, entry.traces_after))
    return sum(last - first for first, last in spans.values())


def _called_op_types(record) -> list[str]:
    """The op types of the graphs of the functions called in ``record``."""
    seen, ops = set(), set()
    for entry in record[:MAX_ENTRIES]:
        if id(entry.function) in seen:
            continue
        seen.add(id(entry.function))
        try:
            concrete = functions.concrete_function(entry.function, *entry.args, **entry.kwargs)
        except Exception:  # a signature that cannot be traced again: nothing to read
            continue
        ops.update(all_op_types(concrete))
    return sorted(ops)


def _float32(value) -> tf.Tensor:
    return tf.constant(np.asarray(value, dtype=np.float32))


@contextlib.contextmanager
def _recording_jit_calls():
    """Record, for every call of a ``tf.function`` inside the block (from Python or from a
    graph being traced), whether that function has ``jit_compile=True``; yields the list of
    bools. Evidence that a graph hands a part of itself to XLA."""
    cls = type(tf.function(lambda: None))
    original = cls.__call__
    record: list[bool] = []

    def __call__(self, *args, **kwargs):
        if len(record) < MAX_ENTRIES:
            record.append(getattr(self, "_jit_compile", None) is True)
        return original(self, *args, **kwargs)

    cls.__call__ = __call__
    try:
        yield record
    finally:
        cls.__call__ = original


# --------------------------------------------------------------------------- predictions

check_predict_eager = exercise_check("check_predict_eager", collect_prediction)
check_predict_buggy_add = exercise_check("check_predict_buggy_add", collect_prediction)
check_predict_log = exercise_check("check_predict_log", collect_prediction)
check_predict_iterator = exercise_check("check_predict_iterator", collect_prediction)
check_predict_counter = exercise_check("check_predict_counter", collect_prediction)
check_predict_traces = exercise_check("check_predict_traces", collect_prediction)
check_predict_gradients = exercise_check("check_predict_gradients", collect_prediction)
check_predict_xla = exercise_check("check_predict_xla", collect_prediction)


# --------------------------------------------------------------------------- run_eagerly

def _probe(raises: bool):
    """A tf.function ``probe(x) = 2 * inner(x)`` with ``inner(x) = x * x + 1``, another
    tf.function; each records, every time its Python body runs, whether it ran eagerly.
    With ``raises``, probe's body raises ValueError. Returns (probe, outer log, inner log,
    switch log: whether the switch was on, read by TensorFlow's own function, at each run)."""
    outer, inner_log, switch = [], [], []

    @tf.function
    def inner(x):
        inner_log.append(bool(functions.executing_eagerly()))
        return x * x + 1.0

    @tf.function
    def probe(x):
        outer.append(bool(functions.executing_eagerly()))
        switch.append(functions.eager_by_the_switch())
        if raises:
            raise ValueError("the check's probe raised, as the check asked")
        return 2.0 * inner(x)

    return probe, outer, inner_log, switch


def collect_run_eagerly(fn, case, ctx):
    """Kernel half of ``check_run_eagerly``: ``run_eagerly(fn, *args)`` calls ``fn(*args)``
    with ``tf.config.run_functions_eagerly(True)`` and puts the switch back as it was, even
    when fn raises. Idea graded: fn, and every tf.function it calls, runs eagerly, and the
    switch is restored (M19 when it is left on).

    A case ``{"x", "before", "raises"}`` sets the switch to ``before``, then calls
    ``run_eagerly(probe, x)`` twice, each time on a fresh probe (:func:`_probe`) whose two
    tf.functions record whether their Python bodies ran eagerly; the switch is read after each
    call and set back off (the check runs with it off).

    Returns:
        ``{"calls": [two dicts of "result", "raised", "outer", "inner", "after"]}``.
    """
    __tracebackhide__ = True
    x, before, raises = float(case["x"]), bool(case["before"]), bool(case["raises"])
    calls = []
    try:
        for _ in range(2):
            probe, outer, inner, switch = _probe(raises)
            with quiet_tensorflow():
                functions.run_functions_eagerly(before)
            result, raised = None, None
            if raises:
                try:
                    with quiet_tensorflow():
                        fn(probe, tf.constant(x))
                except Exception as error:  # the probe's ValueError, or the student's own
                    if is_not_answered(error):
                        fail(f"{ctx.what} is {NOT_ANSWERED[0]}", fix=NOT_ANSWERED[1],
                             code="not_answered")
                    raised = type(error).__name__
            else:
                result = _call(fn, probe, tf.constant(x), what=ctx.what,
                               switch_may_change=True)
            with quiet_tensorflow():
                after = bool(functions.functions_run_eagerly())
            calls.append({"result": result, "raised": raised, "outer": outer[:MAX_ENTRIES],
                          "inner": inner[:MAX_ENTRIES], "switch": switch[:MAX_ENTRIES],
                          "after": after})
    finally:
        with quiet_tensorflow():
            functions.run_functions_eagerly(False)
    return {"calls": calls}


check_run_eagerly = exercise_check("check_run_eagerly", collect_run_eagerly)


# --------------------------------------------------------------------------- make_scaler

def collect_make_scaler(make_fn, case, ctx):
    """Kernel half of ``check_make_scaler``: ``make_scaler(initial)`` returns ``(set_scale,
    scaled)``; ``scaled(x)`` is a tf.function returning x times the scale set last. Idea
    graded: the graph reads the scale from a tf.Variable (M22 when a Python number was read
    once, at trace time).

    Calls scaled(x) twice, then set_scale(s) and scaled(x) for each s of the case's
    ``scales`` (a float, or a list of floats, one per entry of x's last axis: M103 when the
    variable refuses a scale of another shape), then set_scale(initial) and scaled(x); x is a
    float32 tensor of the case.

    Returns:
        ``{"results", "traces", "op_types"}``.
    """
    __tracebackhide__ = True
    initial, x = float(case["initial"]), _float32(case["x"])
    made = _call(make_fn, initial, what=f"{ctx.exercise}({ctx.label})")
    if not (isinstance(made, (tuple, list)) and len(made) == 2):
        fail(f"{ctx.what} should return a pair (set_scale, scaled), got "
             f"{type(made).__name__}.", fix="return set_scale, scaled", code="type")
    set_scale, scaled = made
    _require_tf_function(scaled, "scaled, the second function make_scaler returns",
                         "keep scaled a tf.function.")
    results = [_call(scaled, x, what=ctx.what) for _ in range(2)]
    for scale in [_scale_value(s) for s in case["scales"]] + [initial]:
        try:
            set_scale(scale)
        except ValueError as error:
            if "Shape mismatch" in str(error) or "incompatible" in str(error):
                shown = "" if ctx.hidden else f" ({scale!r})"
                fail(f"set_scale of {ctx.what} raised ValueError for a scale of another shape "
                     f"than the first one{shown}: a tf.Variable keeps the shape of the value it "
                     f"was made with, and assign must match it.", mistake="M103",
                     fix="the variable must accept a scale of any shape: a tf.Variable can be "
                         "made with a shape TensorFlow leaves open (read its constructor's "
                         "arguments).")
            _call(set_scale, scale, what=f"set_scale of {ctx.what}")
        results.append(_call(scaled, x, what=ctx.what))
    traces = functions.tracing_count(scaled)
    ops = _call(lambda: all_op_types(functions.concrete_function(scaled, x)),
                what=f"{ctx.what}, traced for its graph")
    return {"results": results, "traces": traces, "op_types": ops}


def _scale_value(scale):
    """A case's scale as set_scale receives it: a Python float, or a list of Python floats (a
    scale per entry of x's last axis)."""
    return [float(v) for v in scale] if isinstance(scale, (list, tuple)) else float(scale)


check_make_scaler = exercise_check("check_make_scaler", collect_make_scaler)


# --------------------------------------------------------------------------- Recorder

def collect_recorder(cls, case, ctx):
    """Kernel half of ``check_recorder``: ``Recorder()`` has a Python list ``log`` and a
    method ``record(x)`` that returns sum(x * x), computed by a tf.function, and appends the
    value to ``log`` on every call. Idea graded: Python bookkeeping happens outside the graph,
    on what the tf.function returned (M23 when the append ran inside it, once per trace).

    A fresh Recorder gets ``record`` called on each input of the case (float32 tensors), while
    tf.function calls from Python are recorded (:func:`recording_graph_calls`).

    Returns:
        ``{"results", "log", "symbolic", "log_is_list", "graph_calls", "op_types"}``.
    """
    __tracebackhide__ = True
    recorder = _call(cls, what=f"{ctx.exercise}()")
    results, graph_calls = [], []
    with recording_graph_calls() as record:
        for x in case["inputs"]:
            before = len(record)
            results.append(_call(getattr(recorder, "record", None), _float32(x),
                                 what=ctx.what))
            graph_calls.append(len(record) - before)
    log = getattr(recorder, "log", None)
    entries = [_plain_value(entry) for entry in log[:MAX_ENTRIES]] if isinstance(
        log, list) else []
    symbolic = sum(1 for entry in (log[:MAX_ENTRIES] if isinstance(log, list) else [])
                   if _plain_value(entry) is None and entry is not None)
    return {"results": results, "log": entries, "symbolic": symbolic,
            "log_is_list": isinstance(log, list), "graph_calls": graph_calls,
            "op_types": _called_op_types(record)}


check_recorder = exercise_check("check_recorder", collect_recorder)


# --------------------------------------------------------------------------- make_next_value

def collect_make_next_value(make_fn, case, ctx):
    """Kernel half of ``check_make_next_value``: ``make_next_value(values)`` (values: a Python
    list of floats) returns a tf.function ``next_value()`` whose k-th call returns values[k]
    as a float32 scalar. Idea graded: the graph takes the elements from a tf.data iterator made
    once, outside the graph (or other TensorFlow state), not from a Python iterator consumed
    while tracing (M24), nor from an iterator the graph makes anew on every call (M40: its op
    types then include the iterator's creation).

    Returns:
        ``{"results": one per element, "traces", "op_types"}``.
    """
    __tracebackhide__ = True
    elements = [float(v) for v in case["values"]]
    next_value = _call(make_fn, list(elements), what=f"{ctx.exercise}({ctx.label})")
    _require_tf_function(next_value, "The function make_next_value returns",
                         "keep next_value a tf.function.")
    results = [_call(next_value, what=f"{ctx.what}, call {k + 1}")
               for k in range(len(elements))]
    traces = functions.tracing_count(next_value)
    ops = _call(lambda: all_op_types(functions.concrete_function(next_value)),
                what=f"{ctx.what}, traced for its graph")
    return {"results": results, "traces": traces, "op_types": ops}


check_make_next_value = exercise_check("check_make_next_value", collect_make_next_value)


# --------------------------------------------------------------------------- WarmupSchedule

def _python_bool(error):
    """M09 as WarmupSchedule's draft meets it: a Python builtin (``min``, ``max``), an ``if``
    AutoGraph leaves to Python, or ``bool()`` asks a symbolic tensor for its truth value."""
    if isinstance(error, tf.errors.OperatorNotAllowedInGraphError):
        message, fix = PYTHON_BOOL
        raise CheckFailed(message, "M09", fix, code="python_bool") from None
    return None


def collect_warmup_schedule(cls, case, ctx):
    """Kernel half of ``check_warmup_schedule``: ``WarmupSchedule(base_lr, warmup_steps)``
    has a step counter ``step`` (a tf.Variable) and a tf.function ``next_lr()`` whose k-th
    call returns base_lr * k / warmup_steps while k <= warmup_steps, then base_lr. Idea graded:
    the counter is a tf.Variable the graph updates on every call (M25 for a Python int), and
    the rate is computed from it by ops of the graph: the notebook's draft asks the symbolic
    step for a Python value (``min(int(self.step), ...)``), which raises
    OperatorNotAllowedInGraphError as a graph (M09) although it runs eagerly. Every call goes
    to the one traced ``next_lr`` (one trace, the rates of every step from it).

    Two fresh schedules (they must not share their counter) get ``calls`` calls each. Then a
    probe (:data:`~.judge.pitfalls.WARMUP_PROBE`): a schedule of many warm-up steps, its step
    set far into them, called once; a table of the rates made in advance (one constant, or a
    constant per step in branches) is as long as the warm-up, a schedule computed from the step
    holds a few scalars whatever its length.

    Returns:
        ``{"instances": [two dicts of "rates", "step_is_variable", "step", "traces",
        "op_types", "largest_constant"], "probe": None or {"rates": [its one rate],
        "constant_elements", "raised"}}`` (``largest_constant``: the most elements of a
        constant, captured tensor or variable next_lr's graph holds; ``constant_elements``: all
        of them together, in the probe's graph; the probe is None where the step is not a
        tf.Variable or next_lr not a tf.function, which the instances report).
    """
    __tracebackhide__ = True
    base_lr, steps, calls = float(case["base_lr"]), int(case["warmup_steps"]), int(case["calls"])
    instances = []
    for _ in range(2):
        schedule = _call(cls, base_lr, steps, what=f"{ctx.exercise}({base_lr}, {steps})"
                         if not ctx.hidden else f"{ctx.exercise}(...) ({ctx.label})")
        next_lr = getattr(schedule, "next_lr", None)
        _require_tf_function(next_lr, "WarmupSchedule.next_lr",
                             "keep next_lr a tf.function.")
        rates = [_call(next_lr, what=f"{ctx.what}, call {k + 1}", explain=_python_bool)
                 for k in range(calls)]
        step = getattr(schedule, "step", None)
        is_variable = isinstance(step, tf.Variable)
        ops = _call(lambda: all_op_types(functions.concrete_function(next_lr)),
                    what=f"{ctx.what}, traced for its graph")
        largest = _call(lambda: graph_evidence(next_lr)["largest_constant"],
                        what=f"{ctx.what}, traced for its graph")
        instances.append({"rates": rates, "step_is_variable": is_variable,
                          "step": step.numpy() if is_variable else None,
                          "traces": functions.tracing_count(next_lr), "op_types": ops,
                          "largest_constant": largest})
    return {"instances": instances, "probe": _warmup_probe(cls)}


def _warmup_probe(cls):
    """The probe of :func:`collect_warmup_schedule`: None, or what the probe's call gave (an
    error of the student's code is recorded as ``raised``; the judge words it)."""
    try:
        schedule = cls(WARMUP_PROBE["base_lr"], WARMUP_PROBE["warmup_steps"])
        step, next_lr = getattr(schedule, "step", None), getattr(schedule, "next_lr", None)
        if not isinstance(step, tf.Variable) or not is_tf_function(next_lr):
            return None
        step.assign(tf.cast(WARMUP_PROBE["step"], step.dtype))
        rate = next_lr()
        return {"rates": [rate], "constant_elements": graph_evidence(next_lr)["constant_elements"],
                "raised": False}
    except Exception:  # noqa: BLE001 (a student's class: anything; the judge says what it means)
        return {"rates": [], "constant_elements": 0, "raised": True}


check_warmup_schedule = exercise_check("check_warmup_schedule", collect_warmup_schedule)


# --------------------------------------------------------------------------- descend

def collect_descend(fn, case, ctx):
    """Kernel half of ``check_descend``: ``descend(w, grads, lrs)`` applies ``w -= lr * grad``
    for each pair, every step made by a tf.function, and returns w; ``lrs`` are Python floats
    (a decaying schedule, as a training loop computes them). Idea graded: one tf.function,
    made once, takes the changing learning rate as a tensor, so the loop does not retrace (M41
    for a tf.function created inside the loop, M26 for a retrace per Python float), and every
    change of w is made by it (M21 for updates applied outside the graph beside it).

    w is a fresh float32 tf.Variable; every tf.function call made from Python during descend is
    recorded with its trace counts and w's value before and after it
    (:func:`recording_graph_calls`). The traces are counted on a second run, on another fresh
    variable, whose learning rates are the case's made new: each scaled by a factor
    1 + n * 2 ** -20 with n new at every run of this check, so Python floats that earlier calls
    (a check run before, the notebook's own) left in a trace cache cannot hide a retrace. The
    judge reads the values of the first run only.

    Returns:
        ``{"w", "returned", "graph_calls", "moves", "functions", "traces"}``: ``moves`` holds
        ``[w before, w after]`` of each graph call that changed w (first run); ``functions``
        (distinct tf.functions called) and ``traces`` are of the second run.
    """
    __tracebackhide__ = True
    w = tf.Variable(np.asarray(case["w"], dtype=np.float32))
    grads = [_float32(g) for g in case["grads"]]
    lrs = [float(lr) for lr in case["lrs"]]
    with recording_graph_calls(watch=w) as record:
        returned = _call(fn, w, grads, lrs, what=ctx.what)
    w_value = w.numpy()
    moves = [[entry.watched_before, entry.watched_after] for entry in record[:MAX_ENTRIES]
             if not np.array_equal(entry.watched_before, entry.watched_after)]
    factor = 1.0 + next(_FRESH) * 2.0 ** -20
    with recording_graph_calls() as probe:
        _call(fn, tf.Variable(np.asarray(case["w"], dtype=np.float32)), grads,
              [lr * factor for lr in lrs], what=ctx.what)
    return {"w": w_value, "returned": returned, "graph_calls": len(record), "moves": moves,
            "functions": len({id(entry.function) for entry in probe}),
            "traces": _new_traces(probe)}


#: A new number at every run of check_descend (its learning rates are made new with it).
_FRESH = itertools.count(1)


check_descend = exercise_check("check_descend", collect_descend)


# --------------------------------------------------------------------------- td_update

def collect_td_update(fn, case, ctx):
    """Kernel half of ``check_td_update``: ``td_update(w, s, r, s_next, done, gamma, lr)`` is
    a tf.function making one TD(0) step of a linear value function v(s) = w . s and returning
    the loss 0.5 * delta ** 2. Idea graded: the target is held fixed (tf.stop_gradient or
    tape.stop_recording), and tape.gradient computes the update (M27 when the gradient flows
    into the target).

    A fresh copy of the function (``tf.function(fn.python_function)``) runs every step of the
    case on a fresh float32 variable w, ``done`` a bool tensor, the rest float32 tensors,
    while ``tape.gradient`` calls are recorded (they happen while the copy traces). Then the
    Python body runs every step once more, eagerly, on another fresh variable, so that the
    values ``tape.gradient`` returned can be set beside the change the step made to the
    variable (M44 when the applied update is not the tape's result: a step written by hand
    beside an unused ``tape.gradient`` call).

    Returns:
        ``{"losses", "weights" (w after each step), "tape_calls", "eager_steps"}``;
        ``eager_steps``: per step of the eager run, ``{"change": w after - w before,
        "gradients": [each value tape.gradient returned of w's shape]}``.
    Raises:
        CheckFailed: M13 (code ``stop_gradient_all``) when tf.stop_gradient holds the whole TD
            error, not only the target, so tape.gradient gives None for w.
    """
    __tracebackhide__ = True
    _require_tf_function(fn, "td_update", "keep td_update a tf.function.")
    fresh = tf.function(functions.python_function(fn))
    w = tf.Variable(np.asarray(case["w"], dtype=np.float32))
    gamma, lr = _float32(case["gamma"]), _float32(case["lr"])
    losses, weights = [], []
    probe_w = tf.Variable(np.asarray(case["w"], dtype=np.float32))

    def no_gradient(error, args):
        """M13 (code ``stop_gradient_all``) when tape.gradient gave None for w and a rerun
        finds a tf.stop_gradient on the whole path from w to the loss; M12 as harness words
        it; None otherwise."""
        if not any(r is None for *_, result in record.calls for r in tf.nest.flatten(result)):
            return None
        found = explain_missing_gradient(lambda: functions.python_function(fn)(probe_w, *args))
        if found and found[0] == "M13":
            raise CheckFailed(TD_ALL_STOPPED[0].format(what=ctx.what), "M13", TD_ALL_STOPPED[1],
                              code="stop_gradient_all") from None
        return found if found and found[0] == "M12" else None

    with recording_gradients() as record:
        for step in case["steps"]:
            args = (_float32(step["s"]), _float32(step["r"]), _float32(step["s_next"]),
                    tf.constant(bool(step["done"])), gamma, lr)
            losses.append(_call(fresh, w, *args, what=ctx.what,
                                explain=lambda error, args=args: no_gradient(error, args)))
            weights.append(w.numpy())
    eager_w = tf.Variable(np.asarray(case["w"], dtype=np.float32))
    eager_steps = []
    for step in case["steps"]:
        args = (_float32(step["s"]), _float32(step["r"]), _float32(step["s_next"]),
                tf.constant(bool(step["done"])), gamma, lr)
        before = eager_w.numpy()
        with recording_gradients(shift=TAPE_SHIFT) as eager_record:  # results shifted
            _call(functions.python_function(fn), eager_w, *args, what=f"{ctx.what}, run eagerly")
        gradients = [r.numpy() for r in eager_record.results()[:MAX_ENTRIES]
                     if tuple(r.shape) == tuple(eager_w.shape)]
        eager_steps.append({"change": eager_w.numpy() - before, "gradients": gradients})
    return {"losses": losses, "weights": weights, "tape_calls": len(record.calls),
            "eager_steps": eager_steps}


check_td_update = exercise_check("check_td_update", collect_td_update)


# --------------------------------------------------------------------------- rms_normalize

def collect_rms_normalize(fn, case, ctx):
    """Kernel half of ``check_rms_normalize``: ``rms_normalize(x)`` is a tf.function returning
    x / sqrt(mean(x ** 2) + 1e-6) that logs the root mean square with ``tf.print`` on every
    call while the arithmetic is compiled by XLA. Idea graded: what XLA cannot compile
    (tf.print) stays outside the compiled part: a plain tf.function that prints and calls a
    ``jit_compile=True`` tf.function for the arithmetic (M18 while tf.print is inside a
    compiled function; M21 when XLA or the log is gone; M08 for a Python print, which runs
    while tracing only).

    A fresh copy of the function (its Python function, with its jit_compile setting) is called
    twice on the case's float32 tensor while the tf.functions called (from Python and from the
    graph being traced) are recorded with their jit_compile setting, and what the calls print
    is captured (XLA's own C++ log of a failed compilation with it, never shown).

    Returns:
        ``{"results", "jit" (the outer function is compiled), "jit_called" (some tf.function
        with jit_compile=True ran), "lines" (the printed lines, at most 20 of 200
        characters)}``.
    """
    __tracebackhide__ = True
    _require_tf_function(fn, "rms_normalize", "keep rms_normalize a tf.function.")
    x = _float32(case)
    jit = getattr(fn, "_jit_compile", None) is True

    def xla(error):  # M18, with this exercise's fix: XLA stays, the print moves out of it
        found = diagnose(error, ctx.what)
        if found and found[0] == "M18":
            raise CheckFailed(XLA_PRINT[0].format(what=ctx.what), "M18", XLA_PRINT[1],
                              code="xla_print") from None

    fresh = tf.function(functions.python_function(fn), jit_compile=True if jit else None)
    with capture_output() as printed, _recording_jit_calls() as jit_calls:
        results = [_call(fresh, x, what=ctx.what, explain=xla) for _ in range(2)]
    lines = [line[:200] for line in printed.lines()[:20]]
    return {"results": results, "jit": jit, "jit_called": any(jit_calls), "lines": lines}


check_rms_normalize = exercise_check("check_rms_normalize", collect_rms_normalize)


# --------------------------------------------------------------------------- hinge_total

#: What AutoGraph raises for the two rules hinge_total's draft breaks: (mistake, code, words
#: of the error, (message, fix) of the judge's findings).
AUTOGRAPH_RULES = (
    ("M36", "else_branch", ("must also be initialized in the else branch",
                            "must be defined before the loop"), ELSE_BRANCH),
    ("M37", "loop_dtype", ("does not match type int32", "dtype int32 before the loop",
                           "but dtype float32 after"), LOOP_DTYPE),
)


def graph_nodes(concrete) -> int:
    """How many nodes a concrete function's graph holds: its GraphDef's nodes and those of every
    function in its library (a Python loop unrolled while tracing grows it with the length)."""
    graph_def = concrete.graph.as_graph_def()
    return len(graph_def.node) + sum(len(function.node_def)
                                     for function in graph_def.library.function)


def collect_hinge_total(fn, case, ctx):
    """Kernel half of ``check_hinge_total``: ``hinge_total(scores)`` is a tf.function
    returning sum(max(0, 1 - s)) over a float32 vector of any length, from one graph whose size
    does not grow with the length. Idea graded: the loop (if any) runs in the graph, a
    tf.while_loop (or no loop: tensor ops over the whole vector); a Python ``range`` over the
    static length (``range(len(scores))`` or ``range(scores.shape[0])`` of a vector of known
    length)
    copies the body once per score while tracing (M57). Under AutoGraph a variable read after
    a tensor ``if`` is set on both branches (M36) and a loop variable keeps one dtype (M37);
    both found by the error AutoGraph raises.

    A fresh copy of the function with the signature ``[tf.TensorSpec([None], tf.float32)]``
    (one graph for every length) is called on each vector of the case and on a long one
    (:func:`~autograder.checks.judge.pitfalls.long_scores`, 600 scores: a loop unrolled to a
    fixed length misses some); then a fresh copy without a signature is traced for each
    vector's own, known length n (1 for an empty vector, whose graph is a few nodes smaller
    whatever the loop) and for 16 more (:func:`~autograder.checks.judge.pitfalls.grown_lengths`),
    and the nodes of both graphs are counted (:func:`graph_nodes`).

    Returns:
        ``{"results", "op_types", "long", "nodes"}``, ``nodes`` one ``[n, nodes for m, nodes
        for m + 16]`` per vector (m = max(n, 1)).
    """
    __tracebackhide__ = True
    _require_tf_function(fn, "hinge_total", "keep hinge_total a tf.function.")
    fresh = tf.function(functions.python_function(fn),
                        input_signature=[tf.TensorSpec([None], tf.float32)])

    def autograph(error):
        text = str(error)
        for mistake, code, words, (message, fix) in AUTOGRAPH_RULES:
            if any(word in text for word in words):
                raise CheckFailed(message.format(what=ctx.what, type=type(error).__name__),
                                  mistake, fix, code=code) from None
        if isinstance(error, TypeError) and "cannot be interpreted as an integer" in text:
            message, fix = STATIC_LENGTH
            raise CheckFailed(message.format(what=ctx.what), "M57", fix,
                              code="static_length") from None
        return None

    results = [_call(fresh, _float32(scores), what=ctx.what, explain=autograph)
               for scores in case]
    long = _call(fresh, tf.constant(long_scores()), what=f"{ctx.what} (on 600 scores)",
                 explain=autograph)
    ops = _call(lambda: all_op_types(functions.concrete_function(fresh)),
                what=f"{ctx.what}, traced for its graph")
    known = tf.function(functions.python_function(fn))
    nodes = []
    for scores in case[:MAX_ENTRIES]:
        n = int(np.asarray(scores, np.float32).size)
        counts = [_call(lambda m=m: graph_nodes(functions.concrete_function(known,
                      tf.TensorSpec([m], tf.float32))), what=f"{ctx.what}, traced for its graph",
                        explain=autograph) for m in grown_lengths(n)]
        nodes.append([n, *counts])
    return {"results": results, "op_types": ops, "long": long, "nodes": nodes}


check_hinge_total = exercise_check("check_hinge_total", collect_hinge_total)


# --------------------------------------------------------------------------- count_ops
# The functions of the visible cases, by name (the hidden cases carry their own as source).

def _digit_sum(n):
    # A loop with a condition in its body: both live in the graph's function library. (Not 04's
    # FizzBuzz: a visible case must not be another exercise's answer, and students get this file.)
    total = tf.constant(0)
    while n > 0:
        if n % 10 > 4:
            total += 2 * (n % 10)
        else:
            total += n % 10
        n //= 10
    return total


def _affine(x):
    return 2.0 * x + 1.0


#: name -> (Python function, input signature) of the visible cases of check_count_ops.
COUNT_FUNCTIONS = {
    "digit_sum": (_digit_sum, tf.TensorSpec([], tf.int32)),
    "affine": (_affine, tf.TensorSpec([None], tf.float32)),
}

#: dtypes a hidden case of check_count_ops may name for its input.
COUNT_DTYPES = {"float32": tf.float32, "int32": tf.int32}


def _count_function(case):
    """(Python function, input signature) of a case of check_count_ops: a name of
    :data:`COUNT_FUNCTIONS`, or a dict ``{"source", "name", "shape", "dtype"}`` whose function
    is built from its source text (:func:`compare.function_from_source`)."""
    if isinstance(case, str):
        return COUNT_FUNCTIONS[case]
    shape = [None if d is None else int(d) for d in case["shape"]]
    function = function_from_source(str(case["source"]), str(case["name"]), {"tf": tf})
    return function, tf.TensorSpec(shape, COUNT_DTYPES[str(case["dtype"])])


def collect_count_ops(fn, case, ctx):
    """Kernel half of ``check_count_ops``: ``count_ops(concrete)`` returns the number of ops
    of a concrete function, those inside loops and conditions included. Idea graded: the ops
    are the GraphDef's nodes plus the nodes of every library function (M28 when only the
    top-level graph is counted).

    A case names a function of :data:`COUNT_FUNCTIONS`, or (the hidden ones, functions the
    student has never seen) carries its source text; a fresh tf.function of it is traced for
    its signature.

    Returns:
        ``{"result", "graph_nodes", "library_nodes": [nodes of each library function]}``.
    """
    __tracebackhide__ = True
    python_function, spec = _count_function(case)
    concrete = tf.function(python_function).get_concrete_function(spec)
    result = _call(fn, concrete, what=ctx.what)
    graph_def = concrete.graph.as_graph_def()
    return {"result": result, "graph_nodes": len(graph_def.node),
            "library_nodes": [len(f.node_def) for f in graph_def.library.function]}


check_count_ops = exercise_check("check_count_ops", collect_count_ops)
