"""Checks of assignment 05, deep learning software: NumPy vs TensorFlow gradients, weights as
variables updated in place inside a ``tf.function``, optimizers, and ``tf.custom_gradient``.

Reference values come from mathematics, computed independently of the student's method: the
computational graph ``c = sum(x * y + z)`` has the analytic gradients ``(y, x, 1)``; the two-layer
network's gradients come from TensorFlow's automatic differentiation in float64 (for a derivation
by hand in NumPy) and optimizer trajectories from the update rules written in NumPy.

Every check has the signature ``check_<name>(fn, cases=None, hidden=False)``: ``fn`` is the
student's function, ``cases`` replaces the default (visible) inputs, ``hidden=True`` names cases by
number only. Failing raises :class:`~autograder.checks.compare.CheckFailed`; passing prints one line.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from .compare import assert_close, case_label, fail, passed, to_numpy
from .harness import call, check, explain_missing_gradient, is_tf_function

__all__ = [
    "check_graph_backward_numpy",
    "check_graph_backward_tape",
    "check_two_layer_numpy",
    "check_sgd_step",
    "check_train_with_optimizer",
    "check_relu_custom",
    "two_layer_problem",
]


# ----------------------------------------------------------------------------- shared helpers
def _unpack(result, n: int, name: str, names: str):
    """Check that ``result`` is a tuple/list of ``n`` values and return it as a tuple."""
    __tracebackhide__ = True
    if not isinstance(result, (tuple, list)) or len(result) != n:
        got = f"a {type(result).__name__}" if not isinstance(result, (tuple, list)) \
            else f"{len(result)} values"
        fail(f"{name} should return {n} values ({names}), got {got}.")
    return tuple(result)


def two_layer_problem(seed: int = 0, n: int = 64, d: int = 1000, h: int = 100,
                      dtype=np.float32):
    """Random data and weights of the two-layer ReLU network of CS231n's lecture on deep learning
    software: ``x, y`` of shape ``(n, d)`` and ``w1 (d, h)``, ``w2 (h, d)``, all standard normal
    from ``np.random.default_rng(seed)``. Returns NumPy arrays ``(x, y, w1, w2)`` of ``dtype``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = rng.standard_normal((n, d))
    w1 = rng.standard_normal((d, h))
    w2 = rng.standard_normal((h, d))
    return tuple(a.astype(dtype) for a in (x, y, w1, w2))


def _two_layer_reference(x, y, w1, w2):
    """Loss and gradients of ``mean(sum((relu(x @ w1) @ w2 - y)^2, axis=1))`` by TensorFlow's
    automatic differentiation in float64 (independent of any derivation by hand).
    Returns NumPy ``(loss, grad_w1, grad_w2)``."""
    x, y = (tf.constant(np.asarray(a, np.float64)) for a in (x, y))
    v1, v2 = (tf.Variable(np.asarray(a, np.float64)) for a in (w1, w2))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.reduce_sum((tf.nn.relu(x @ v1) @ v2 - y) ** 2, axis=1))
    g1, g2 = tape.gradient(loss, [v1, v2])
    return float(loss), g1.numpy(), g2.numpy()


def _scale(got: np.ndarray, want: np.ndarray) -> float | None:
    """The factor ``s`` with ``got ~ s * want`` (least squares), or None when not defined."""
    denominator = float(np.sum(want * want))
    if denominator == 0 or got.shape != want.shape:
        return None
    return float(np.sum(got * want)) / denominator


def _scalar(value, what: str) -> float:
    """``value`` as a Python float; fails when it is not one number (e.g. a sum over one axis)."""
    __tracebackhide__ = True
    array = to_numpy(value, what)
    if array.size != 1:
        fail(f"{what} should be one number (the sum over every entry), got shape {array.shape}.")
    return float(array.reshape(()))


def _close(a, b, rtol=1e-4) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=rtol * (np.abs(b).max() + 1e-12))


# ------------------------------------------------------------------ 1. the graph in NumPy
def _graph_cases():
    rng = np.random.default_rng(5)
    return [tuple(rng.standard_normal((3, 4)) for _ in range(3))]


