"""Checks of assignment 05, deep learning software: NumPy vs TensorFlow gradients, weights as
variables updated in place inside a ``tf.function``, optimizers, a numerically stable loss, and
``tf.custom_gradient``.

Each check is in two halves (see :mod:`autograder.checks.judge`): the kernel half here
(``collect_<name>``) calls the student's function on a case and observes what it returned and
how (which values ``tape.gradient`` produced, how often the optimizer stepped, whether a custom
gradient is attached); the grader half, in :mod:`autograder.checks.judge.software`, computes the
references from mathematics in NumPy and decides. Problems are made from a case's seeds and
sizes by the judge module's NumPy generators, so both halves build the same inputs.

Every exercise grades an idea, and an answer that reaches the right numbers without it fails
(M21):

=====================  ========================================================================
exercise               the idea, and the evidence the kernel half observes
=====================  ========================================================================
graph_backward_numpy   the backward pass by hand: no tape.gradient / tf.gradients call ran (counted
                       also below the class attributes: imperative_grad, _GradientsHelper)
graph_backward_tape    the gradients come from tape.gradient (its results, or for a tf.function,
                       graph outputs computed from them), in a call whose target is c (its
                       value, from a run with tf.functions eager)
two_layer_numpy        backpropagation by hand in NumPy (a buggy backward pass found and
                       fixed): no automatic differentiation ran
step_report            predict, then measure what a step does: the step it was given ran
                       ``calls`` times (a counting wrapper), on steps it has never seen; the
                       predictions about broken_sgd_step are read from the notebook
sgd_step               tape.gradient computed gradients for w1 and w2 when the step's code is
                       traced, and the graph's in-place updates of w1 and w2 use them; run
                       eagerly, a call of the loss returned them and each weight moved by -lr
                       times them
train_with_optimizer   the given optimizer stepped once per step (optimizer.iterations), with
                       gradients that tape.gradient produced: run eagerly, what apply_gradients
                       got is what a tape.gradient call of the loss returned
cross_entropy          a loss from the logits, finite and exact for any float32 logits: value and
                       the tape's gradient on logits hundreds apart (no evidence beyond them:
                       formed probabilities give inf, a tf.where over -log(p) a NaN gradient,
                       clipping a capped value)
log1pexp               tf.custom_gradient attached the backward (its IdentityN op is traced),
                       and the backward computes its own formula: no automatic differentiation
                       ran inside it (counted, minus the check's own call) and no built-in
                       gradient op (SoftplusGrad) is in the traced gradient
graph_backward_numpy,  (also) the gradients are exactly the chain rule's: finite differences
two_layer_numpy        only approximate them, and cross a ReLU kink (judged from the values)
=====================  ========================================================================

The cell that shows what ``broken_sgd_step`` does starts with :func:`show_prediction` (03's
reveal): it refuses until both predictions are set, then prints them.

Every check has the signature ``check_<name>(fn, cases=None, hidden=False)`` (``check_step_report``
also takes the two predictions after ``fn``): ``fn`` is the student's function, ``cases``
replaces the default (visible) inputs, ``hidden=True`` names cases by number only. Failing
raises :class:`~autograder.checks.compare.CheckFailed`; passing prints one line.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import tensorflow as tf

from . import kernel_entry  # noqa: F401  (the grader's way into a grading kernel)
from .compare import fail
from .graphs import show_prediction
from .harness import (TAPE_SHIFT, call, counting_calls, exercise_check, explain_missing_gradient,
                      is_tf_function, recording_gradients)
from .judge.readers import matches
from .judge.software import (NOT_TF_FUNCTION, RUN_MODES, cross_entropy_inputs, graph_inputs,
                             log1pexp_inputs, scaled_problem, step_case, two_layer_inputs,
                             two_layer_problem)

__all__ = [
    "check_graph_backward_numpy",
    "check_graph_backward_tape",
    "check_two_layer_numpy",
    "check_step_report",
    "check_sgd_step",
    "check_train_with_optimizer",
    "check_cross_entropy",
    "check_log1pexp",
    "two_layer_problem",
    "recording_autodiff",
    "show_prediction",
]

#: Ops that write a resource variable in place (``assign``, ``assign_sub``, ``assign_add``).
ASSIGN_OPS = ("AssignVariableOp", "AssignSubVariableOp", "AssignAddVariableOp")


# ----------------------------------------------------------------------------- evidence
class AutodiffRecord:
    """What automatic differentiation ran in a block (:func:`recording_autodiff`): ``tape`` is
    the :class:`~autograder.checks.harness.GradientRecord` of ``GradientTape.gradient``,
    ``jacobian`` and ``batch_jacobian``; ``other`` counts ``tf.gradients`` and
    ``ForwardAccumulator.jvp`` calls."""

    def __init__(self, tape):
        self.tape = tape
        self.other = 0

    @property
    def count(self) -> int:
        return len(self.tape.calls) + self.other


def _low_level_autodiff() -> list:
    """The module attributes through which every automatic differentiation passes whatever
    reference to it a student kept (``_g = tf.GradientTape.gradient`` saved at cell time skips
    the patched class attribute, not these): the tape's backward pass
    (``imperative_grad.imperative_grad``, which gradient and jacobian call), the graph's
    (``gradients_util._GradientsHelper``, which tf.gradients calls) and the creation of a
    forward accumulator (``pywrap_tfe.TFE_Py_ForwardAccumulatorNew``). Each is looked up on its
    module at call time, so wrapping it there counts the call."""
    found = []
    try:
        from tensorflow.python.eager import imperative_grad
        found.append((imperative_grad, "imperative_grad"))
    except ImportError:  # another TensorFlow layout: the class attributes still count
        pass
    try:
        from tensorflow.python.ops import gradients_util
        found.append((gradients_util, "_GradientsHelper"))
    except ImportError:
        pass
    try:
        from tensorflow.python import pywrap_tfe
        found.append((pywrap_tfe, "TFE_Py_ForwardAccumulatorNew"))
    except ImportError:
        pass
    return [(owner, name) for owner, name in found if hasattr(owner, name)]


_LOW_LEVEL = _low_level_autodiff()


@contextlib.contextmanager
def recording_autodiff():
    """Record every automatic differentiation that runs in the block: tape.gradient (through
    :func:`~autograder.checks.harness.recording_gradients`), tf.gradients and
    tf.autodiff.ForwardAccumulator.jvp, and below them the entry points every differentiation
    passes (:func:`_low_level_autodiff`), which a reference to a method saved before the check
    ran still reaches. Kernel-side evidence that a NumPy exercise's backward pass was written by
    hand."""
    patched = [(tf, "gradients"), (tf.compat.v1, "gradients"),
               (tf.autodiff.ForwardAccumulator, "jvp")] + _LOW_LEVEL
    originals = [getattr(owner, name) for owner, name in patched]
    with recording_gradients() as tape:
        record = AutodiffRecord(tape)

        def counting(original):
            def counted(*args, **kwargs):
                record.other += 1
                return original(*args, **kwargs)
            return counted

        for (owner, name), original in zip(patched, originals):
            setattr(owner, name, counting(original))
        try:
            yield record
        finally:
            for (owner, name), original in zip(patched, originals):
                setattr(owner, name, original)


def _descends(tensor, names: set) -> bool:
    """Whether the symbolic ``tensor`` is, or is computed from, a tensor named in ``names``
    (within its graph)."""
    if tensor.name in names:
        return True
    seen, stack = set(), [tensor.op]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        for t in op.inputs:
            if t.name in names:
                return True
            stack.append(t.op)
    return False


def _symbolic(value) -> bool:
    try:
        return isinstance(value, tf.Tensor) and value.graph is not None
    except AttributeError:  # an eager tensor has no graph
        return False


def _from_tape(record, value) -> bool:
    """Whether ``value`` is a value tape.gradient produced in ``record``: the same tensor, a copy
    of equal values, or (symbolic, in a traced graph) a tensor computed from one."""
    if record.produced(value):
        return True
    if not _symbolic(value):
        return False
    names = {r.name for r in record.results() if _symbolic(r) and r.graph is value.graph}
    return bool(names) and _descends(value, names)


def _traced(fn, args, what):
    """Trace the Python code of the tf.function ``fn`` afresh (a trace the student's function
    may have cached would record nothing) on ``args``, recording tape.gradient calls; the
    code's printing is swallowed. Returns ``(record, concrete_function)``."""
    python = getattr(fn, "python_function", None)
    fresh = tf.function(python) if python is not None else fn
    with recording_gradients() as record, contextlib.redirect_stdout(io.StringIO()):
        concrete = call(fresh.get_concrete_function, *args, what=what)
    return record, concrete


