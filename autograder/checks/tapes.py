"""Checks of assignments 01 (gradient tape basics) and 02 (persistent and nested tapes).

Every exercise is checked in two halves (:mod:`autograder.checks.judge`): the kernel half here,
``collect_<name>(fn, case, ctx)``, calls the student's ``fn`` on one case and observes what it
returned and what autodiff did (:func:`observing_tapes`, over the one recorder
:func:`harness.recording_autodiff`: which values ``tape.gradient``, ``jacobian``,
``batch_jacobian`` and ``ForwardAccumulator.jvp`` produced, on which tape, from which target;
every spelling counts where a derivative is asked); the grader half,
:mod:`autograder.checks.judge.tapes`, computes the reference from mathematics (analytic
derivatives, NumPy, finite differences) and decides. ``check_<name>(fn, cases=None,
hidden=False)`` runs both and raises :class:`~autograder.checks.compare.CheckFailed` when the
answer is wrong, or right without the idea the exercise teaches (M21). Known mistakes
(:mod:`autograder.checks.mistakes`) are diagnosed here by experiment and named:

========  =====================================================  ===================================
mistake   how the check recognises it                            checks
========  =====================================================  ===================================
M01       ``None`` gradient for a constant input; where the       square_grad, sum_squared_grad,
          function takes a tensor, also a gradient for the same   grads_from_one_tape,
          value as a tf.Variable (which tapes watch by            second_derivative, hessian
          themselves), which tells M01 from M05
M02       a gradient for ``3.0`` but ``None`` for the integer     square_grad
          ``3``
M03       ``TypeError`` about ``NoneType`` in a later step, or    fit_line
          weights returned as a tf.Tensor instead of a
          tf.Variable
M04       ``RuntimeError`` "non-persistent" from the tape         grads_from_one_tape,
                                                                  second_derivative, hessian
M05       ``None`` gradient even for a tf.Variable (a step to the sum_squared_grad, train_step,
          target was computed outside the ``with`` block)         train_step_fault,
                                                                  second_derivative, hessian
M06       one of two gradients is ``None`` with variables that    product_grads,
          the tape only sees when watched explicitly (a frozen    product_grads_prediction
          variable, a constant)
M12-M14   the optimizer got no gradients, or a gradient is        train_step, fit_line,
          None even for a tf.Variable: the code is traced again   sum_squared_grad
          as a graph (harness.explain_missing_gradient) and the
          path to the loss read: an op without gradient (M12),
          tf.stop_gradient (M13), NumPy (M14), or M05
M20       the dtype error of an int32 variable met by floats      fit_line (any check, via harness)
M47       the optimizer got no gradients and the step had called  train_step, train_step_fault
          model.predict (NumPy out of the tape)
M21       the right numbers, but not from the tapes the exercise  every check (judged in
          names (see each judge's ``idea``)                       checks/judge/tapes.py)
M45       an autodiff call returned n * n entries (the full       hvp
          Hessian), or one call per entry was made and the
          product taken afterwards
M46       a correct derivative by another spelling than the       second_derivative, hessian (a jvp
          exercise asks, which says why: the message says it is  where nested tapes are asked),
          correct                                                 hvp (back-over-back)
M99       f''(x) produced by a tape call that differentiated      second_derivative
          f's value again, not the first derivative (it equals
          f'(x))
M100      f''(x) None even for a tf.Variable, but not once         second_derivative
          ``GradientTape.stop_recording`` pauses nothing
M101      a scalar jvp equal to grad f . v (the accumulator's     hvp
          jvp of f's value, not of the gradient)
========  =====================================================  ===================================

Hidden cases carry their functions as source text (``{"tf": "def f(x): ...", "np": ...}``,
built with :func:`~autograder.checks.compare.function_from_source`): this module defines only
the functions of visible cases (:data:`SCALAR_FUNCTIONS`, :data:`VECTOR_FUNCTIONS`,
:data:`HVP_FUNCTIONS`).

Three exercises are predict-then-verify or find-and-fix rather than a demo re-typed: the check
takes the student's prediction (a value in a notebook variable) with the function that shows it,
and the judge compares the prediction with its own reference (no message shows that reference:
the student's tape does) and requires the function's values to come from a tape (M21):
``check_sum_squared_prediction(predicted_dz_dx, sum_squared_grad)`` (dz/dx at x = [[1, 2],
[3, 4]], by the chain rule), ``check_train_step_fault(faulty_line, train_step)`` (the line of
``broken_train_step`` at fault, and the fixed step) and
``check_product_grads_prediction(predicted_none, product_grads)`` (which gradients a default
tape returns as None for trainable, frozen and constant sources, and the fixed product_grads on
each).

Exceptions of student code are named by :mod:`autograder.checks.harness` (M04, M07, M14, ...).

Messages of hidden cases (``hidden=True``) name the case by its number, never by its inputs.
Checks print one line to stdout when they pass and never write to stderr.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import tensorflow as tf

from . import kernel_entry  # noqa: F401  (the grader's way into a grading kernel)
from .compare import CheckFailed, fail, to_numpy
from .harness import (call, collect_prediction, exercise_check, explain_missing_gradient,
                      float_values, graph_mode, quiet_tensorflow, recording_autodiff,
                      TAPE_SHIFT)
from .compare import function_from_source
from .judge.tapes import MAX_HVP_SIZE, hvp_problem, linear_problem

__all__ = [
    "check_square_grad", "check_sum_squared_grad", "check_train_step", "check_fit_line",
    "check_grads_from_one_tape", "check_grads_from_one_tape_prediction",
    "check_second_derivative", "check_product_grads",
    "check_hessian", "check_sum_squared_prediction", "check_train_step_fault",
    "check_product_grads_prediction", "SCALAR_FUNCTIONS", "VECTOR_FUNCTIONS",
    "observing_tapes", "check_square_grad_prediction", "check_hvp", "check_hvp_prediction",
]


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def _floats(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def _fresh_constant(value) -> tf.Tensor:
    """A new float32 tf.constant holding ``value`` (cases must not share tensors)."""
    return tf.constant(np.asarray(value, dtype=np.float32))


def _targets(record, value) -> list:
    """The target values of the (at most 16) calls that produced ``value``: the judge requires
    one to be the function the exercise differentiates (a decoy target, e.g. ``x * formula``,
    hands back a formula through the tape)."""
    return [c.target_value for c in record.producers(value)[:16]]


@contextlib.contextmanager
def observing_tapes(shift: float | None = None):
    """Record every automatic differentiation made inside the block in a
    :class:`~autograder.checks.harness.GradientRecord` (:func:`harness.recording_autodiff`,
    the one recorder: ``GradientTape.gradient``, ``jacobian``, ``batch_jacobian`` and
    ``ForwardAccumulator.jvp``; calls these make themselves are not recorded). Inside the
    block tf.functions run eagerly, so that a student's tf.function is observed like plain
    code: values, not symbolic tensors. With ``shift``, every result is handed back shifted
    (:func:`harness.wrapping_autodiff_calls`)."""
    was_eager = tf.config.functions_run_eagerly()
    with quiet_tensorflow():
        tf.config.run_functions_eagerly(True)
    try:
        with recording_autodiff(shift=shift) as record:
            yield record
    finally:
        with quiet_tensorflow():
            tf.config.run_functions_eagerly(was_eager)


def _pair(result, what: str, names: str):
    """``result`` as two values, or a failure saying the function should return ``names``."""
    __tracebackhide__ = True
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{what} should return {names}, got {type(result).__name__}.", code="type")
    return result


# --------------------------------------------------------------------------------------------
# 01 Gradient tape basics
# --------------------------------------------------------------------------------------------

def collect_square_grad(fn, case, ctx):
    """Kernel half of ``check_square_grad``: call ``square_grad(x)`` (x a Python int or float)
    and observe its result and whether ``tape.gradient`` (or ``tape.jacobian``) produced it.

    Returns:
        ``{"result": the returned value, "from_tape": bool, "targets": the values of the
        targets of the calls that produced it}``.
    Raises:
        CheckFailed: M01 when the result is ``None`` for a float input (a constant never
            watched); M02 when a float input works but an integer one gives ``None`` (an
            integer tensor cannot be differentiated); a cause of :func:`harness.call`.
    """
    __tracebackhide__ = True
    x, what = case, ctx.what
    value = float(to_numpy(x, "input"))
    with observing_tapes() as record:
        result = call(fn, x, what=what)
    if result is None:
        is_integer = isinstance(x, (int, np.integer)) or (
            hasattr(x, "dtype") and tf.as_dtype(x.dtype).is_integer)
        shown = "3" if ctx.hidden else str(int(value))
        if is_integer and call(fn, float(value), what=what) is not None:
            fail(f"{what} returned None, but the same value as a float works. "
                 f"`tf.constant({shown})` is an int32 tensor and a tape only "
                 f"differentiates floating-point tensors.", mistake="M02",
                 fix="only floating-point tensors have gradients: convert the input to a float32 "
                     "tensor first (read the dtype argument of tf.constant, or tf.cast).")
        fail(f"{what} returned None instead of a number. A tape only follows tf.Variables "
             f"by itself; a tf.constant has to be watched.", mistake="M01",
             fix="a tape follows tf.Variables by itself, constants only when told to: ask the "
                 "tape to watch x (read GradientTape.watch) inside its block, before computing "
                 "the square there.")
    return {"result": result, "from_tape": bool(record.producers(result)),
            "targets": _targets(record, result)}


check_square_grad = exercise_check("check_square_grad", collect_square_grad)

#: ``check_square_grad_prediction(predicted_float, predicted_int)``: what the notebook's
#: ``draft_square_grad`` returns for 3.0 and for the integer 2, predicted before it runs; the
#: kernel half only passes the values on (:func:`collect_prediction`),
#: the judge (``judge.tapes.square_grad_prediction``) decides.
check_square_grad_prediction = exercise_check("check_square_grad_prediction",
                                              collect_prediction)


def collect_sum_squared_grad(fn, case, ctx):
    """Kernel half of ``check_sum_squared_grad``: call ``sum_squared_grad(x)`` with ``x`` (an
    array-like) as a fresh float32 tf.constant.

    Returns:
        ``{"result": the returned value, "from_tape": bool}``.
    Raises:
        CheckFailed: M01 when the result is None for a constant but not for a tf.Variable (the
            constant was never watched); M05 (or M12-M14, by experiment) when it is None even
            for a tf.Variable (a step from x to z was computed outside the tape's block).
    """
    __tracebackhide__ = True
    x, what = _floats(case), ctx.what
    with observing_tapes() as record:
        result = call(fn, _fresh_constant(x), what=what)
    if result is None:
        with_variable = call(fn, tf.Variable(x.astype(np.float32)), what=what)
        if with_variable is not None:
            fail(f"{what} returned None for a tf.constant, but works for a tf.Variable: the "
                 f"constant was never watched.", mistake="M01",
                 fix="a tape follows constants only when told to: ask it to watch x (read "
                     "GradientTape.watch) first thing inside its block.")
        found = explain_missing_gradient(lambda: fn(tf.Variable(x.astype(np.float32))))
        if found is None or found[0] == "M05":  # said for x and z, not weights and a loss
            found = ("M05", "The tape never recorded the path from x to z: it records only the "
                     "operations run inside its block, and a step computed before the block "
                     "opened or after it closed is not on it.",
                     "compute every step from x to z inside the tape's block (indented), and "
                     "ask for the gradient after it.")
        fail(f"{what} returned None even for a tf.Variable, which every tape watches. "
             f"{found[1]}", mistake=found[0], fix=found[2])
    return {"result": result, "from_tape": bool(record.producers(result)),
            "targets": _targets(record, result)}


check_sum_squared_grad = exercise_check("check_sum_squared_grad", collect_sum_squared_grad)


def _prediction_array(predicted, dtype=np.float64, max_size: int = 4096):
    """The student's prediction as a NumPy array of ``dtype`` (float64: numbers; bool: a table of
    True/False, nothing else), or None when it is not such a value or has more than
    ``max_size`` entries. Tensors and arrays count (their values)."""
    try:
        value = predicted.numpy() if hasattr(predicted, "numpy") else predicted
        if dtype is bool:
            array = np.asarray(value)
            if array.dtype == object:
                array = np.asarray(value, dtype=object)
                if not all(isinstance(v, (bool, np.bool_)) for v in array.ravel()):
                    return None
                array = array.astype(bool)
            if array.dtype != bool:
                return None
        else:
            array = np.asarray(value)
            if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
                return None
            array = array.astype(np.float64)
    except Exception:  # anything a student wrote
        return None
    return array if array.size <= max_size else None


def collect_sum_squared_prediction(predicted, fn, case, ctx):
    """Kernel half of ``check_sum_squared_prediction(predicted_dz_dx, sum_squared_grad)``:
    predict, then verify. The student wrote ``predicted_dz_dx``, the gradient of
    z = (sum of x) ** 2 at the case's x (default [[1, 2], [3, 4]]) worked out by the chain rule,
    before running a tape; this observes the prediction and verifies it with the student's own
    ``sum_squared_grad`` on that x.

    The idea graded: the prediction equals the gradient (every entry 2 * sum(x)), and
    sum_squared_grad's value there is one tape.gradient produced (a formula is no verification:
    M21). The judge never shows the reference: the student's tape does.

    Returns:
        ``{"predicted": the prediction as a float64 array, or None when it is not numbers,
        "result": sum_squared_grad(x), "from_tape": bool}``.
    """
    __tracebackhide__ = True
    x, what = _floats(case), ctx.what
    with observing_tapes() as record:
        result = call(fn, _fresh_constant(x), what=what)
    if result is None:
        fail(f"{what}: sum_squared_grad returned None, so nothing verifies the prediction.",
             fix="run check_sum_squared_grad first: it names the cause.", code="none")
    return {"predicted": _prediction_array(predicted), "result": result,
            "from_tape": bool(record.producers(result)), "targets": _targets(record, result)}


check_sum_squared_prediction = exercise_check("check_sum_squared_prediction",
                                              collect_sum_squared_prediction)


def _keras_problem(case, initializer="glorot_uniform"):
    """A fresh Keras model with the case's weights, an SGD optimizer, the loss object and the
    data: ``(model, optimizer, loss_object, x, y)``. The layer is made with ``initializer``
    (its values are replaced by the case's): "zeros" draws nothing from Keras' global seed, so
    a notebook's later random numbers stay what they were."""
    x, y, kernel, bias = linear_problem(case)
    model = tf.keras.Sequential([tf.keras.Input(shape=(case["n_in"],)),
                                 tf.keras.layers.Dense(case["n_out"],
                                                       kernel_initializer=initializer)])
    model.layers[0].kernel.assign(kernel)
    model.layers[0].bias.assign(bias)
    optimizer = tf.keras.optimizers.SGD(learning_rate=case["lr"])
    loss_object = {"mse": tf.keras.losses.MeanSquaredError,
                   "mae": tf.keras.losses.MeanAbsoluteError}[case["loss"]]()
    return model, optimizer, loss_object, tf.constant(x), tf.constant(y)


#: What check_train_step and check_train_step_fault say when the step called model.predict.
PREDICT_CAUSE = ("the step called model.predict inside the tape: predict runs Keras' own loop "
                 "and returns a NumPy array, so the tape recorded nothing from the weights to "
                 "the loss and every gradient was None.")
PREDICT_FIX = ("call the model object itself on the inputs inside the tape, so the tape records "
               "the forward pass; keep predict for inference.")


@contextlib.contextmanager
def _watching_predict(model):
    """Count the calls of ``model.predict`` and ``model.predict_on_batch`` made inside the block
    (the instance's methods are wrapped for the block; Keras' warnings about eager tf.data
    functions are silenced while they run). Yields a one-element list, the count."""
    count = [0]
    names = ("predict", "predict_on_batch")
    originals = [getattr(model, name) for name in names]

    def counting(original):
        def counted(*args, **kwargs):
            count[0] += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return original(*args, **kwargs)
        return counted

    for name, original in zip(names, originals):
        setattr(model, name, counting(original))
    try:
        yield count
    finally:
        for name in names:
            with contextlib.suppress(AttributeError):
                delattr(model, name)


def _predict_explainer(what: str, count: list):
    """An ``explain=`` detector for :func:`harness.call`: M47 when the optimizer got no
    gradients and the step had called model.predict."""
    def explain(error):
        if count[0] and "No gradients provided" in str(error):
            return "M47", f"{what}: the optimizer got no gradients: {PREDICT_CAUSE}", PREDICT_FIX
        return None
    return explain


def collect_train_step(fn, case, ctx):
    """Kernel half of ``check_train_step(fn)``: one step of training by hand,
    ``train_step(model, optimizer, loss_object, x, y)``.

    The idea graded: tape.gradient computes the gradient of the loss with respect to the
    model's weights and the update applies it (not a formula, not Keras' own compile/fit loop).
    For each case this builds a one-layer Keras model with known weights (from the case's seed),
    an SGD optimizer and a Keras loss, and calls ``fn`` twice; the judge compares the returned
    losses, the weights after each step and the gradients the tapes computed for them with two
    SGD steps computed in NumPy.

    Args (of the check): ``fn`` returns the loss (a scalar tensor) computed *before* its update;
    cases: dicts with keys n, n_in, n_out, loss ("mse" or "mae"), lr, seed.
    Returns:
        ``{"steps": [{"loss", "kernel", "bias", "kernel_grads", "bias_grads"}, ...],
        "keras_loop": bool}``.
    Raises:
        CheckFailed: when no gradient reached the optimizer, the cause found by re-running the
            step as a graph: M05 (the loss was computed after the tape's block closed), M12
            (tf.round, tf.argmax or an integer cast in the loss), M13 (tf.stop_gradient), M14
            (NumPy inside the tape).
    """
    __tracebackhide__ = True
    what = ctx.what
    model, optimizer, loss_object, x, y = _keras_problem(case)
    layer = model.layers[0]
    steps = []
    for _ in range(2):
        with observing_tapes() as record, _watching_predict(model) as predicted:
            result = call(fn, model, optimizer, loss_object, x, y, what=what,
                          rerun=lambda: fn(*_keras_problem(case)),
                          explain=_predict_explainer(what, predicted))
        if result is None:
            fail(f"{what} returned None instead of the loss.",
                 fix="return the loss value of the step.", code="none")
        steps.append({"loss": result, "kernel": layer.kernel.numpy(), "bias": layer.bias.numpy(),
                      "kernel_grads": record.gradients_of(layer.kernel),
                      "bias_grads": record.gradients_of(layer.bias)})
    keras_loop = bool(getattr(model, "compiled", False)) or (
        getattr(model, "train_function", None) is not None)
    return {"steps": steps, "keras_loop": keras_loop}


check_train_step = exercise_check("check_train_step", collect_train_step)


def collect_train_step_fault(faulty_line, fn, case, ctx):
    """Kernel half of ``check_train_step_fault(faulty_line, train_step)``: find and fix. The
    notebook's ``broken_train_step`` leaves its optimizer without gradients; the student names
    the line at fault in ``faulty_line`` (a string) and writes the fixed ``train_step``. This
    observes the string and one step of the fixed function on the case's model (a train_step
    case).

    The idea graded: the line named is the one at fault (not the line where the None gradients
    show), and the fixed step's gradients are what tape.gradient computed for the model's
    weights (an update derived by hand is no fix: M21).

    Returns:
        ``{"line": the string, or None when faulty_line is not one, "loss": the step's loss,
        "kernel_grads", "bias_grads": what tape.gradient computed for the layer's weights}``.
    Raises:
        CheckFailed: when no gradient reached the optimizer (the cause found by re-running the
            step as a graph: M05, M12-M14), or the step returned None.
    """
    __tracebackhide__ = True
    what = ctx.what
    line = faulty_line[:1001] if isinstance(faulty_line, str) else None
    model, optimizer, loss_object, x, y = _keras_problem(case, initializer="zeros")
    layer = model.layers[0]
    with observing_tapes() as record, _watching_predict(model) as predicted:
        result = call(fn, model, optimizer, loss_object, x, y, what=what,
                      rerun=lambda: fn(*_keras_problem(case, initializer="zeros")),
                      explain=_predict_explainer(what, predicted))
    if result is None:
        fail(f"{what}: the fixed train_step returned None instead of the loss.",
             fix="return the loss value of the step.", code="none")
    return {"line": line, "loss": result, "kernel_grads": record.gradients_of(layer.kernel),
            "bias_grads": record.gradients_of(layer.bias)}


check_train_step_fault = exercise_check("check_train_step_fault", collect_train_step_fault)


M03_CAUSE = ("`w = w - lr * dw` makes w a plain tensor: the next tape does not watch it and its "
             "gradient is None.")
M03_FIX = ("update the variables in place (read tf.Variable's assign_sub): binding the name to a "
           "new tensor makes it a plain tensor the next tape does not watch.")


def collect_fit_line(fn, case, ctx):
    """Kernel half of ``check_fit_line(fn)``: gradient descent on a line with tf.Variable
    weights, ``fit_line(x, y, lr, steps)``.

    The idea graded: every step tape.gradient computes the gradients of the loss with respect
    to w and b, and the same two tf.Variables are updated in place; updates derived by hand fail.
    ``fn`` takes 1-D float32 tensors x and y of shape (n,), a Python float lr and a Python int
    steps, and returns ``(w, b, losses)``: the two tf.Variables (started at 0.0, updated in
    place) and a list of ``steps`` losses, each the mean squared error before its update.

    Returns:
        ``{"w", "b", "losses": list of floats, "w_grads", "b_grads": what tape.gradient
        computed for the returned w and b, call by call, "tape_calls": how many tape calls were
        made, "shifted_losses": the losses of a second run with every tape result shifted by
        TAPE_SHIFT (None when it returned no list of numbers)}``.
    Raises:
        CheckFailed: M03 when a weight was rebound to a tensor (``w = w - lr * g``), seen as a
            ``TypeError`` about ``NoneType`` in a later step while one step traced as a graph
            has its gradients, or as weights returned as tf.Tensor instead of tf.Variable;
            M14/M12/M05 when even one step, traced as a graph, has no gradient (NumPy in the
            tape, ...); M20 for an int32 variable.
    """
    __tracebackhide__ = True
    what = ctx.what
    args = (_fresh_constant(case["x"]), _fresh_constant(case["y"]), case["lr"], case["steps"])

    def none_gradient(error):
        """A TypeError about None: a gradient was None. Re-run as a graph to find why; when
        the first step has its gradients, a later step lost them (M03)."""
        if not (isinstance(error, TypeError) and "NoneType" in str(error)):
            return None
        found = explain_missing_gradient(
            lambda: fn(_fresh_constant(case["x"]), _fresh_constant(case["y"]), case["lr"], 1))
        if found:
            return found[0], f"{what}: a gradient was None. {found[1]}", found[2]
        return ("M03", f"{what} raised TypeError ({error}): a gradient was None in a later "
                f"step. {M03_CAUSE}", M03_FIX)

    with observing_tapes() as record:
        result = call(fn, *args, what=what, explain=none_gradient)
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        fail(f"{what} should return a tuple (w, b, losses), got {type(result).__name__}.",
             code="type")
    w, b, losses = result
    for name, value in (("w", w), ("b", b)):
        if not isinstance(value, tf.Variable):
            if isinstance(value, tf.Tensor):
                fail(f"{what}: {name} is a tf.Tensor, not a tf.Variable. {M03_CAUSE}",
                     mistake="M03", fix=M03_FIX)
            fail(f"{what}: {name} should be the tf.Variable you trained, got "
                 f"{type(value).__name__}.", code="not_variable")
    if not isinstance(losses, (list, tuple)):
        fail(f"{what}: losses should be a list of numbers, got {type(losses).__name__}.",
             code="type")
    values = []
    for loss in list(losses)[:100_000]:
        got = float_values(loss)
        if got is None or got.size != 1:
            fail(f"{what}: losses should hold one number per step.", code="type")
        values.append(float(got.reshape(())))
    observed = {"w": w, "b": b, "losses": values,
                "w_grads": [float_values(g) for g in record.gradients_of(w)],
                "b_grads": [float_values(g) for g in record.gradients_of(b)],
                "tape_calls": len(record.calls), "shifted_losses": None}
    # Once more, every tape result handed back shifted by TAPE_SHIFT: a descent that applies the
    # tape's gradients moves with them; updates computed beside the tape do not.
    with observing_tapes(shift=TAPE_SHIFT):
        shifted = call(fn, _fresh_constant(case["x"]), _fresh_constant(case["y"]), case["lr"],
                       case["steps"], what=what)
    if isinstance(shifted, (tuple, list)) and len(shifted) == 3 and \
            isinstance(shifted[2], (list, tuple)):
        losses = [float_values(v) for v in list(shifted[2])[:100_000]]
        if all(v is not None and v.size == 1 for v in losses):
            observed["shifted_losses"] = [float(v.reshape(())) for v in losses]
    return observed


check_fit_line = exercise_check("check_fit_line", collect_fit_line)


# --------------------------------------------------------------------------------------------
# 02 Persistent and nested tapes
# --------------------------------------------------------------------------------------------

def collect_grads_from_one_tape(fn, case, ctx):
    """Kernel half of ``check_grads_from_one_tape(fn)``: with ``y = x * x`` and ``z = y * y``
    recorded once, ``grads_from_one_tape(x)`` returns ``(dz/dx, dy/dx) = (4 x**3, 2 x)``
    (108.0 and 6.0 at x = 3).

    The idea graded: both values come from one persistent tape, asked twice (two gradient calls
    on the same tape object); formulas, or two tapes, fail. ``fn`` takes a Python float and
    returns two float scalar tensors.

    Returns:
        ``{"dz_dx", "dy_dx", "from_tape": both produced by autodiff calls, "one_tape": by two
        calls on one tape, "forward": by ForwardAccumulator.jvp calls (M46)}``.
    Raises:
        CheckFailed: M04 on "non-persistent" RuntimeError (two gradient calls on one ordinary
            tape); M01 when a gradient is None (the constant was never watched).
    """
    __tracebackhide__ = True
    what = ctx.what
    with observing_tapes() as record:
        result = call(fn, case, what=what)
    dz_dx, dy_dx = _pair(result, what, "a tuple (dz_dx, dy_dx)")
    if dz_dx is None or dy_dx is None:
        fail(f"{what} returned a None gradient: x is a constant, so the tape must watch it.",
             mistake="M01", fix="a tape follows constants only when told to: ask the tape to "
                                "watch x (read GradientTape.watch) inside its block, before y and "
                                "z are computed.")
    for_z, for_y = record.producers(dz_dx), record.producers(dy_dx)
    one_tape = any(c is not d and c.tape is d.tape for c in for_z for d in for_y)
    return {"dz_dx": dz_dx, "dy_dx": dy_dx, "from_tape": bool(for_z and for_y),
            "one_tape": one_tape,
            "forward": bool(for_z and for_y) and all(c.forward for c in for_z + for_y)}


check_grads_from_one_tape = exercise_check("check_grads_from_one_tape",
                                           collect_grads_from_one_tape)

#: ``check_grads_from_one_tape_prediction(predicted_dz_dx, predicted_dy_dx)``: what the draft
#: returns at 3.0 with its tape made persistent and nothing else changed, predicted before the
#: cell that runs it; the judge (``judge.tapes.grads_from_one_tape_prediction``) decides.
check_grads_from_one_tape_prediction = exercise_check("check_grads_from_one_tape_prediction",
                                                      collect_prediction)


#: Scalar functions of the second_derivative exercise's visible cases, TensorFlow, by name; the
#: grader half has NumPy versions with their derivatives under the same names
#: (:data:`autograder.checks.judge.tapes.SCALAR_FUNCTIONS`). Hidden cases carry their functions
#: as source text (``{"tf": "def f(x): ...", "np": ..., "x": ...}``), never defined here.
SCALAR_FUNCTIONS = {
    "x**3": lambda x: x ** 3,
    "sin": tf.sin,
}


def _case_function(case, named: dict, what: str):
    """The TensorFlow function and the input of a case: ``(name, x)`` with a name of ``named``,
    or a hidden case ``{"tf": source defining f, "x": ...}`` (built with
    :func:`~autograder.checks.compare.function_from_source`)."""
    __tracebackhide__ = True
    if isinstance(case, dict):
        return function_from_source(case["tf"], "f", {"tf": tf}), case["x"]
    name, x = case
    if name not in named:
        fail(f"{what}: this case names an unknown function.", code="malformed")
    return named[name], x


def _watching_points(f, x):
    """``(f_at, off)``: ``f`` wrapped so that every eager call whose input holds a value that is
    not an entry of ``x`` adds 1 to ``off[0]``. Autodiff evaluates f at x alone (reshaped,
    stacked or cast, its entries are still x's); finite differences evaluate it at x + h. A
    symbolic input (a graph being traced) is not counted: its values are unknown."""
    entries = np.unique(np.asarray(x, dtype=np.float32).astype(np.float64))
    off = [0]

    def f_at(t, *args, **kwargs):
        try:
            values = np.asarray(t.numpy() if hasattr(t, "numpy") else t, dtype=np.float64)
        except Exception:  # a symbolic tensor, or not a number
            values = None
        if values is not None and values.size and not np.isin(values.ravel(), entries).all():
            off[0] += 1
        return f(t, *args, **kwargs)

    return f_at, off


def _records_when_unpaused(run, x) -> bool:
    """Whether ``run`` on a tf.Variable ``x`` gives an f''(x) that is not None once
    ``GradientTape.stop_recording`` pauses nothing (the experiment that names M100: the inner
    gradient computed while the outer tape was paused). An error in that run answers False."""
    original = tf.GradientTape.stop_recording
    tf.GradientTape.stop_recording = lambda self: contextlib.nullcontext()
    try:
        return run(tf.Variable(np.float32(x)))[1] is not None
    except Exception:  # the run's own errors are named by the first run, not by this experiment
        return False
    finally:
        tf.GradientTape.stop_recording = original


def collect_second_derivative(fn, case, ctx):
    """Kernel half of ``check_second_derivative(fn)``: ``second_derivative(f, x)`` returns
    ``(f'(x), f''(x))`` computed with nested tapes.

    The idea graded: nested tapes, for any f: f'(x) is what a tape's gradient call returned and
    f''(x) what a tape returned when it differentiated that first gradient (so it recorded it).
    ``fn`` takes a TensorFlow function ``f`` and a float32 scalar tf.constant ``x`` and returns
    two float scalar tensors; a case is (name, x) with a name of :data:`SCALAR_FUNCTIONS`
    (x**3 at 1.0 gives 3.0 and 6.0); hidden cases carry their functions as source text.

    Returns:
        ``{"dy_dx", "d2y_dx2", "first_from_tape": bool, "second_nested": bool,
        "second_from_tape": an autodiff call produced f''(x), "second_forward": it was a
        ForwardAccumulator.jvp (forward-over-back),
        "moved": in a second call with every autodiff result shifted by
        :data:`~autograder.checks.harness.TAPE_SHIFT`, both returned values were those
        shifted results (False for values computed beside the tape calls), "off_point_calls":
        how many calls evaluated f at a point other than x (:func:`_watching_points`)}``.
    Raises:
        CheckFailed: M04 on a second gradient call on a non-persistent tape; M01 when a
            derivative is None for a constant but not for a tf.Variable (a tape did not watch
            x); M100 when f''(x) is None even for a variable but not once
            ``GradientTape.stop_recording`` pauses nothing (the inner gradient computed while the
            outer tape was paused); M05 when it is None even then (the inner gradient was
            computed after the outer tape's block closed).
    """
    __tracebackhide__ = True
    what = ctx.what
    f, x = _case_function(case, SCALAR_FUNCTIONS, what)
    f, off_point = _watching_points(f, x)

    def run(arg):
        return _pair(call(fn, f, arg, what=what), what, "a tuple (dy_dx, d2y_dx2)")

    with observing_tapes() as record:
        dy, d2y = run(_fresh_constant(x))
    if dy is None or d2y is None:
        dy_v, d2y_v = run(tf.Variable(np.float32(x)))
        which = "f'(x)" if dy is None else "f''(x)"
        if dy_v is None:
            fail(f"{what}: f'(x) is None even for a tf.Variable.", mistake="M05",
                 fix="the inner tape records only inside its block: compute f's value there.")
        if d2y_v is None and _records_when_unpaused(run, x):
            fail(f"{what}: f''(x) is None: the first derivative was computed while the outer "
                 f"tape was paused (GradientTape.stop_recording), so the outer tape has no "
                 f"record of how f'(x) depends on x (run again with stop_recording left out, "
                 f"f''(x) is not None).", mistake="M100", code="inner_gradient_paused",
                 fix="take the inner tape's gradient where the outer tape records: inside the "
                     "outer block, not under stop_recording; the outer tape keeping that record "
                     "is what makes the second derivative.")
        if d2y_v is None:
            fail(f"{what}: f''(x) is None: the outer tape never recorded how f'(x) depends "
                 f"on x.", mistake="M05", code="inner_gradient_outside",
                 fix="the outer tape must record the inner tape's gradient computation: take the "
                     "first derivative inside the outer tape's block, then the outer tape's "
                     "gradient of it after that block.")
        fail(f"{what}: {which} is None for a tf.constant x but not for a tf.Variable: "
             f"x was not watched.", mistake="M01",
             fix="each tape follows constants only when told to: watch x in each tape (read "
                 "GradientTape.watch), first thing inside its block.")
    second = record.producers(d2y)
    observed = {"dy_dx": dy, "d2y_dx2": d2y, "first_from_tape": bool(record.producers(dy)),
                "second_from_tape": bool(second),
                "second_nested": any(record.derived(c) for c in second),
                "second_forward": bool(second) and all(c.forward for c in second),
                "moved": False, "off_point_calls": off_point[0]}
    if observed["first_from_tape"] and second:
        # Every autodiff result handed back shifted: values computed from the tape calls move
        # with them (the shift is a constant, so f'' of a shifted f' is unchanged, then shifted).
        with observing_tapes(shift=TAPE_SHIFT) as shifted_record:
            dy_s, d2y_s = run(_fresh_constant(x))
        observed["moved"] = bool(shifted_record.producers(dy_s)) and bool(
            shifted_record.producers(d2y_s))
    return observed


check_second_derivative = exercise_check("check_second_derivative", collect_second_derivative)


#: M06's fix in product_grads and its prediction.
WATCH_BOTH_FIX = ("a tape follows trainable variables by itself, and nothing else (nothing at all "
                  "with watch_accessed_variables=False): watch both sources (read "
                  "GradientTape.watch) before computing y.")


def collect_product_grads(fn, case, ctx):
    """Kernel half of ``check_product_grads(fn)``: ``product_grads(a, b)`` returns the
    gradients of ``a * b`` with respect to both variables, from a tape that watches both (a
    default tape with ``tape.watch``, or one made with ``watch_accessed_variables=False``):
    ``[b, a]``.

    The idea graded: a tape records only what it watches, so both values must come from its
    gradient call (returning ``[b, a]`` directly fails). ``fn`` takes two
    tf.Variables of the same shape (trainable or not; a non-trainable variable is watched only
    by an explicit ``tape.watch``) and returns a list of two tensors of that shape; a case is a
    dict with keys a, b (array-likes) and trainable (bool).

    Returns:
        ``{"grads": the two returned values, "from_tape": both produced by tape calls}``.
    Raises:
        CheckFailed: M06 when one or both gradients are None (a source the tape never watched).
    """
    __tracebackhide__ = True
    what = ctx.what
    a = tf.Variable(_floats(case["a"]).astype(np.float32), trainable=case["trainable"])
    b = tf.Variable(_floats(case["b"]).astype(np.float32), trainable=case["trainable"])
    with observing_tapes() as record:
        result = call(fn, a, b, what=what)
    grads = list(_pair(result, what, "a list [dy_da, dy_db]"))
    missing = [name for name, g in zip(("a", "b"), grads) if g is None]
    if missing:
        fail(f"{what}: the gradient with respect to {' and '.join(missing)} is None: the tape "
             f"never watched it (a default tape follows trainable variables only; with "
             f"`watch_accessed_variables=False`, only what you `tape.watch`).", mistake="M06",
             fix=WATCH_BOTH_FIX)
    return {"grads": grads, "from_tape": all(record.producers(g) for g in grads)}


check_product_grads = exercise_check("check_product_grads", collect_product_grads)


_KIND_NAMES = {"variable": "a trainable variable", "frozen": "a variable with trainable=False",
               "constant": "a tf.constant"}


def _source(kind: str, value):
    """A fresh source of the product_grads prediction: a trainable tf.Variable ("variable"), a
    tf.Variable made with trainable=False ("frozen") or a tf.constant ("constant")."""
    array = _floats(value).astype(np.float32)
    if kind == "constant":
        return tf.constant(array)
    return tf.Variable(array, trainable=kind == "variable")


def collect_product_grads_prediction(predicted, fn, case, ctx):
    """Kernel half of ``check_product_grads_prediction(predicted_none, product_grads)``:
    predict, then fix. The notebook's ``broken_product_grads`` uses a default tape and no
    ``watch``; the student predicted, for each pair of sources of the case (kinds "variable",
    "frozen": a tf.Variable with trainable=False, "constant": a tf.constant), which of its two
    gradients come back None (``predicted_none``, one [a_is_None, b_is_None] pair per pair of
    sources), then wrote ``product_grads``, whose tape watches exactly a and b. This observes
    the prediction and product_grads on every pair.

    The idea graded: a default tape watches trainable variables only, so the prediction marks
    exactly the frozen and constant sources; and product_grads gives [b, a] for every pair,
    from tape.gradient (returning b and a directly: M21).

    Returns:
        ``{"predicted": the prediction as a bool array, or None when it is not a table of
        True/False, "grads": product_grads' two values per pair, "from_tape": per pair,
        whether tape calls produced both}``.
    Raises:
        CheckFailed: M06 when product_grads returns None for a source (one the tape never
            watched).
    """
    __tracebackhide__ = True
    what = ctx.what
    grads, from_tape = [], []
    for kinds in case["pairs"]:
        a, b = _source(kinds[0], case["a"]), _source(kinds[1], case["b"])
        with observing_tapes() as record:
            result = call(fn, a, b, what=what)
        pair = list(_pair(result, what, "a list [dy_da, dy_db]"))
        missing = [f"{name} ({_KIND_NAMES[kind]})" for name, kind, g in
                   zip(("a", "b"), kinds, pair) if g is None]
        if missing:
            shown = "a source" if ctx.hidden else " and ".join(missing)
            fail(f"{what}: product_grads returned None for {shown}. A tape records only the "
                 f"sources it watches: with watch_accessed_variables=False none by itself, "
                 f"and a default tape only trainable variables (never a frozen variable or a "
                 f"tf.constant).", mistake="M06", code="unwatched_source",
                 fix=WATCH_BOTH_FIX)
        grads.append(pair)
        from_tape.append(all(record.producers(g) for g in pair))
    return {"predicted": _prediction_array(predicted, dtype=bool), "grads": grads,
            "from_tape": from_tape}


check_product_grads_prediction = exercise_check("check_product_grads_prediction",
                                                collect_product_grads_prediction)


#: Functions R^n -> R of the Hessian exercise's visible cases, TensorFlow (any float dtype), by
#: name; the grader half has NumPy versions under the same names
#: (:data:`autograder.checks.judge.tapes.VECTOR_FUNCTIONS`). Hidden cases carry their functions
#: as source text.
VECTOR_FUNCTIONS = {
    "sum of cubes": lambda x: tf.reduce_sum(x ** 3),
    "square of sum": lambda x: tf.reduce_sum(x) ** 2,
    "rosenbrock": lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2,
}


#: M01's fix in hessian: x unwatched by a tape.
WATCH_BOTH_TAPES_FIX = ("each tape follows constants only when told to: watch x in both tapes "
                        "(read GradientTape.watch).")


def collect_hessian(fn, case, ctx):
    """Kernel half of ``check_hessian(fn)``: ``hessian(f, x)``, the (n, n) matrix of second
    derivatives from nested tapes (the judge compares it with central finite differences in
    float64).

    The idea graded: nested tapes, for any f: the matrix returned is what the outer tape's
    jacobian of the inner tape's gradient produced (or, row by row, its gradient calls of the
    gradient's entries); finite differences or formulas fail. ``fn`` takes a TensorFlow function
    ``f`` (shape (n,) -> scalar) and a float32 tf.constant ``x`` of shape (n,) and returns a
    float tensor of shape (n, n); a case is (name, x) with a name of :data:`VECTOR_FUNCTIONS`,
    or a hidden case carrying its function as source text.

    Returns:
        ``{"result", "from_tape": bool, "nested": bool, "forward": every producing call was a
        ForwardAccumulator.jvp, "moved": bool, "off_point_calls": calls of f at a point other
        than x (:func:`_watching_points`)}``; ``moved``: in a second call with every
        autodiff result shifted by :data:`TAPE_SHIFT`, the value returned was still produced
        by the (shifted) results, so it is theirs and not numbers computed beside an unused
        tape call (finite differences in float64 agree with a tape's values).
    Raises:
        CheckFailed: M04 on a second gradient call on a non-persistent tape; M01 when the
            result (or a row of it) is None for a constant but not for a tf.Variable; M05 when
            it is None even for a variable (the inner gradient was computed after the outer
            tape's block closed), or when rows stacked from tape calls are None because each
            entry ``grad[i]`` was sliced after that block (the notebook's draft).
    """
    __tracebackhide__ = True
    what = ctx.what
    f, x = _case_function(case, VECTOR_FUNCTIONS, what)
    x = _floats(x)
    f, off_point = _watching_points(f, x)

    def none_rows(error):
        """An error after a tape call returned None (tf.stack of None rows): the notebook's
        draft, whose `grad[i]` is sliced after the outer block (M05), or x never watched
        (M01: a tf.Variable, watched by itself, gets its rows)."""
        if not any(not e.results for e in record.events):
            return None
        try:
            with quiet_tensorflow():
                fn(f, tf.Variable(x.astype(np.float32)))
        except Exception:
            fail(f"{what} raised {type(error).__name__} after an outer tape call returned None: "
                 f"what it differentiated (an entry `grad[i]` sliced, or the gradient computed, "
                 f"after the outer block closed) is a tensor the outer tape never recorded.",
                 mistake="M05", code="target_outside",
                 fix="take the entries of the gradient inside the outer tape's block, or "
                     "differentiate the whole gradient with the outer tape's jacobian, which "
                     "keeps one row per entry.")
        fail(f"{what} raised {type(error).__name__} after a tape call returned None for a "
             f"tf.constant x but not for a tf.Variable: x was not watched.", mistake="M01",
             fix=WATCH_BOTH_TAPES_FIX)

    def graph_only(error):
        """tf.hessians (tf.gradients) inside a tf.function, refused while observing_tapes runs
        tf.functions eagerly: run again as graphs, where tf.gradients works."""
        if isinstance(error, RuntimeError) and "tf.gradients is not supported" in str(error):
            return None
        return none_rows(error)

    symbolic = False
    try:
        with observing_tapes() as record:
            result = call(fn, f, _fresh_constant(x), what=what, explain=graph_only)
    except CheckFailed as error:
        if error.code != "raised" or "tf.gradients is not supported" not in str(error):
            raise
        with graph_mode(), recording_autodiff() as record:
            result = call(fn, f, _fresh_constant(x), what=what, explain=none_rows)
        symbolic = record.graph_gradients > 0
    if symbolic:
        return {"result": result, "from_tape": False, "nested": False, "forward": False,
                "graph_gradients": True}
    if result is None:
        if call(fn, f, tf.Variable(x.astype(np.float32)), what=what) is not None:
            fail(f"{what} returned None for a tf.constant x but not for a tf.Variable: x "
                 f"was not watched.", mistake="M01", fix=WATCH_BOTH_TAPES_FIX)
        fail(f"{what} returned None: the outer tape never recorded how the gradient depends "
             f"on x.", mistake="M05", code="inner_gradient_outside",
             fix="compute the inner tape's gradient inside the outer tape's block, then the outer "
                 "tape's jacobian of that gradient after it (one row per entry).")
    observed = {"result": result, **_hessian_evidence(record, result),
                "off_point_calls": off_point[0]}
    observed["moved"] = False
    if observed["from_tape"]:
        with observing_tapes(shift=TAPE_SHIFT) as record:
            moved = call(fn, f, _fresh_constant(x), what=what)
        observed["moved"] = _hessian_evidence(record, moved)["from_tape"]
    return observed


def _hessian_evidence(record, result) -> dict:
    """``{"from_tape", "nested", "forward"}`` of a Hessian ``result``: whether tape calls of
    ``record`` produced it (whole, or row by row), whether they differentiated what another call
    produced, and whether all of them were ForwardAccumulator.jvp calls."""
    producers = record.producers(result)
    matrix = float_values(result)
    if not producers and matrix is not None and matrix.ndim == 2 and 0 < len(matrix) <= 64:
        rows = [record.producers(row) for row in matrix]  # stacked gradients, one per entry
        if all(rows):
            return {"from_tape": True,
                    "nested": all(any(record.derived(c) for c in row) for row in rows),
                    "forward": all(c.forward for row in rows for c in row)}
    return {"from_tape": bool(producers),
            "nested": any(record.derived(c) for c in producers),
            "forward": bool(producers) and all(c.forward for c in producers)}


check_hessian = exercise_check("check_hessian", collect_hessian)


#: Functions R^n -> R of the Hessian-vector product exercise's visible cases, TensorFlow, by
#: name; the grader half has their NumPy gradients under the same names
#: (:data:`autograder.checks.judge.tapes.HVP_GRADIENTS`). Hidden cases carry theirs as source.
HVP_FUNCTIONS = {
    "sum of quartics": lambda x: tf.reduce_sum(x ** 4) / 4,
    "coupled": lambda x: tf.reduce_sum(tf.exp(x)) + tf.reduce_sum(x[:-1] * x[1:]),
}


def collect_hvp(fn, case, ctx):
    """Kernel half of ``check_hvp(fn)``: ``hvp(f, x, v)``, the Hessian-vector product H(x) v of
    a scalar function f, by forward-over-back: a ``tf.autodiff.ForwardAccumulator`` (primals
    x, tangents v) around a GradientTape, whose gradient's jvp is H v.

    The idea graded: H v without the (n, n) Hessian: the value returned is what
    ``ForwardAccumulator.jvp`` produced from a gradient a tape computed, and no autodiff call
    returned n * n entries. ``fn`` takes a TensorFlow function f (shape (n,) -> scalar) and two
    float32 tf.constants x and v of shape (n,), and returns a float tensor of shape (n,); a
    case is ``{"f": a name of HVP_FUNCTIONS (or "tf": source defining f), "n", "seed"}`` (x
    and v from :func:`~autograder.checks.judge.tapes.hvp_problem`).

    Returns:
        ``{"result", "methods": the methods of the calls that produced it, "derived": one of
        them differentiated what an earlier call returned, "largest": most entries one autodiff
        call returned, "calls": how many autodiff calls were made, "off_point_calls": calls of
        f at a point other than x (:func:`_watching_points`)}``.
    Raises:
        CheckFailed: the causes :func:`harness.call` names; M05 when None is returned (the
            gradient computed after the accumulator's block closed).
    """
    __tracebackhide__ = True
    what = ctx.what
    if isinstance(case.get("tf"), str):
        f = function_from_source(case["tf"], "f", {"tf": tf})
    elif case.get("f") in HVP_FUNCTIONS:
        f = HVP_FUNCTIONS[case["f"]]
    else:
        fail(f"{what}: this case names an unknown function.", code="malformed")
    if not 1 < int(case["n"]) <= MAX_HVP_SIZE:
        fail(f"{what}: this case's input is too large.", code="malformed")
    x, v = hvp_problem(case)
    f, off_point = _watching_points(f, x)
    with observing_tapes() as record:
        result = call(fn, f, _fresh_constant(x), _fresh_constant(v), what=what)
    if result is None:
        fail(f"{what} returned None instead of H v: an accumulator carries tangents only for "
             f"the operations run inside its `with` block, so the jvp of a gradient computed "
             f"after the block closed (or of a tensor it never saw) is None.", mistake="M05",
             code="none",
             fix="the accumulator must see the gradient computed: take the tape's gradient inside "
                 "the accumulator's block (indented under it), then return the accumulator's jvp "
                 "of that gradient.")
    producers = record.producers(result)
    return {"result": result, "methods": [c.method for c in producers[:16]],
            "derived": any(record.derived(c) for c in producers[:16]),
            "largest": record.largest_result(), "calls": len(record.events),
            "off_point_calls": off_point[0]}


check_hvp = exercise_check("check_hvp", collect_hvp)

#: ``check_hvp_prediction(predicted_hessian_mb, predicted_hvp_mb, predicted_hvps_per_hessian)``:
#: the memory of a float32 Hessian and of one HVP at n = 1000, and how many HVPs make a Hessian,
#: predicted before the cells that measure them run (values only, judged by
#: ``judge.tapes.hvp_prediction``).
check_hvp_prediction = exercise_check("check_hvp_prediction", collect_prediction)