@check("graph_backward_numpy")
def check_graph_backward_numpy(fn, cases=None, hidden=False):
    """Check ``fn(x, y, z) -> (c, grad_x, grad_y, grad_z)``: the forward and backward pass of
    ``a = x * y; b = a + z; c = sum(b)`` by hand in NumPy.

    Args:
        fn: the student's function; inputs are NumPy float64 arrays of one shape ``(N, D)``.
        cases: list of ``(x, y, z)`` tuples; default one ``3 x 4`` case.
    Expected (analytic): ``c = sum(x * y + z)`` (a scalar), ``grad_x = y``, ``grad_y = x``,
    ``grad_z = ones_like(z)``, each of shape ``(N, D)``.
    """
    __tracebackhide__ = True
    cases = _graph_cases() if cases is None else cases
    for index, (x, y, z) in enumerate(cases):
        label = case_label(f"x, y, z of shape {np.shape(x)}", hidden, index)
        result = call(fn, np.array(x), np.array(y), np.array(z),
                      what=f"graph_backward_numpy ({label})")
        c, gx, gy, gz = _unpack(result, 4, "graph_backward_numpy", "c, grad_x, grad_y, grad_z")
        assert_close(_scalar(c, f"c for {label}"), np.sum(x * y + z), f"c for {label}",
                     rtol=1e-6)
        gz_np = to_numpy(gz, "grad_z")
        if gz_np.shape != np.shape(z):
            fail(f"grad_z for {label} should have the shape of z, {np.shape(z)}, got shape "
                 f"{gz_np.shape}. Every entry of z adds to c once, so dc/dz is an array of ones "
                 "shaped like z: grad_z = np.ones_like(z) (not the number 1).")
        gx_np, gy_np = to_numpy(gx, "grad_x"), to_numpy(gy, "grad_y")
        if _close(gx_np, x) and _close(gy_np, y) and not _close(x, y):
            fail(f"grad_x and grad_y for {label} are swapped: dc/dx = y (the other factor of "
                 "a = x * y) and dc/dy = x.")
        assert_close(gx_np, y, f"grad_x for {label} (dc/dx = y)", rtol=1e-6)
        assert_close(gy_np, x, f"grad_y for {label} (dc/dy = x)", rtol=1e-6)
        assert_close(gz_np, np.ones_like(z), f"grad_z for {label} (dc/dz = 1)", rtol=1e-6)
    passed("graph_backward_numpy", len(cases))


# --------------------------------------------------------------- 2. the same graph on a tape
def _tape_cases():
    rng = np.random.default_rng(6)
    return [tuple(tf.constant(rng.standard_normal((3, 4)), tf.float32) for _ in range(3))]


@check("graph_backward_tape")
def check_graph_backward_tape(fn, cases=None, hidden=False):
    """Check ``fn(x, y, z) -> (c, grad_x, grad_y, grad_z)`` computed with ``tf.GradientTape`` on
    ``tf.constant`` inputs.

    Args:
        fn: the student's function; inputs are float32 ``tf.constant`` tensors of shape ``(N, D)``.
        cases: list of ``(x, y, z)`` tuples of tensors; default one ``3 x 4`` case.
    Mistakes named: M01 (constants never watched: gradients ``None``, but a call with
    ``tf.Variable`` inputs works); ``None`` even for variables, the cause found by re-tracing:
    M05 (``c`` computed outside the tape's ``with`` block), M12, M13; M14 (NumPy inside the
    tape, e.g. ``np.sum``).
    """
    __tracebackhide__ = True
    cases = _tape_cases() if cases is None else cases
    for index, (x, y, z) in enumerate(cases):
        label = case_label(f"x, y, z of shape {tuple(x.shape)}", hidden, index)
        what = f"graph_backward_tape ({label})"
        c, gx, gy, gz = _unpack(call(fn, x, y, z, what=what), 4, "graph_backward_tape",
                                "c, grad_x, grad_y, grad_z")
        if gx is None or gy is None or gz is None:
            retry = _unpack(call(fn, *[tf.Variable(t) for t in (x, y, z)], what=what), 4,
                            "graph_backward_tape", "c, grad_x, grad_y, grad_z")[1:]
            if all(g is not None for g in retry):
                fail(f"a gradient for {label} is None: x, y and z are tf.constant tensors, which "
                     "the tape does not watch (with tf.Variable inputs your function works).",
                     mistake="M01", fix="call tape.watch(x), tape.watch(y), tape.watch(z) at "
                                        "the start of the with block.")
            found = explain_missing_gradient(
                lambda: fn(*[tf.Variable(t) for t in (x, y, z)])) or (
                "M05", "The tape recorded nothing that links c to the inputs.",
                "compute a, b and c inside the `with tf.GradientTape() as tape:` block, with "
                "TensorFlow ops (not NumPy), and call tape.gradient after it.")
            fail(f"a gradient for {label} is None, even for tf.Variable inputs. {found[1]}",
                 mistake=found[0], fix=found[2])
        xn, yn, zn = x.numpy(), y.numpy(), z.numpy()
        assert_close(_scalar(c, f"c for {label}"), np.sum(xn * yn + zn), f"c for {label}",
                     rtol=1e-5)
        assert_close(gx, yn, f"grad_x for {label} (dc/dx = y)")
        assert_close(gy, xn, f"grad_y for {label} (dc/dy = x)")
        assert_close(gz, np.ones_like(zn), f"grad_z for {label} (dc/dz = 1)")
    passed("graph_backward_tape", len(cases))