def _unpack(result, n: int, ctx, names: str):
    """``result`` as a tuple of ``n`` values; fails (code ``count``) when it is not one."""
    __tracebackhide__ = True
    if not isinstance(result, (tuple, list)) or len(result) != n:
        got = f"a {type(result).__name__}" if not isinstance(result, (tuple, list)) \
            else f"{len(result)} values"
        fail(f"{ctx.what} should return {n} values ({names}), got {got}.", code="count")
    return tuple(result)


#: At most this many tape calls, and entries of a target, are reported.
MAX_CALLS, MAX_TARGET_SIZE = 16, 4096


def _value(tensor):
    """An eager tensor's (or variable's) value as a NumPy array; None for what has none here (a
    symbolic tensor, None, a target too big to report)."""
    try:
        if tensor is None or int(np.prod(tensor.shape)) > MAX_TARGET_SIZE:
            return None
        return np.asarray(tensor.numpy())
    except Exception:  # a symbolic tensor, an object of the student's
        return None


def _call_values(record, sources) -> list:
    """The tape calls of ``record`` as plain data, the first :data:`MAX_CALLS`: for each, the
    value of its target (``tape.gradient``'s first argument, when one tensor) and what it
    returned for each of ``sources`` (the same objects; None where it was not a source), or with
    ``sources`` None everything it returned, in order."""
    calls = []
    for _, target, call_sources, result in record.calls[:MAX_CALLS]:
        flat_t, flat_s, flat_r = (tf.nest.flatten(target), tf.nest.flatten(call_sources),
                                  tf.nest.flatten(result))
        if sources is None:  # every result, in order
            by_source = [_value(r) for r in flat_r[:MAX_CALLS]]
        else:
            by_source = [None] * len(sources)
        if sources is not None and len(flat_s) == len(flat_r):
            for source, gradient in zip(flat_s, flat_r):
                for i, wanted in enumerate(sources):
                    if source is wanted and by_source[i] is None:
                        by_source[i] = _value(gradient)
        calls.append({"target": _value(flat_t[0]) if len(flat_t) == 1 else None,
                      "results": by_source})
    return calls


