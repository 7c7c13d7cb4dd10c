"""Checks of assignments 01 (gradient tape basics) and 02 (persistent and nested tapes).

Each ``check_<name>(fn, cases=None, hidden=False)`` calls the student's ``fn`` on every case,
computes the expected value from mathematics (analytic derivatives, NumPy, finite differences)
and raises :class:`~autograder.checks.compare.CheckFailed` when the answer is wrong. Known mistakes
(:mod:`autograder.checks.mistakes`) are diagnosed by experiment and named:

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
M05       ``None`` gradient even for a tf.Variable (the target    sum_squared_grad, train_step,
          was computed after the ``with`` block closed)           second_derivative, hessian
M06       one of two gradients is ``None`` with variables that    product_grads
          the tape only sees when watched explicitly
M12-M14   the optimizer got no gradients, or a gradient is        train_step, fit_line,
          None even for a tf.Variable: the code is traced again   sum_squared_grad
          as a graph (harness.explain_missing_gradient) and the
          path to the loss read: an op without gradient (M12),
          tf.stop_gradient (M13), NumPy (M14), or M05
M20       the dtype error of an int32 variable met by floats      fit_line (any check, via harness)
========  =====================================================  ===================================

Exceptions of student code are named by :mod:`autograder.checks.harness` (M04, M07, M14, ...).

Messages of hidden cases (``hidden=True``) name the case by its number, never by its inputs.
Checks print one line to stdout when they pass and never write to stderr.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from . import kernel_entry  # noqa: F401  (the grader's way into a grading kernel)
from .compare import assert_close, case_label, fail, passed, to_numpy
from .harness import call, check, exercise_check, explain_missing_gradient, recording_gradients

__all__ = [
    "check_square_grad", "check_sum_squared_grad", "check_train_step", "check_fit_line",
    "check_grads_from_one_tape", "check_second_derivative", "check_product_grads",
    "check_hessian", "SCALAR_FUNCTIONS", "VECTOR_FUNCTIONS", "finite_difference_hessian",
]


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def _floats(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def _fresh_constant(value) -> tf.Tensor:
    """A new float32 tf.constant holding ``value`` (cases must not share tensors)."""
    return tf.constant(np.asarray(value, dtype=np.float32))


# --------------------------------------------------------------------------------------------
# 01 Gradient tape basics
# --------------------------------------------------------------------------------------------

def collect_square_grad(fn, case, ctx):
    """Kernel half of ``check_square_grad``: call ``square_grad(x)`` (x a Python int or float)
    and observe its result and whether ``tape.gradient`` produced it.

    Returns:
        ``{"result": the returned value, "from_tape": bool}``.
    Raises:
        CheckFailed: M01 when the result is ``None`` for a float input (a constant never
            watched); M02 when a float input works but an integer one gives ``None`` (an
            integer tensor cannot be differentiated); a cause of :func:`harness.call`.
    """
    __tracebackhide__ = True
    x, what = case, ctx.what
    value = float(to_numpy(x, "input"))
    with recording_gradients() as record:
        result = call(fn, x, what=what)
    if result is None:
        is_integer = isinstance(x, (int, np.integer)) or (
            hasattr(x, "dtype") and tf.as_dtype(x.dtype).is_integer)
        shown = "3" if ctx.hidden else str(int(value))
        if is_integer and call(fn, float(value), what=what) is not None:
            fail(f"{what} returned None, but the same value as a float works. "
                 f"`tf.constant({shown})` is an int32 tensor and a tape only "
                 f"differentiates floating-point tensors.", mistake="M02",
                 fix="convert the input first: `x = tf.constant(x, dtype=tf.float32)` (or "
                     "`tf.cast(x, tf.float32)`).")
        fail(f"{what} returned None instead of a number. A tape only follows tf.Variables "
             f"by itself; a tf.constant has to be watched.", mistake="M01",
             fix="call `tape.watch(x)` inside the `with tf.GradientTape() as tape:` block, "
                 "before computing `x * x` there.")
    return {"result": result, "from_tape": record.produced(result)}


check_square_grad = exercise_check("check_square_grad", collect_square_grad)


def collect_sum_squared_grad(fn, case, ctx):
    """Kernel half of ``check_sum_squared_grad``: call ``sum_squared_grad(x)`` with ``x`` (an
    array-like) as a fresh float32 tf.constant.

    Returns:
        ``{"result": the returned value, "from_tape": bool}``.
    Raises:
        CheckFailed: M01 when the result is None for a constant but not for a tf.Variable (the
            constant was never watched); M05 (or M12-M14, by experiment) when it is None even
            for a tf.Variable (z was computed after the tape's block closed).
    """
    __tracebackhide__ = True
    x, what = _floats(case), ctx.what
    with recording_gradients() as record:
        result = call(fn, _fresh_constant(x), what=what)
    if result is None:
        with_variable = call(fn, tf.Variable(x.astype(np.float32)), what=what)
        if with_variable is not None:
            fail(f"{what} returned None for a tf.constant, but works for a tf.Variable: the "
                 f"constant was never watched.", mistake="M01",
                 fix="call `tape.watch(x)` first thing inside the `with` block.")
        found = explain_missing_gradient(
            lambda: fn(tf.Variable(x.astype(np.float32)))) or (
            "M05", "The tape never recorded the path from x to z.",
            "compute y and z inside the `with tf.GradientTape() as tape:` block "
            "(indented), and call `tape.gradient(z, x)` after it.")
        fail(f"{what} returned None even for a tf.Variable, which every tape watches. "
             f"{found[1]}", mistake=found[0], fix=found[2])
    return {"result": result, "from_tape": record.produced(result)}


check_sum_squared_grad = exercise_check("check_sum_squared_grad", collect_sum_squared_grad)


# A case of train_step: a dense layer n_in -> n_out on n examples, loss "mse" or "mae", SGD lr.
TRAIN_STEP_CASES = [
    {"n": 8, "n_in": 3, "n_out": 1, "loss": "mse", "lr": 0.1, "seed": 1},
    {"n": 16, "n_in": 2, "n_out": 2, "loss": "mse", "lr": 0.05, "seed": 2},
]


def _linear_problem(case):
    """Data and initial weights of a train_step case, from ``case["seed"]``."""
    rng = np.random.default_rng(case["seed"])
    x = rng.normal(size=(case["n"], case["n_in"])).astype(np.float32)
    y = rng.normal(size=(case["n"], case["n_out"])).astype(np.float32)
    kernel = rng.normal(size=(case["n_in"], case["n_out"])).astype(np.float32)
    bias = rng.normal(size=(case["n_out"],)).astype(np.float32)
    return x, y, kernel, bias


def _numpy_sgd_step(x, y, kernel, bias, loss, lr):
    """One SGD step of a dense layer ``x @ kernel + bias`` in float64 NumPy.

    Returns (loss before the step, new kernel, new bias). Keras' MeanSquaredError and
    MeanAbsoluteError average over every entry, so the gradient of the mean is divided by n * k.
    """
    x, y, kernel, bias = (np.asarray(a, dtype=np.float64) for a in (x, y, kernel, bias))
    residual = x @ kernel + bias - y
    count = residual.size
    if loss == "mse":
        value = np.mean(residual ** 2)
        d_pred = 2.0 * residual / count
    elif loss == "mae":
        value = np.mean(np.abs(residual))
        d_pred = np.sign(residual) / count
    else:  # pragma: no cover - case definition error
        raise ValueError(f"unknown loss {loss!r}")
    return value, kernel - lr * x.T @ d_pred, bias - lr * d_pred.sum(axis=0)


def _keras_problem(case):
    """A fresh Keras model with the case's weights, an SGD optimizer and the loss object."""
    x, y, kernel, bias = _linear_problem(case)
    model = tf.keras.Sequential([tf.keras.Input(shape=(case["n_in"],)),
                                 tf.keras.layers.Dense(case["n_out"])])
    model.layers[0].kernel.assign(kernel)
    model.layers[0].bias.assign(bias)
    optimizer = tf.keras.optimizers.SGD(learning_rate=case["lr"])
    loss_object = {"mse": tf.keras.losses.MeanSquaredError,
                   "mae": tf.keras.losses.MeanAbsoluteError}[case["loss"]]()
    return model, optimizer, loss_object, tf.constant(x), tf.constant(y), kernel, bias


@check("train_step")
def check_train_step(fn, cases=None, hidden=False):
    """Check ``train_step(model, optimizer, loss_object, x, y)``: one step of training by hand.

    For each case the check builds a one-layer Keras model with known weights, an SGD optimizer
    and a Keras loss, calls ``fn`` twice, and compares the two returned losses and the final
    weights with the same two steps computed in NumPy (analytic gradients of a linear model).

    Args:
        fn: the student's function; returns the loss (a scalar tensor) computed *before* its update.
        cases: dicts with keys n, n_in, n_out, loss ("mse" or "mae"), lr, seed; default
            ``TRAIN_STEP_CASES``.
        hidden: name cases by number in messages.
    Raises:
        CheckFailed: wrong loss or weights; when no gradient reached the optimizer, the cause
            found by re-running the step as a graph: M05 (the loss was computed after the tape's
            block closed), M12 (tf.round, tf.argmax or an integer cast in the loss), M13
            (tf.stop_gradient), M14 (NumPy inside the tape).
    """
    __tracebackhide__ = True
    cases = TRAIN_STEP_CASES if cases is None else cases
    for i, case in enumerate(cases):
        label = case_label(f"dense {case['n_in']}->{case['n_out']}, {case['loss']}, "
                           f"lr={case['lr']}", hidden, i)
        what = f"train_step ({label})"
        model, optimizer, loss_object, x, y, kernel, bias = _keras_problem(case)
        for step in (1, 2):
            loss_before, kernel, bias = _numpy_sgd_step(x.numpy(), y.numpy(), kernel, bias,
                                                        case["loss"], case["lr"])
            result = call(fn, model, optimizer, loss_object, x, y, what=what,
                          rerun=lambda: fn(*_keras_problem(case)[:5]))
            if result is None:
                fail(f"{what} returned None instead of the loss.",
                     fix="return the loss value of the step (`return loss_value`).")
            got_kernel = model.layers[0].kernel.numpy()
            if step == 1 and np.allclose(got_kernel, _linear_problem(case)[2]):
                fail(f"{what}: the weights did not change.",
                     fix="after computing the gradients, apply them: "
                         "`optimizer.apply_gradients(zip(grads, model.trainable_variables))`.")
            assert_close(result, loss_before, f"{what}, loss returned by step {step}",
                         rtol=1e-4, atol=1e-5)
            assert_close(got_kernel, kernel, f"{what}, kernel after step {step}",
                         rtol=1e-4, atol=1e-5)
            assert_close(model.layers[0].bias.numpy(), bias, f"{what}, bias after step {step}",
                         rtol=1e-4, atol=1e-5)
    passed("train_step", len(cases))


# A case of fit_line: points (x, y), learning rate, number of steps.
FIT_LINE_CASES = [
    {"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.0, 5.0, 7.0], "lr": 0.05, "steps": 50},
    {"x": [-1.0, 0.0, 1.0], "y": [0.5, 0.0, -0.5], "lr": 0.2, "steps": 5},
]


def _numpy_fit_line(x, y, lr, steps):
    """Gradient descent on mean((w * x + b - y) ** 2) from w = b = 0, in float64 NumPy.

    Returns (w, b, losses) with losses[k] the loss before update k.
    """
    x, y = _floats(x), _floats(y)
    w = b = 0.0
    losses = []
    for _ in range(steps):
        residual = w * x + b - y
        losses.append(np.mean(residual ** 2))
        dw, db = 2.0 * np.mean(residual * x), 2.0 * np.mean(residual)
        w, b = w - lr * dw, b - lr * db
    return w, b, losses


@check("fit_line")
def check_fit_line(fn, cases=None, hidden=False):
    """Check ``fit_line(x, y, lr, steps)``: gradient descent on a line with tf.Variable weights.

    Args:
        fn: the student's function; takes 1-D float32 tensors x and y of shape (n,), a Python
            float lr and a Python int steps; returns ``(w, b, losses)``: the two tf.Variables
            (started at 0.0, updated in place) and a list of ``steps`` losses, each the mean
            squared error before its update.
        cases: dicts with keys x, y, lr, steps; default ``FIT_LINE_CASES``.
        hidden: name cases by number in messages.
    Raises:
        CheckFailed: wrong weights or losses; M03 when a weight was rebound to a tensor
            (``w = w - lr * g``), seen as a ``TypeError`` about ``NoneType`` in a later step
            while one step traced as a graph has its gradients, or as weights returned as
            tf.Tensor instead of tf.Variable; M14/M12/M05 when even one step, traced as a
            graph, has no gradient (NumPy in the tape, ...); M20 for an int32 variable.
    """
    __tracebackhide__ = True
    cases = FIT_LINE_CASES if cases is None else cases
    m03 = ("`w = w - lr * dw` makes w a plain tensor: the next tape does not watch it and its "
           "gradient is None.")
    m03_fix = "update the variables in place: `w.assign_sub(lr * dw)` and `b.assign_sub(lr * db)`."
    for i, case in enumerate(cases):
        label = case_label(case, hidden, i)
        what = f"fit_line ({label})"
        args = (_fresh_constant(case["x"]), _fresh_constant(case["y"]), case["lr"], case["steps"])

        def none_gradient(error, case=case):
            """A TypeError about None: a gradient was None. Re-run as a graph to find why;
            when the first step has its gradients, a later step lost them (M03)."""
            if not (isinstance(error, TypeError) and "NoneType" in str(error)):
                return None
            found = explain_missing_gradient(
                lambda: fn(_fresh_constant(case["x"]), _fresh_constant(case["y"]), case["lr"], 1))
            if found:
                return found[0], f"{what}: a gradient was None. {found[1]}", found[2]
            return ("M03", f"{what} raised TypeError ({error}): a gradient was None in a later "
                    f"step. {m03}", m03_fix)

        result = call(fn, *args, what=what, explain=none_gradient)
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            fail(f"{what} should return a tuple (w, b, losses), got {type(result).__name__}.")
        w, b, losses = result
        for name, value in (("w", w), ("b", b)):
            if not isinstance(value, tf.Variable):
                if isinstance(value, tf.Tensor):
                    fail(f"{what}: {name} is a tf.Tensor, not a tf.Variable. {m03}",
                         mistake="M03", fix=m03_fix)
                fail(f"{what}: {name} should be the tf.Variable you trained, got "
                     f"{type(value).__name__}.")
        want_w, want_b, want_losses = _numpy_fit_line(case["x"], case["y"], case["lr"],
                                                      case["steps"])
        if len(losses) != case["steps"]:
            want = "" if hidden else f" ({case['steps']})"
            fail(f"{what}: losses should hold one value per step{want}, got {len(losses)}.")
        assert_close([float(to_numpy(v, "a loss")) for v in losses], want_losses,
                     f"{what}, losses", rtol=1e-4, atol=1e-6)
        assert_close(w, want_w, f"{what}, w", rtol=1e-4, atol=1e-5)
        assert_close(b, want_b, f"{what}, b", rtol=1e-4, atol=1e-5)
    passed("fit_line", len(cases))


# --------------------------------------------------------------------------------------------
# 02 Persistent and nested tapes
# --------------------------------------------------------------------------------------------

GRADS_FROM_ONE_TAPE_CASES = [3.0, -1.0, 0.5]


@check("grads_from_one_tape")
def check_grads_from_one_tape(fn, cases=None, hidden=False):
    """Check ``grads_from_one_tape(x)``: with ``y = x * x`` and ``z = y * y`` recorded once,
    return ``(dz/dx, dy/dx) = (4 x**3, 2 x)`` (108.0 and 6.0 at x = 3).

    Args:
        fn: the student's function; takes a Python float, returns two float scalar tensors.
        cases: Python floats; default ``GRADS_FROM_ONE_TAPE_CASES``.
        hidden: name cases by number in messages.
    Raises:
        CheckFailed: wrong values; M04 on "non-persistent" RuntimeError (two gradient calls on
            one ordinary tape); M01 when a gradient is None (the constant was never watched).
    """
    __tracebackhide__ = True
    cases = GRADS_FROM_ONE_TAPE_CASES if cases is None else cases
    for i, x in enumerate(cases):
        label = case_label(x, hidden, i)
        what = f"grads_from_one_tape ({label})"
        result = call(fn, x, what=what)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            fail(f"{what} should return a tuple (dz_dx, dy_dx), got {type(result).__name__}.")
        dz_dx, dy_dx = result
        if dz_dx is None or dy_dx is None:
            fail(f"{what} returned a None gradient: x is a constant, so the tape must watch it.",
                 mistake="M01", fix="call `tape.watch(x)` inside the block, before y and z are "
                                    "computed.")
        assert_close(dz_dx, 4.0 * x ** 3, f"{what}, dz/dx", check_dtype="float")
        assert_close(dy_dx, 2.0 * x, f"{what}, dy/dx", check_dtype="float")
    passed("grads_from_one_tape", len(cases))


# Scalar functions with their analytic first and second derivatives (NumPy), by name.
SCALAR_FUNCTIONS = {
    "x**3": (lambda x: x ** 3, lambda x: 3 * x ** 2, lambda x: 6 * x),
    "x**4": (lambda x: x ** 4, lambda x: 4 * x ** 3, lambda x: 12 * x ** 2),
    "sin": (tf.sin, np.cos, lambda x: -np.sin(x)),
    "exp": (tf.exp, np.exp, np.exp),
    "tanh": (tf.tanh, lambda x: 1 - np.tanh(x) ** 2,
             lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    "x*sin(x)": (lambda x: x * tf.sin(x), lambda x: np.sin(x) + x * np.cos(x),
                 lambda x: 2 * np.cos(x) - x * np.sin(x)),
}

SECOND_DERIVATIVE_CASES = [("x**3", 1.0), ("x**3", -2.0), ("sin", 0.5)]


@check("second_derivative")
def check_second_derivative(fn, cases=None, hidden=False):
    """Check ``second_derivative(f, x)``: ``(f'(x), f''(x))`` computed with nested tapes.

    Args:
        fn: the student's function; takes a TensorFlow function ``f`` and a float32 scalar
            tf.constant ``x``; returns two float scalar tensors.
        cases: pairs (name, x) with a name of ``SCALAR_FUNCTIONS``; default
            ``SECOND_DERIVATIVE_CASES`` (x**3 at 1.0 gives 3.0 and 6.0).
        hidden: name cases by number in messages.
    Raises:
        CheckFailed: wrong values; M04 on a second gradient call on a non-persistent tape; M01
            when a derivative is None for a constant but not for a tf.Variable (a tape did not
            watch x); M05 when f''(x) is None even for a variable (the inner gradient was
            computed after the outer tape's block closed).
    """
    __tracebackhide__ = True
    cases = SECOND_DERIVATIVE_CASES if cases is None else cases
    for i, (name, x) in enumerate(cases):
        f, df, d2f = SCALAR_FUNCTIONS[name]
        label = case_label(f"f = {name}, x = {x}", hidden, i)
        what = f"second_derivative ({label})"

        def run(arg):
            result = call(fn, f, arg, what=what)
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                fail(f"{what} should return a tuple (dy_dx, d2y_dx2), got "
                     f"{type(result).__name__}.")
            return result

        dy, d2y = run(_fresh_constant(x))
        if dy is None or d2y is None:
            dy_v, d2y_v = run(tf.Variable(np.float32(x)))
            which = "f'(x)" if dy is None else "f''(x)"
            if dy_v is None:
                fail(f"{what}: f'(x) is None even for a tf.Variable.", mistake="M05",
                     fix="compute y = f(x) inside the inner tape's `with` block.")
            if d2y_v is None:
                fail(f"{what}: f''(x) is None: the outer tape never recorded how f'(x) depends "
                     f"on x.", mistake="M05",
                     fix="call `inner.gradient(y, x)` inside the outer tape's `with` block "
                         "(indented under it), and `outer.gradient(dy_dx, x)` after it.")
            fail(f"{what}: {which} is None for a tf.constant x but not for a tf.Variable: "
                 f"x was not watched.", mistake="M01",
                 fix="call `tape.watch(x)` in each tape, first thing inside its `with` block.")
        assert_close(dy, df(np.float64(x)), f"{what}, f'(x)", rtol=1e-4, atol=1e-5,
                     check_dtype="float")
        assert_close(d2y, d2f(np.float64(x)), f"{what}, f''(x)", rtol=1e-4, atol=1e-5,
                     check_dtype="float")
    passed("second_derivative", len(cases))


# A case of product_grads: values of a and b, and whether the variables are trainable.
PRODUCT_GRADS_CASES = [
    {"a": 2.0, "b": 3.0, "trainable": True},
    {"a": [1.0, -2.0], "b": [0.5, 4.0], "trainable": True},
    {"a": 0.5, "b": -4.0, "trainable": False},
]


@check("product_grads")
def check_product_grads(fn, cases=None, hidden=False):
    """Check ``product_grads(a, b)``: the gradients of ``a * b`` with respect to both variables,
    from a tape made with ``watch_accessed_variables=False``: ``[b, a]``.

    Args:
        fn: the student's function; takes two tf.Variables of the same shape (trainable or not)
            and returns a list of two tensors of that shape.
        cases: dicts with keys a, b (array-likes) and trainable (bool); default
            ``PRODUCT_GRADS_CASES``. A non-trainable variable is watched only by an explicit
            ``tape.watch``.
        hidden: name cases by number in messages.
    Raises:
        CheckFailed: wrong values; M06 when one or both gradients are None (a source the tape
            never watched).
    """
    __tracebackhide__ = True
    cases = PRODUCT_GRADS_CASES if cases is None else cases
    for i, case in enumerate(cases):
        label = case_label(case, hidden, i)
        what = f"product_grads ({label})"
        a_value, b_value = _floats(case["a"]), _floats(case["b"])
        a = tf.Variable(a_value.astype(np.float32), trainable=case["trainable"])
        b = tf.Variable(b_value.astype(np.float32), trainable=case["trainable"])
        result = call(fn, a, b, what=what)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            fail(f"{what} should return a list [dy_da, dy_db], got {type(result).__name__}.")
        missing = [name for name, g in zip(("a", "b"), result) if g is None]
        if missing:
            fail(f"{what}: the gradient with respect to {' and '.join(missing)} is None. With "
                 f"`watch_accessed_variables=False` the tape records only what you "
                 f"`tape.watch`.", mistake="M06",
                 fix="watch both sources: `tape.watch(a)` and `tape.watch(b)` (or "
                     "`tape.watch([a, b])`) before computing y.")
        assert_close(result[0], b_value, f"{what}, dy/da", check_dtype="float")
        assert_close(result[1], a_value, f"{what}, dy/db", check_dtype="float")
    passed("product_grads", len(cases))


# Functions R^n -> R for the Hessian exercise, each written with tf ops (any float dtype).
VECTOR_FUNCTIONS = {
    "sum of cubes": lambda x: tf.reduce_sum(x ** 3),
    "square of sum": lambda x: tf.reduce_sum(x) ** 2,
    "rosenbrock": lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2,
    "x0*x1**2+sin(x2)": lambda x: x[0] * x[1] ** 2 + tf.sin(x[2]),
    "log-sum-exp": lambda x: tf.math.reduce_logsumexp(x),
}

HESSIAN_CASES = [("sum of cubes", [1.0, -2.0]), ("square of sum", [1.0, 2.0, 3.0]),
                 ("rosenbrock", [0.5, 1.5])]


def finite_difference_hessian(f, x, h: float = 1e-4) -> np.ndarray:
    """The Hessian of ``f`` at ``x`` by central finite differences, in float64.

    ``H[i, j] ~ (f(x + h e_i + h e_j) - f(x + h e_i - h e_j) - f(x - h e_i + h e_j)
    + f(x - h e_i - h e_j)) / (4 h^2)``: truncation error O(h^2), rounding error about
    1e-16 |f| / h^2; with h = 1e-4 both are far below the checks' tolerance (1e-3).

    Args:
        f: a function of a float64 tensor of shape (n,) returning a scalar.
        x: array-like of shape (n,).
    Returns:
        np.ndarray of shape (n, n), float64.
    """
    x = _floats(x)
    n = x.size
    eye = np.eye(n) * h
    value = lambda point: float(f(tf.constant(point, dtype=tf.float64)))  # noqa: E731
    hessian = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            hessian[i, j] = (value(x + eye[i] + eye[j]) - value(x + eye[i] - eye[j])
                             - value(x - eye[i] + eye[j])
                             + value(x - eye[i] - eye[j])) / (4 * h * h)
    return hessian


@check("hessian")
def check_hessian(fn, cases=None, hidden=False):
    """Check ``hessian(f, x)``: the (n, n) matrix of second derivatives from nested tapes,
    against central finite differences in float64.

    Args:
        fn: the student's function; takes a TensorFlow function ``f`` (shape (n,) -> scalar) and
            a float32 tf.constant ``x`` of shape (n,); returns a float tensor of shape (n, n).
        cases: pairs (name, x) with a name of ``VECTOR_FUNCTIONS``; default ``HESSIAN_CASES``.
        hidden: name cases by number in messages.
    Raises:
        CheckFailed: wrong values or shape; M04 on a second gradient call on a non-persistent
            tape; M01 when the result is None for a constant but not for a tf.Variable; M05 when
            it is None even for a variable (the inner gradient was computed after the outer
            tape's block closed).
    """
    __tracebackhide__ = True
    cases = HESSIAN_CASES if cases is None else cases
    for i, (name, x) in enumerate(cases):
        f = VECTOR_FUNCTIONS[name]
        x = _floats(x)
        label = case_label(f"f = {name}, x = {x.tolist()}", hidden, i)
        what = f"hessian ({label})"

        def run(arg):
            return call(fn, f, arg, what=what)

        result = run(_fresh_constant(x))
        if result is None:
            if run(tf.Variable(x.astype(np.float32))) is not None:
                fail(f"{what} returned None for a tf.constant x but not for a tf.Variable: x "
                     f"was not watched.", mistake="M01", fix="call `tape.watch(x)` in both tapes.")
            fail(f"{what} returned None: the outer tape never recorded how the gradient depends "
                 f"on x.", mistake="M05",
                 fix="compute `g = inner.gradient(y, x)` inside the outer tape's `with` block, "
                     "then `outer.jacobian(g, x)` after it.")
        got = to_numpy(result, what)
        if got.shape != (x.size, x.size):
            hint = (" `outer.gradient(g, x)` sums over the entries of g; use "
                    "`outer.jacobian(g, x)` to keep one row per entry."
                    if got.shape == (x.size,) else "")
            fail(f"{what} should have shape {(x.size, x.size)}, got {got.shape}.{hint}")
        assert_close(got, finite_difference_hessian(f, x), what, rtol=1e-3, atol=1e-3,
                     check_dtype="float")
    passed("hessian", len(cases))