# ------------------------------------------------------------- 3. two-layer network by hand
def _two_layer_cases():
    return [two_layer_problem(seed=1, n=8, d=6, h=5, dtype=np.float64)]


@check("two_layer_numpy")
def check_two_layer_numpy(fn, cases=None, hidden=False):
    """Check ``fn(x, y, w1, w2) -> (loss, grad_w1, grad_w2)``: forward and backward pass of
    ``h = relu(x @ w1); y_pred = h @ w2; loss = mean(sum((y_pred - y)^2, axis=1))`` by hand in NumPy.

    Args:
        fn: the student's function; inputs are NumPy float64 arrays ``x, y (N, D)``,
            ``w1 (D, H)``, ``w2 (H, D)``.
        cases: list of ``(x, y, w1, w2)``; default a small ``N, D, H = 8, 6, 5`` problem.
    Reference: TensorFlow's GradientTape in float64. Messages name the usual slips: the mean's
    ``1/N`` or the square's ``2`` forgotten, the ReLU mask missing, transposes that change shapes.
    """
    __tracebackhide__ = True
    cases = _two_layer_cases() if cases is None else cases
    for index, (x, y, w1, w2) in enumerate(cases):
        n, d = np.shape(x)
        label = case_label(f"N, D, H = {n}, {d}, {np.shape(w1)[1]}", hidden, index)
        loss, g1, g2 = _unpack(call(fn, *(np.array(a) for a in (x, y, w1, w2)),
                                    what=f"two_layer_numpy ({label})"), 3,
                               "two_layer_numpy", "loss, grad_w1, grad_w2")
        want_loss, want_g1, want_g2 = _two_layer_reference(x, y, w1, w2)
        loss_np = to_numpy(loss, "loss")
        if loss_np.size != 1:
            fail(f"loss for {label} should be one number, got shape {loss_np.shape}: "
                 "sum the squares over axis=1, then take the mean over the N examples.")
        loss_value = float(loss_np.reshape(()))
        if not np.isclose(loss_value, want_loss, rtol=1e-6):
            if np.isclose(loss_value, want_loss * n, rtol=1e-6):
                fail(f"loss for {label} is N = {n} times too large: take the mean over the "
                     "examples (np.mean of the per-example sums), not the total sum.")
            if np.isclose(loss_value, want_loss / d, rtol=1e-6):
                fail(f"loss for {label} is D = {d} times too small: sum the squared errors over "
                     "axis=1 first, then average over the examples.")
            fail(f"loss for {label}: expected {want_loss:.6g}, got {loss_value:.6g}.")
        for name, got, want, shape_hint in (
                ("grad_w1", g1, want_g1, "x.T @ grad_h"), ("grad_w2", g2, want_g2, "h.T @ grad_y_pred")):
            got_np = to_numpy(got, name)
            if got_np.shape != want.shape:
                fail(f"{name} for {label} should have the shape of the weight, {want.shape}, got "
                     f"{got_np.shape}. Check the transposes: {name} = {shape_hint}.")
            if _close(got_np, want, rtol=1e-6):
                continue
            scale = _scale(got_np, want)
            if scale is not None and _close(got_np, scale * want, rtol=1e-6):
                if np.isclose(scale, n):
                    fail(f"{name} for {label} is N = {n} times too large: the loss is a mean, "
                         f"so grad_y_pred = 2 * (y_pred - y) / N.")
                if np.isclose(scale, 0.5):
                    fail(f"{name} for {label} is half the right value: d(e^2)/de = 2e, so "
                         "grad_y_pred = 2 * (y_pred - y) / N.")
                if np.isclose(scale, 0.5 * n):
                    fail(f"{name} for {label} is N/2 times too large: grad_y_pred = "
                         "2 * (y_pred - y) / N (the factor 2 of the square and the 1/N of the mean).")
                if np.isclose(scale, -1):
                    fail(f"{name} for {label} has the wrong sign: grad_y_pred = 2 * (y_pred - y) / N.")
            if name == "grad_w1":
                x64 = np.asarray(x, np.float64)
                h = np.maximum(x64 @ w1, 0)
                grad_y_pred = 2 * (h @ w2 - y) / n
                no_mask = x64.T @ (grad_y_pred @ np.asarray(w2).T)
                if _close(got_np, no_mask, rtol=1e-6):
                    fail(f"grad_w1 for {label} ignores the ReLU: its gradient is 0 where "
                         "x @ w1 < 0. Set grad_h[x @ w1 < 0] = 0 (or multiply by the mask) "
                         "before grad_w1 = x.T @ grad_h.")
            assert_close(got_np, want, f"{name} for {label}", rtol=1e-6, atol=1e-8)
    passed("two_layer_numpy", len(cases))