class _Count:
    calls = 0


@contextlib.contextmanager
def _other_spellings():
    """Count the calls of the autodiff spellings that are not a GradientTape's: tf.gradients
    (in a tf.function) and ForwardAccumulator.jvp (each looked up at call time, so patching
    the attribute counts them). Evidence for M46: right gradients from another spelling."""
    count = _Count()

    def counted():
        count.calls += 1

    spellings = [(tf, "gradients"), (tf.compat.v1, "gradients"), (tf.autodiff.ForwardAccumulator, "jvp")]
    with counting_calls(spellings, counted):
        yield count


@contextlib.contextmanager
def _eagerly():
    """tf.functions run their Python code eagerly in the block (their tape calls then have
    values), printing swallowed."""
    was = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        tf.config.run_functions_eagerly(was)


# ------------------------------------------------------------------ 1. the graph in NumPy
def collect_graph_backward_numpy(fn, case, ctx):
    """Kernel half of ``check_graph_backward_numpy``: ``fn(x, y, z) -> (c, grad_x, grad_y,
    grad_z)``, the forward and backward pass of ``a = x * y; b = a + z; c = sum(b)`` by hand in
    NumPy, on float64 arrays of one shape ``(N, D)`` (a case: ``{"seed", "shape"}`` or three
    arrays).

    Returns:
        ``{"c", "grad_x", "grad_y", "grad_z": as returned, "autodiff_calls": how many
        tape.gradient / tf.gradients calls ran}``; the judge expects ``c = sum(x * y + z)``,
        ``grad_x = y``, ``grad_y = x``, ``grad_z = ones_like(z)`` and no automatic
        differentiation (M21).
    """
    __tracebackhide__ = True
    x, y, z = graph_inputs(case)
    with recording_autodiff() as autodiff:
        result = call(fn, x.copy(), y.copy(), z.copy(), what=ctx.what)
    c, gx, gy, gz = _unpack(result, 4, ctx, "c, grad_x, grad_y, grad_z")
    return {"c": c, "grad_x": gx, "grad_y": gy, "grad_z": gz, "autodiff_calls": autodiff.count}


check_graph_backward_numpy = exercise_check("check_graph_backward_numpy",
                                            collect_graph_backward_numpy)


# --------------------------------------------------------------- 2. the same graph on a tape
def collect_graph_backward_tape(fn, case, ctx):
    """Kernel half of ``check_graph_backward_tape``: ``fn(x, y, z) -> (c, grad_x, grad_y,
    grad_z)`` computed with ``tf.GradientTape`` on float32 ``tf.constant`` inputs of shape
    ``(N, D)``.

    Returns:
        ``{"c", "grad_x", "grad_y", "grad_z", "from_tape": [three bools], "tape_calls",
        "other_spellings", "stop_gradient_calls"}``: whether tape.gradient produced each
        gradient (for a tf.function, whether its traced outputs are computed from
        tape.gradient's results; eagerly, whether it also moved with the tape's results when a
        second run handed them back shifted by TAPE_SHIFT), how many calls of tf.gradients or
        ForwardAccumulator.jvp ran (M46), and how many of tf.stop_gradient (a target whose
        value is c's and whose gradient is a formula).
    The notebook's draft (``graph_backward_tape_draft``) is exercise 1's forward pass on a tape
    that watches nothing, summed with ``tf.constant(np.sum(b))``: every gradient is ``None``,
    also for variables, which the re-trace names M14; with the sum fixed, ``None`` for
    constants only (M01); with only the watch added, M14 again. (``np.sum`` alone makes c a
    ``numpy.float32``, and ``tape.gradient`` raises AttributeError, which :func:`call` names
    M14.)

    Raises:
        CheckFailed: M01 (constants never watched: gradients ``None``, but a call with
            ``tf.Variable`` inputs works); ``None`` even for variables, the cause found by
            re-tracing: M05 (``c`` computed outside the tape's ``with`` block), M12, M13, M14
            (NumPy inside the tape, e.g. ``np.sum``: None, or the AttributeError of a NumPy
            target).
    """
    __tracebackhide__ = True
    what = ctx.what
    arrays = graph_inputs(case, np.float32)
    x, y, z = (tf.constant(a) for a in arrays)
    names = "c, grad_x, grad_y, grad_z"
    stopped = [0]

    def stopping():
        stopped[0] += 1

    with recording_gradients() as record, _other_spellings() as others, \
            counting_calls([(tf, "stop_gradient")], stopping):
        c, gx, gy, gz = _unpack(call(fn, x, y, z, what=what), 4, ctx, names)
    if gx is None or gy is None or gz is None:
        retry = _unpack(call(fn, *[tf.Variable(a) for a in arrays], what=what), 4, ctx,
                        names)[1:]
        if all(g is not None for g in retry):
            fail(f"{what}: a gradient is None: x, y and z are tf.constant tensors, which the "
                 f"tape does not watch (with tf.Variable inputs your function works).",
                 mistake="M01", fix="a tape follows constants only when told to: watch x, y and z "
                                    "(read GradientTape.watch) at the start of the tape's block.")
        found = explain_missing_gradient(
            lambda: fn(*[tf.Variable(a) for a in arrays]), "the inputs x, y, z", "c") or (
            "M05", "The tape recorded nothing that links c to the inputs.",
            "compute a, b and c inside the `with tf.GradientTape() as tape:` block, with "
            "TensorFlow ops (not NumPy), and call tape.gradient after it.")
        fail(f"{what}: a gradient is None, even for tf.Variable inputs. {found[1]}",
             mistake=found[0], fix=found[2])
    if is_tf_function(fn):
        traced, concrete = _traced(fn, (x, y, z), what)
        outputs = concrete.structured_outputs
        outputs = list(outputs) if isinstance(outputs, (tuple, list)) else []
        from_tape = ([_from_tape(traced, t) for t in outputs[1:4]] if len(outputs) == 4
                     else [False] * 3)
        # The same code run eagerly, so that its tape calls have values (not for tf.gradients,
        # which has no eager form: its graph outputs are no tape's, M46).
        if not others.calls:
            with _eagerly(), recording_gradients() as record:
                call(fn, *(tf.constant(a) for a in arrays), what=what)
    else:
        from_tape = [record.produced(g) for g in (gx, gy, gz)]
        if any(from_tape):
            # Once more, every tape result handed back shifted: a gradient returned from the
            # tape's results moves with them; a formula equal to them (y, x, ones beside an
            # unused tape.gradient call) stays put, and is no tape's.
            with recording_gradients(shift=TAPE_SHIFT):
                shifted = _unpack(call(fn, *(tf.constant(a) for a in arrays), what=what), 4,
                                  ctx, names)[1:]
            from_tape = [tape and matches(np.asarray(s), np.asarray(g, np.float64) + TAPE_SHIFT,
                                          rtol=1e-5, atol=1e-5)
                         for tape, g, s in zip(from_tape, (gx, gy, gz), shifted)]
    return {"c": c, "grad_x": gx, "grad_y": gy, "grad_z": gz, "from_tape": from_tape,
            "tape_calls": _call_values(record, None), "other_spellings": others.calls,
            "stop_gradient_calls": stopped[0]}


check_graph_backward_tape = exercise_check("check_graph_backward_tape",
                                           collect_graph_backward_tape)


# ------------------------------------------------------------- 3. two-layer network by hand
def collect_two_layer_numpy(fn, case, ctx):
    """Kernel half of ``check_two_layer_numpy``: ``fn(x, y, w1, w2) -> (loss, grad_w1,
    grad_w2)``, the forward and backward pass of ``h = relu(x @ w1); y_pred = h @ w2;
    loss = mean(sum((y_pred - y)^2, axis=1))`` by hand in NumPy, on float64 arrays ``x, y
    (N, D)``, ``w1 (D, H)``, ``w2 (H, D)`` (a case: ``{"seed", "n", "d", "h"}``, see
    :func:`two_layer_problem`, or four arrays).

    Returns:
        ``{"loss", "grad_w1", "grad_w2": as returned, "autodiff_calls"}``; the judge compares
        with the derivative in float64 and names the usual slips (the mean's ``1/N`` or the
        square's ``2`` forgotten, the ReLU mask missing, transposes that change shapes), and
        fails an answer whose gradients automatic differentiation computed (M21).
    """
    __tracebackhide__ = True
    arrays = two_layer_inputs(case)
    with recording_autodiff() as autodiff:
        result = call(fn, *(a.copy() for a in arrays), what=ctx.what)
    loss, g1, g2 = _unpack(result, 3, ctx, "loss, grad_w1, grad_w2")
    return {"loss": loss, "grad_w1": g1, "grad_w2": g2, "autodiff_calls": autodiff.count}