# ------------------------------------------------------ 4. one SGD step with assign_sub
def _sgd_cases():
    # (seed, N, D, H, learning rate, steps); weights are scaled so this learning rate converges.
    return [(2, 16, 20, 8, 0.01, 3)]


def _scaled_problem(seed, n, d, h):
    x, y, w1, w2 = two_layer_problem(seed=seed, n=n, d=d, h=h)
    return x, y, (w1 / np.sqrt(d)).astype(np.float32), (w2 / np.sqrt(h)).astype(np.float32)


@check("sgd_step")
def check_sgd_step(fn, cases=None, hidden=False):
    """Check the ``tf.function`` ``fn(x, y, w1, w2, lr) -> loss``: one gradient-descent step of the
    two-layer network that updates the ``tf.Variable`` weights in place.

    The check calls ``fn`` as a graph several times in a row (``steps`` per case) and verifies
    after every call that it returned the loss at the weights before the step and that each
    variable moved by exactly ``-lr * gradient`` (gradients from float64 automatic
    differentiation), then that the loss fell.

    Args:
        fn: the student's function, decorated with ``@tf.function``; ``x, y``: float32 tensors
            ``(N, D)``; ``w1 (D, H)``, ``w2 (H, D)``: float32 ``tf.Variable``; ``lr``: Python float.
        cases: list of ``(seed, N, D, H, lr, steps)``.
    Mistakes named: M03 (the variables never change: ``w1 = w1 - lr * g`` rebinds a name to a new
    tensor instead of ``w1.assign_sub(lr * g)``), M07 (a variable created inside the function).
    """
    __tracebackhide__ = True
    if not is_tf_function(fn):
        fail("sgd_step is not a tf.function, so the whole step (forward, backward and the "
             "in-place updates) would not run as one graph.",
             fix="put @tf.function on the line above `def sgd_step`.")
    cases = _sgd_cases() if cases is None else cases
    for index, (seed, n, d, h, lr, steps) in enumerate(cases):
        label = case_label(f"N, D, H = {n}, {d}, {h}, lr = {lr}", hidden, index)
        x, y, w1_0, w2_0 = _scaled_problem(seed, n, d, h)
        w1, w2 = tf.Variable(w1_0), tf.Variable(w2_0)
        losses = []
        for step in range(steps):
            before1, before2 = w1.numpy().copy(), w2.numpy().copy()
            want_loss, g1, g2 = _two_layer_reference(x, y, before1, before2)
            loss = call(fn, tf.constant(x), tf.constant(y), w1, w2, lr,
                        what=f"sgd_step ({label}, call {step + 1})")
            if not isinstance(w1, tf.Variable) or not isinstance(w2, tf.Variable):
                fail("w1 and w2 must stay tf.Variable objects.", mistake="M03")
            unchanged = [name for name, v, b in (("w1", w1, before1), ("w2", w2, before2))
                         if np.array_equal(v.numpy(), b)]
            if unchanged:
                fail(f"after call {step + 1} of sgd_step for {label}, {' and '.join(unchanged)} "
                     "did not change: the parameters never update. Inside a function, "
                     "`w1 = w1 - lr * g` only rebinds the local name to a new tensor; the "
                     "variable itself is untouched.", mistake="M03",
                     fix="update in place: w1.assign_sub(lr * g1).")
            loss_np = to_numpy(loss, "the loss returned by sgd_step")
            if loss_np.size != 1:
                fail(f"sgd_step should return the loss (one number), got shape {loss_np.shape}.")
            loss_value = float(loss_np.reshape(()))
            after_loss = _two_layer_reference(x, y, w1.numpy(), w2.numpy())[0]
            if not np.isclose(loss_value, want_loss, rtol=1e-4):
                if np.isclose(loss_value, after_loss, rtol=1e-4):
                    fail(f"sgd_step for {label} returned the loss after the update; return the "
                         "loss computed in the forward pass, before the weights change.")
                fail(f"the loss returned by call {step + 1} for {label}: expected "
                     f"{want_loss:.6g}, got {loss_value:.6g}.")
            for name, v, b, g in (("w1", w1, before1, g1), ("w2", w2, before2, g2)):
                moved = v.numpy().astype(np.float64) - b
                want = -lr * g
                if _close(moved, -want, rtol=1e-3):
                    fail(f"{name} moved uphill for {label}: subtract the gradient "
                         f"({name}.assign_sub(lr * grad)), do not add it.")
                assert_close(moved, want, f"the change of {name} in call {step + 1} for {label} "
                             "(expected -lr * gradient)", rtol=1e-3,
                             atol=1e-3 * float(np.abs(want).max()) + 1e-7)
            losses.append(loss_value)
        if steps > 1 and not losses[-1] < losses[0]:
            fail(f"the loss did not fall over {steps} steps for {label}: {losses}.")
    passed("sgd_step", len(cases))