check_two_layer_numpy = exercise_check("check_two_layer_numpy", collect_two_layer_numpy)


# ------------------------------------------- 4a. predict, then measure: what a step does
def _two_layer_loss(x, y, w1, w2):
    return tf.reduce_mean(tf.reduce_sum((tf.nn.relu(x @ w1) @ w2 - y) ** 2, axis=1))


def _step_of(kind: str):
    """A new tf.function ``step(x, y, w1, w2, lr) -> loss`` of the kind ``kind``
    (:data:`autograder.checks.judge.software.STEP_KINDS`): ``"rebinding"`` is the notebook's
    broken_sgd_step."""
    @tf.function
    def step(x, y, w1, w2, lr):
        with tf.GradientTape() as tape:
            loss = _two_layer_loss(x, y, w1, w2)
        grad_w1, grad_w2 = tape.gradient(loss, [w1, w2])
        if kind == "rebinding":
            w1 = w1 - lr * grad_w1
            w2 = w2 - lr * grad_w2
        else:  # written unlike the exercise's answer, which the student bundle must not hold
            if kind == "w2_only":
                w1 = w1 - lr * grad_w1
            in_place = [(w2, grad_w2)] if kind == "w2_only" else [(w1, grad_w1), (w2, grad_w2)]
            for weights, gradient in in_place:
                weights.assign_sub(lr * gradient)
        if kind == "late_loss":
            return _two_layer_loss(x, y, w1, w2)
        return loss
    return step


def _plain_prediction(value):
    """A prediction as it may travel: a Python number or bool (NumPy scalars and scalar tensors
    turned into one), else None."""
    if hasattr(value, "numpy") and getattr(value, "shape", None) == ():
        value = value.numpy()
    if isinstance(value, np.generic):
        value = value.item()
    return value if isinstance(value, (bool, int, float)) else None


def collect_step_report(fn, predicted_loss_drop, predicted_weights_change, case, ctx):
    """Kernel half of ``check_step_report``: ``fn(step, x, y, w1, w2, lr, calls) -> (losses,
    changed)``, a report of what ``calls`` calls of ``step`` do: the losses they returned and
    whether the ``tf.Variable`` weights hold other values afterwards. A case is ``{"step": kind,
    "seed", "n", "d", "h", "lr", "calls"}``: ``step`` is a new tf.function of that kind
    (:func:`_step_of`; ``"rebinding"`` is broken_sgd_step), wrapped to count its calls.
    ``predicted_loss_drop`` and ``predicted_weights_change`` are the notebook's predictions of
    what five calls of broken_sgd_step do.

    Returns:
        ``{"n_losses", "losses": the first calls + 1, "changed": as returned, "step_calls": how
        many times the step ran, "predicted_loss_drop", "predicted_weights_change": the
        predictions (None when not a number or bool)}``.
    """
    __tracebackhide__ = True
    kind, x, y, w1_0, w2_0, lr, calls = step_case(case)
    inner, ran = _step_of(kind), []

    def step(*args, **kwargs):
        ran.append(True)
        return inner(*args, **kwargs)

    w1, w2 = tf.Variable(w1_0), tf.Variable(w2_0)
    result = call(fn, step, tf.constant(x), tf.constant(y), w1, w2, tf.constant(lr, tf.float32),
                  calls, what=ctx.what)
    losses, changed = _unpack(result, 2, ctx, "losses, changed")
    try:
        kept = list(losses[: calls + 1])
        count = len(losses)
    except Exception:  # not a sequence
        fail(f"{ctx.what} should return a list of losses and a bool, got "
             f"{type(losses).__name__} for the losses.", code="type")
    return {"n_losses": count, "losses": kept, "changed": _plain_prediction(changed),
            "step_calls": len(ran),
            "predicted_loss_drop": _plain_prediction(predicted_loss_drop),
            "predicted_weights_change": _plain_prediction(predicted_weights_change)}


check_step_report = exercise_check("check_step_report", collect_step_report)


# ------------------------------------------------------ 4. one SGD step with assign_sub
def _gradients_for(record, variables) -> bool:
    """Whether tape.gradient calls in ``record`` gave a gradient (not None) for every one of
    ``variables`` (the same objects)."""
    found = set()
    for _, _, sources, result in record.calls:
        for source, gradient in zip(tf.nest.flatten(sources), tf.nest.flatten(result)):
            if gradient is not None:
                found |= {i for i, v in enumerate(variables) if source is v}
    return found == set(range(len(variables)))


def _updates_from_gradients(record, concrete, n_variables: int):
    """Whether every in-place update (``ASSIGN_OPS``) that ``concrete``'s graph makes to its
    first ``n_variables`` resource arguments takes a value computed from tape.gradient's
    results; None when the graph cannot tell (no such update in it, or the gradients were taken
    in another graph, e.g. a nested tf.function)."""
    graph = concrete.graph
    results = [r for r in record.results() if _symbolic(r)]
    if not results or any(r.graph is not graph for r in results):
        return None
    weights = {t.name for t in [t for t in graph.inputs if t.dtype == tf.resource][:n_variables]}
    updates = [op for op in graph.get_operations()
               if op.type in ASSIGN_OPS and op.inputs[0].name in weights]
    if not updates:
        return None
    names = {r.name for r in results}
    return all(_descends(op.inputs[1], names) for op in updates)


def collect_sgd_step(fn, case, ctx):
    """Kernel half of ``check_sgd_step``: the ``tf.function`` ``fn(x, y, w1, w2, lr) -> loss``,
    one gradient-descent step of the two-layer network that updates the ``tf.Variable`` weights
    in place. A case is ``(seed, N, D, H, lr, steps)``: ``fn`` is called ``steps`` times in a
    row on float32 tensors ``x, y (N, D)``, variables ``w1 (D, H)``, ``w2 (H, D)`` and ``lr`` as
    a float32 scalar tensor (a Python float would make a tf.function trace again for every new
    value).

    Returns:
        ``{"losses": returned by each call, "w1", "w2": the weights after each call,
        "tape_gradients": bool, "updates_from_gradients": bool or None}``: the evidence comes
        from a fresh trace of ``fn``'s Python code: whether tape.gradient gave gradients for w1
        and w2, and whether the graph's updates of w1 and w2 are computed from them. The judge
        checks each call's loss (before the update) and step ``-lr * gradient``.
    Raises:
        CheckFailed: ``fn`` is not a tf.function; M07 (a variable created inside it), M16, ...
            (:func:`harness.call`).
    """
    __tracebackhide__ = True
    if not is_tf_function(fn):
        fail(NOT_TF_FUNCTION[0].format(what=ctx.what), fix=NOT_TF_FUNCTION[1],
             code="not_tf_function")
    seed, n, d, h, lr, steps = case
    x, y, w1_0, w2_0 = scaled_problem(seed, n, d, h)
    xt, yt, rate = tf.constant(x), tf.constant(y), tf.constant(lr, tf.float32)
    w1, w2 = tf.Variable(w1_0), tf.Variable(w2_0)
    losses, after1, after2 = [], [], []
    for step in range(int(steps)):
        what = f"{ctx.exercise} ({ctx.label}, call {step + 1})"
        losses.append(call(fn, xt, yt, w1, w2, rate, what=what))
        after1.append(w1.numpy().copy())
        after2.append(w2.numpy().copy())
    probes = (tf.Variable(w1_0), tf.Variable(w2_0))
    record, concrete = _traced(fn, (xt, yt, *probes, rate), ctx.what)
    # One step of the same code run eagerly from the initial weights, every tape result handed
    # back shifted by TAPE_SHIFT: which loss the tape was asked about, what it returned for w1
    # and w2, and how far each weight moved (an update worked out beside the tape does not move
    # with its results).
    eager = (tf.Variable(w1_0), tf.Variable(w2_0))
    with _eagerly(), recording_gradients(shift=TAPE_SHIFT) as eager_record:
        call(fn, xt, yt, *eager, rate, what=ctx.what)
    return {"losses": losses, "w1": after1, "w2": after2,
            "tape_gradients": _gradients_for(record, probes),
            "updates_from_gradients": _updates_from_gradients(record, concrete, 2),
            "eager_calls": _call_values(eager_record, eager),
            "eager_w1": eager[0].numpy(), "eager_w2": eager[1].numpy()}


check_sgd_step = exercise_check("check_sgd_step", collect_sgd_step)


# -------------------------------------------------- 5. training with a Keras optimizer
def _shared_step(error, what):
    """M07 as train_with_optimizer meets it: one tf.function shared by several optimizers."""
    if isinstance(error, ValueError) and ("singleton" in str(error)
                                          or "non-first call" in str(error)):
        return ("M07", f"{what}: creating the optimizer's variables failed: one tf.function "
                "shared by several optimizers creates their slot variables on a later call.",
                "an optimizer creates its slot variables on its first apply: define the "
                "tf.function step inside train_with_optimizer (a new tf.function per call), or "
                "build the optimizer for both weights first (read the optimizer's build).")