# -------------------------------------------------- 5. training with a Keras optimizer
def _optimizer_cases():
    # (optimizer class name, keyword arguments, seed, N, D, H, steps)
    return [("SGD", {"learning_rate": 0.01}, 3, 16, 20, 8, 5),
            ("Adam", {"learning_rate": 0.01}, 3, 16, 20, 8, 5)]


def _reference_trajectory(name, kwargs, x, y, w1, w2, steps):
    """Losses of ``steps`` updates with SGD (optionally momentum / Nesterov, Keras's formulas:
    ``m = momentum * m - lr * g``; ``w += m`` or, with Nesterov, ``w += momentum * m - lr * g``).
    Returns None for optimizers without a reference trajectory (the check then only asks the loss
    to fall)."""
    if name != "SGD":
        return None
    lr, momentum = kwargs.get("learning_rate", 0.01), kwargs.get("momentum", 0.0)
    nesterov = kwargs.get("nesterov", False)
    w = [np.asarray(w1, np.float64), np.asarray(w2, np.float64)]
    m = [np.zeros_like(a) for a in w]
    losses = []
    for _ in range(steps):
        loss, *grads = _two_layer_reference(x, y, *w)
        losses.append(loss)
        for i, g in enumerate(grads):
            m[i] = momentum * m[i] - lr * g
            w[i] = w[i] + (momentum * m[i] - lr * g if nesterov else m[i])
    return losses