def _recording_applied(optimizer) -> list:
    """Wrap ``optimizer.apply`` (which ``apply_gradients`` calls) on this optimizer object to
    record the gradients it is given; returns the list they are appended to."""
    given, original = [], optimizer.apply

    def apply(grads, trainable_variables=None, *args, **kwargs):
        grads = list(grads)
        given.append(grads)
        return original(grads, trainable_variables, *args, **kwargs)

    optimizer.apply = apply
    return given


def collect_train_with_optimizer(fn, case, ctx):
    """Kernel half of ``check_train_with_optimizer``: ``fn(optimizer, x, y, w1, w2, steps) ->
    losses``, ``steps`` updates of the two-layer network's ``tf.Variable`` weights with a Keras
    optimizer, returning the loss before each update. A case is ``(optimizer name, kwargs,
    seed, N, D, H, steps)``; the optimizer is new per case.

    Returns:
        ``{"n_losses", "losses": the first steps + 1 of them, "w1", "w2": after the call,
        "iterations": the optimizer's, "grads_from_tape": whether every gradient given to the
        optimizer came from tape.gradient (None: it was given none)}``.
    Raises:
        CheckFailed: when the optimizer gets no gradients, the cause found by re-running one
            step as a graph (M05 loss outside the tape, M12, M13, M14); M07 (the optimizer's slot
            variables created on a later call of one shared tf.function).
    """
    __tracebackhide__ = True
    name, kwargs, seed, n, d, h, steps = case
    x, y, w1_0, w2_0 = scaled_problem(seed, n, d, h)
    w1, w2 = tf.Variable(w1_0), tf.Variable(w2_0)
    optimizer = getattr(tf.keras.optimizers, name)(**kwargs)
    given = _recording_applied(optimizer)

    def fresh_run():
        return fn(getattr(tf.keras.optimizers, name)(**kwargs), tf.constant(x), tf.constant(y),
                  tf.Variable(w1_0), tf.Variable(w2_0), 1)

    with recording_gradients() as record:
        losses = call(fn, optimizer, tf.constant(x), tf.constant(y), w1, w2, steps,
                      what=ctx.what, rerun=fresh_run,
                      explain=lambda error: _shared_step(error, ctx.what))
    if losses is None or not hasattr(losses, "__len__"):
        fail(f"{ctx.what} should return the list of losses, got {type(losses).__name__}.",
             code="type")
    grads = [g for applied in given for g in applied if g is not None]
    # One step of the same code run eagerly, with a new optimizer and weights, every tape result
    # handed back shifted by TAPE_SHIFT: which loss the tape was asked about, what it returned
    # for w1 and w2, what apply_gradients was given (gradients worked out beside the tape are
    # not what it returned).
    eager_optimizer = getattr(tf.keras.optimizers, name)(**kwargs)
    eager_given = _recording_applied(eager_optimizer)
    eager = (tf.Variable(w1_0), tf.Variable(w2_0))
    with _eagerly(), recording_gradients(shift=TAPE_SHIFT) as eager_record:
        call(fn, eager_optimizer, tf.constant(x), tf.constant(y), *eager, 1, what=ctx.what,
             explain=lambda error: _shared_step(error, ctx.what))
    applied = [[_value(g) for g in grads_given[:2]] for grads_given in eager_given[:MAX_CALLS]]
    return {"n_losses": len(losses), "losses": list(losses)[:int(steps) + 1],
            "w1": w1, "w2": w2, "iterations": int(optimizer.iterations.numpy()),
            "grads_from_tape": all(_from_tape(record, g) for g in grads) if grads else None,
            "eager_calls": _call_values(eager_record, eager), "eager_applied": applied}


check_train_with_optimizer = exercise_check("check_train_with_optimizer",
                                            collect_train_with_optimizer)