@check("train_with_optimizer")
def check_train_with_optimizer(fn, cases=None, hidden=False):
    """Check ``fn(optimizer, x, y, w1, w2, steps) -> losses``: ``steps`` updates of the two-layer
    network's ``tf.Variable`` weights with a Keras optimizer, returning the loss before each update.

    Args:
        fn: the student's function; ``optimizer``: a new ``tf.keras.optimizers`` object per case;
            ``x, y``: float32 tensors ``(N, D)``; ``w1, w2``: float32 ``tf.Variable``;
            ``steps``: int.
        cases: list of ``(optimizer name, kwargs, seed, N, D, H, steps)``.
    Expected: a list of ``steps`` numbers; for SGD (with or without momentum) they follow the
    update rule computed in NumPy; for every optimizer the loss falls and the variables change.
    Mistakes named: when the optimizer gets no gradients, the cause found by re-running one step
    as a graph (M05 loss outside the tape, M12, M13, M14); M07 (the optimizer's slot variables
    created on a later call of one shared tf.function).
    """
    __tracebackhide__ = True
    cases = _optimizer_cases() if cases is None else cases
    for index, (name, kwargs, seed, n, d, h, steps) in enumerate(cases):
        label = case_label(f"{name}({kwargs}), N, D, H = {n}, {d}, {h}", hidden, index)
        x, y, w1_0, w2_0 = _scaled_problem(seed, n, d, h)
        w1, w2 = tf.Variable(w1_0), tf.Variable(w2_0)
        optimizer = getattr(tf.keras.optimizers, name)(**kwargs)
        def fresh_run(name=name, kwargs=kwargs, x=x, y=y, w1_0=w1_0, w2_0=w2_0):
            return fn(getattr(tf.keras.optimizers, name)(**kwargs), tf.constant(x),
                      tf.constant(y), tf.Variable(w1_0), tf.Variable(w2_0), 1)

        losses = call(fn, optimizer, tf.constant(x), tf.constant(y), w1, w2, steps,
                      what=f"train_with_optimizer ({label})", rerun=fresh_run,
                      explain=lambda error, label=label: _shared_step(error, label))
        if losses is None or not hasattr(losses, "__len__"):
            fail(f"train_with_optimizer should return the list of losses, got "
                 f"{type(losses).__name__}.")
        values = [float(to_numpy(v, "a loss").reshape(())) for v in losses]
        if len(values) != steps:
            fail(f"expected {steps} losses (one per step) for {label}, got {len(values)}.")
        if np.array_equal(w1.numpy(), w1_0) and np.array_equal(w2.numpy(), w2_0):
            fail(f"w1 and w2 did not change for {label}: the parameters never update. Call "
                 "optimizer.apply_gradients(zip(grads, [w1, w2])) in every step.")
        initial = _two_layer_reference(x, y, w1_0, w2_0)[0]
        if not np.isclose(values[0], initial, rtol=1e-4):
            fail(f"the first loss for {label} should be the loss at the initial weights, "
                 f"{initial:.6g}, got {values[0]:.6g}: record the loss before applying the update.")
        reference = _reference_trajectory(name, kwargs, x, y, w1_0, w2_0, steps)
        if reference is not None:
            assert_close(values, reference, f"the losses for {label}", rtol=2e-3, atol=1e-6)
        if steps > 1 and not values[-1] < values[0]:
            fail(f"the loss did not fall for {label}: {np.round(values, 4).tolist()}.")
    passed("train_with_optimizer", len(cases))


def _shared_step(error, label):
    """M07 as train_with_optimizer meets it: one tf.function shared by several optimizers."""
    if isinstance(error, ValueError) and ("singleton" in str(error)
                                          or "non-first call" in str(error)):
        return ("M07", f"creating the optimizer's variables failed for {label}: one tf.function "
                "shared by several optimizers creates their slot variables on a later call.",
                "define the decorated step inside train_with_optimizer (a new tf.function per "
                "call), or call optimizer.build([w1, w2]) first.")