# ------------------------------------------- 6. numerics: a loss that goes NaN, found and fixed
def _value_and_gradient(fn, x, *rest):
    """``(fn(x, *rest), d sum(fn(...) * 1) / dx)``: the student's value and the gradient a tape
    gives for ``x`` (watched)."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = fn(x, *rest)
    return out, tape.gradient(out, x)


def _three_runs(run, args, ctx, names: str) -> list:
    """``run(*args)`` eagerly, in a tf.function, and its second call (:data:`RUN_MODES`): the
    pairs it returned."""
    graph_version = tf.function(run)
    runs = []
    for mode, version in zip(RUN_MODES, (run, graph_version, graph_version)):
        runs.append(list(_unpack(call(version, *args, what=f"{ctx.what} {mode}"), 2, ctx, names)))
    return runs


def collect_cross_entropy(fn, case, ctx):
    """Kernel half of ``check_cross_entropy``: ``fn(logits, labels) -> loss``, the mean
    cross-entropy of integer ``labels`` (int32, (N,)) under ``softmax(logits)`` (float32,
    (N, C)), stable for any logits. A case is ``(logits, labels)`` or ``{"seed", "n", "c",
    "scale"}`` (:func:`~autograder.checks.judge.software.cross_entropy_inputs`).

    Returns:
        ``{"runs": three [loss, gradient] pairs}`` (eagerly, in a tf.function, its second call):
        the gradient is what tape.gradient returns for the logits.
    Raises:
        CheckFailed: the tape gives no gradient (code ``no_gradient``, with the cause found by
            re-tracing: M12, M13, M14).
    """
    __tracebackhide__ = True
    logits, labels = cross_entropy_inputs(case)
    x, y = tf.constant(logits), tf.constant(labels)

    def run(x, y):
        return _value_and_gradient(fn, x, y)

    runs = _three_runs(run, (x, y), ctx, "loss, gradient")
    if runs[0][1] is None:
        found = explain_missing_gradient(lambda: _value_and_gradient(fn, tf.constant(logits), y),
                                         "the logits", "the loss")
        if found is not None:
            fail(f"{ctx.what}: the tape gives no gradient for the logits. {found[1]}",
                 mistake=found[0], fix=found[2], code="no_gradient")
        fail(f"{ctx.what}: the tape gives no gradient for the logits.", mistake="M14",
             fix="compute the loss with TensorFlow ops on the logits (no NumPy, no .numpy()).",
             code="no_gradient")
    return {"runs": runs}


check_cross_entropy = exercise_check("check_cross_entropy", collect_cross_entropy)


# ------------------------------------ 7. a custom gradient that computes its own formula
def _uses_custom_gradient(fn, x) -> bool:
    """Whether tracing ``fn`` puts the ``IdentityN`` op through which ``tf.custom_gradient``
    attaches its gradient (attribute ``_gradient_op_type`` = ``CustomGradient-...``) into the
    graph."""
    graph = tf.function(fn).get_concrete_function(tf.TensorSpec(x.shape, tf.float32)).graph
    for op in graph.get_operations():
        if op.type == "IdentityN":
            try:
                if op.get_attr("_gradient_op_type").startswith(b"CustomGradient"):
                    return True
            except ValueError:  # an IdentityN of another kind
                continue
    return False


@tf.custom_gradient
def _calibration(x):
    """A custom gradient of the check's own, whose backward is a formula: what the check's own
    gradient call costs in recorded automatic differentiations."""
    return tf.identity(x), lambda upstream: upstream * 1.0


def _autodiff_count(fn, x, w) -> int:
    """How many automatic differentiations (:func:`recording_autodiff`) one eager gradient of
    ``sum(fn(x) * w)`` runs."""
    with recording_autodiff() as autodiff:
        _value_and_gradient(lambda x, w: tf.reduce_sum(fn(x) * w), x, w)
    return autodiff.count


#: TensorFlow's own gradient ops of softplus and of the sigmoid: a backward that calls them
#: (tf.raw_ops.SoftplusGrad, or the registered gradient function) computes no formula of its own.
BUILTIN_GRADIENT_OPS = ("SoftplusGrad", "SigmoidGrad")


def collect_log1pexp(fn, case, ctx):
    """Kernel half of ``check_log1pexp``: ``fn(x) -> log(1 + e^x)`` defined with
    ``@tf.custom_gradient``, value and backward stable for any float32 ``x``. For a case
    ``(x, upstream)`` (or ``{"seed", "n", "scale"}``) the loss ``sum(fn(x) * upstream)`` has the
    upstream gradient ``upstream``; value and gradient are computed eagerly and in a
    ``tf.function`` called twice.

    Returns:
        ``{"runs": three [out, grad] pairs, "custom_gradient": bool, "backward_autodiff": how
        many automatic differentiations the backward ran (an eager gradient's count minus the
        check's own, measured on :func:`_calibration`), "builtin_gradient_op": whether the
        traced gradient holds one of :data:`BUILTIN_GRADIENT_OPS`}``.
    """
    __tracebackhide__ = True
    x_np, w_np = log1pexp_inputs(case)
    x, w = tf.constant(x_np), tf.constant(w_np)

    def value_and_grad(x, w):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = fn(x)
            loss = tf.reduce_sum(out * w)
        return out, tape.gradient(loss, x)

    runs = _three_runs(value_and_grad, (x, w), ctx, "out, grad")
    custom = call(_uses_custom_gradient, fn, x, what=ctx.what)
    own = call(_autodiff_count, fn, x, w, what=ctx.what) - _autodiff_count(_calibration, x, w)
    graph = tf.function(value_and_grad).get_concrete_function(x, w).graph
    builtin = any(op.type in BUILTIN_GRADIENT_OPS for op in graph.get_operations())
    return {"runs": runs, "custom_gradient": custom, "backward_autodiff": max(own, 0),
            "builtin_gradient_op": builtin}


check_log1pexp = exercise_check("check_log1pexp", collect_log1pexp)