# ------------------------------------------------------------- 6. custom gradient of ReLU
def _relu_cases():
    return [(np.array([-2.0, -0.5, 0.5, 3.0], np.float32), np.array([1.0, 2.0, 3.0, 4.0], np.float32))]


def _uses_custom_gradient(fn, x) -> bool:
    """Whether tracing ``fn`` puts the ``IdentityN`` op that ``tf.custom_gradient`` uses to attach
    its gradient into the graph."""
    graph = tf.function(fn).get_concrete_function(tf.TensorSpec(x.shape, tf.float32)).graph
    return any(op.type == "IdentityN" for op in graph.get_operations())


def _bool_mask(error, mode, label):
    """A backward that multiplies by a boolean mask (TypeError or ValueError naming bool)."""
    if isinstance(error, (TypeError, ValueError)) and "bool" in str(error):
        return (None, f"the backward of relu_custom failed {mode} for {label}: a comparison such "
                "as x > 0 gives booleans, which cannot multiply floats.",
                "cast the mask to x's dtype before multiplying (tf.cast(x > 0, x.dtype)).")


@check("relu_custom")
def check_relu_custom(fn, cases=None, hidden=False):
    """Check ``fn(x) -> relu(x)`` defined with ``@tf.custom_gradient`` and its own backward.

    For each case ``(x, w)`` the check computes ``loss = sum(fn(x) * w)`` so that the upstream
    gradient is ``w`` (not ones), and compares value and gradient with ``tf.nn.relu``'s
    (``max(x, 0)`` and ``w * (x > 0)``), eagerly and inside a ``tf.function`` called twice.

    Args:
        fn: the student's function; ``x``: float32 tensor of any shape (no exact zeros in cases).
        cases: list of ``(x, w)`` float32 NumPy arrays of one shape.
    """
    __tracebackhide__ = True
    cases = _relu_cases() if cases is None else cases

    def value_and_grad(x, w):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = fn(x)
            loss = tf.reduce_sum(out * w)
        return out, tape.gradient(loss, x)

    graph_version = tf.function(value_and_grad)
    for index, (x_np, w_np) in enumerate(cases):
        label = case_label(f"x = {np.round(x_np, 3).tolist()}", hidden, index)
        x, w = tf.constant(x_np, tf.float32), tf.constant(w_np, tf.float32)
        want_out, want_grad = np.maximum(x_np, 0), w_np * (x_np > 0)
        for mode, run in (("eagerly", value_and_grad), ("in a tf.function", graph_version),
                          ("in a tf.function, second call", graph_version)):
            out, grad = call(run, x, w, what=f"relu_custom {mode} ({label})",
                             explain=lambda error, mode=mode: _bool_mask(error, mode, label))
            assert_close(out, want_out, f"relu_custom({label}) {mode}", check_dtype="float")
            grad_np = to_numpy(grad, f"the gradient of relu_custom for {label}")
            if not np.issubdtype(grad_np.dtype, np.floating):
                fail(f"the gradient of relu_custom for {label} has dtype {grad_np.dtype}, "
                     "not float32: a comparison such as x > 0 gives booleans; cast the mask to "
                     "x's dtype before multiplying (tf.cast(x > 0, x.dtype)).")
            if _close(grad_np, w_np, rtol=1e-6) and not _close(w_np, want_grad):
                fail(f"the gradient of relu_custom for {label} passes the upstream gradient "
                     "through where x < 0: the backward must multiply it by the mask (x > 0).")
            if _close(grad_np, (x_np > 0).astype(np.float32), rtol=1e-6) \
                    and not _close(want_grad, (x_np > 0)):
                fail(f"the gradient of relu_custom for {label} ignores the upstream gradient: "
                     "by the chain rule the backward returns upstream * mask, not the mask alone.")
            assert_close(grad_np, want_grad, f"the gradient of relu_custom for {label} {mode} "
                         "(expected upstream * (x > 0))")
    if not _uses_custom_gradient(fn, tf.constant(cases[0][0])):
        fail("relu_custom gives the right values but does not define its own backward: decorate "
             "it with @tf.custom_gradient and return (y, grad_fn).")
    passed("relu_custom", len(cases))
