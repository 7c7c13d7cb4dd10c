"""The checks of assignments 01 and 02 (autograder.checks.tapes) against right and known-wrong
implementations: each right one passes, each wrong one fails with the mistake id of the course
catalogue (autograder/checks/mistakes.py) and a message that names the cause. Real TensorFlow, no
mocks."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from autograder.checks import tapes
from tests.expect import fails_with


# ---------------------------------------------------------------- 01: square_grad

def square_grad(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)


def square_grad_unwatched(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        y = x * x
    return tape.gradient(y, x)


def square_grad_no_cast(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)


def test_square_grad_accepts_watched_float_constant(capsys):
    tapes.check_square_grad(square_grad)
    tapes.check_square_grad(square_grad, cases=[0.25, 7, tf.constant(4.0)], hidden=True)
    out = capsys.readouterr()
    assert "square_grad" in out.out and out.err == ""


def test_square_grad_rejects_unwatched_constant():
    fails_with(tapes.check_square_grad, square_grad_unwatched, "M01", "tape.watch(x)")


def test_square_grad_rejects_integer_input_that_is_not_cast():
    fails_with(tapes.check_square_grad, square_grad_no_cast, "M02", "int32", "tf.float32")


def test_square_grad_rejects_wrong_value():
    error = fails_with(tapes.check_square_grad, lambda x: tf.constant(float(x)), None)
    assert "expected" in str(error)


def test_square_grad_reports_not_implemented():
    def blank(x):
        raise NotImplementedError()
    assert "NotImplementedError" in str(fails_with(tapes.check_square_grad, blank, None))


def test_hidden_messages_do_not_show_inputs():
    error = fails_with(tapes.check_square_grad, square_grad_unwatched, "M01",
                       cases=[12.5], hidden=True)
    assert "hidden case 1" in str(error) and "12.5" not in str(error)


# ---------------------------------------------------------------- 01: sum_squared_grad

def sum_squared_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x)
        z = y ** 2
    return tape.gradient(z, x)


def sum_squared_grad_unwatched(x):
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x)
        z = y ** 2
    return tape.gradient(z, x)


def sum_squared_grad_loss_outside(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x)
    z = y ** 2
    return tape.gradient(z, x)


def sum_squared_grad_numpy(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = np.sum(x) ** 2
    return tape.gradient(z, x)


def test_sum_squared_grad_accepts_chain_rule_gradient():
    tapes.check_sum_squared_grad(sum_squared_grad)
    tapes.check_sum_squared_grad(sum_squared_grad, cases=[[[2.0, -1.0, 0.5]], [3.0]],
                                 hidden=True)


def test_sum_squared_grad_rejects_unwatched_constant():
    fails_with(tapes.check_sum_squared_grad, sum_squared_grad_unwatched, "M01", "tape.watch(x)")


def test_sum_squared_grad_rejects_loss_computed_after_the_block():
    fails_with(tapes.check_sum_squared_grad, sum_squared_grad_loss_outside, "M05",
               "inside the")


def test_sum_squared_grad_explains_computation_that_left_tensorflow():
    fails_with(tapes.check_sum_squared_grad, sum_squared_grad_numpy, "M14", "NumPy")


def test_sum_squared_grad_rejects_wrong_shape():
    error = fails_with(tapes.check_sum_squared_grad,
                       lambda x: 2 * tf.reduce_sum(x), None)
    assert "shape" in str(error)


# ---------------------------------------------------------------- 01: train_step

def train_step(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
        loss_value = loss_object(y, logits)
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss_value


def train_step_loss_outside(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
    loss_value = loss_object(y, logits)
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss_value


def train_step_no_update(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        loss_value = loss_object(y, model(x))
    tape.gradient(loss_value, model.trainable_variables)
    return loss_value


def train_step_fixed_mse(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        loss_value = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss_value


def test_train_step_accepts_one_sgd_step_matching_numpy():
    tapes.check_train_step(train_step)
    tapes.check_train_step(train_step, hidden=True, cases=[
        {"n": 5, "n_in": 4, "n_out": 1, "loss": "mae", "lr": 0.3, "seed": 7}])


def test_train_step_rejects_loss_computed_after_the_block():
    fails_with(tapes.check_train_step, train_step_loss_outside, "M05", "inside")


def test_train_step_rejects_missing_update():
    fails_with(tapes.check_train_step, train_step_no_update, None, "apply_gradients")


def test_train_step_rejects_ignoring_the_loss_object():
    fails_with(tapes.check_train_step, train_step_fixed_mse, None, "expected", hidden=True,
               cases=[{"n": 5, "n_in": 4, "n_out": 1, "loss": "mae", "lr": 0.3, "seed": 7}])


# ---------------------------------------------------------------- 01: fit_line

def fit_line(x, y, lr, steps):
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
        losses.append(float(loss))
    return w, b, losses


def fit_line_rebound(x, y, lr, steps):
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w = w - lr * dw
        b = b - lr * db
        losses.append(float(loss))
    return w, b, losses


def fit_line_rebound_watched(x, y, lr, steps):
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            tape.watch([w, b])
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w, b = w - lr * dw, b - lr * db
        losses.append(float(loss))
    return w, b, losses


def test_fit_line_accepts_in_place_updates():
    tapes.check_fit_line(fit_line)
    tapes.check_fit_line(fit_line, hidden=True, cases=[
        {"x": [0.0, 0.5, 1.0], "y": [2.0, 1.0, 0.0], "lr": 0.1, "steps": 1}])


def test_fit_line_rejects_variable_rebound_to_tensor():
    fails_with(tapes.check_fit_line, fit_line_rebound, "M03", "assign_sub")


def test_fit_line_rejects_tensor_weights_even_when_values_are_right():
    fails_with(tapes.check_fit_line, fit_line_rebound_watched, "M03", "not a tf.Variable")


def test_fit_line_rejects_missing_losses():
    error = fails_with(tapes.check_fit_line, lambda x, y, lr, steps: fit_line(x, y, lr, 1), None)
    assert "one value per step" in str(error)


# ---------------------------------------------------------------- 02: grads_from_one_tape

def grads_from_one_tape(x):
    x = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    dz_dx, dy_dx = tape.gradient(z, x), tape.gradient(y, x)
    del tape
    return dz_dx, dy_dx


def grads_from_one_tape_not_persistent(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    return tape.gradient(z, x), tape.gradient(y, x)


def grads_from_one_tape_unwatched(x):
    x = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
        z = y * y
    return tape.gradient(z, x), tape.gradient(y, x)


def test_grads_from_one_tape_accepts_persistent_tape():
    tapes.check_grads_from_one_tape(grads_from_one_tape)
    tapes.check_grads_from_one_tape(grads_from_one_tape, cases=[2.0, -0.75], hidden=True)


def test_grads_from_one_tape_rejects_second_call_on_non_persistent_tape():
    fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_not_persistent, "M04",
               "persistent=True")


def test_grads_from_one_tape_rejects_unwatched_constant():
    fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_unwatched, "M01", "watch")


# ---------------------------------------------------------------- 02: second_derivative

def second_derivative(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy_dx = inner.gradient(y, x)
    return dy_dx, outer.gradient(dy_dx, x)


def second_derivative_inner_outside(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    dy_dx = inner.gradient(y, x)
    return dy_dx, outer.gradient(dy_dx, x)


def second_derivative_outer_unwatched(f, x):
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy_dx = inner.gradient(y, x)
    return dy_dx, outer.gradient(dy_dx, x)


def second_derivative_one_tape(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
        dy_dx = tape.gradient(y, x)
    return dy_dx, tape.gradient(dy_dx, x)


def test_second_derivative_accepts_nested_tapes():
    tapes.check_second_derivative(second_derivative)
    tapes.check_second_derivative(second_derivative, hidden=True,
                                  cases=[(name, 0.7) for name in tapes.SCALAR_FUNCTIONS])


def test_second_derivative_rejects_inner_gradient_outside_outer_block():
    fails_with(tapes.check_second_derivative, second_derivative_inner_outside, "M05",
               "outer tape")


def test_second_derivative_rejects_outer_tape_that_does_not_watch():
    fails_with(tapes.check_second_derivative, second_derivative_outer_unwatched, "M01", "watch")


def test_second_derivative_rejects_two_calls_on_one_tape():
    fails_with(tapes.check_second_derivative, second_derivative_one_tape, "M04", "persistent")


# ---------------------------------------------------------------- 02: product_grads

def product_grads(a, b):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([a, b])
        y = a * b
    return tape.gradient(y, [a, b])


def product_grads_one_watched(a, b):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * b
    return tape.gradient(y, [a, b])


def product_grads_default_tape(a, b):
    with tf.GradientTape() as tape:
        y = a * b
    return tape.gradient(y, [a, b])


def test_product_grads_accepts_both_sources_watched():
    tapes.check_product_grads(product_grads)
    tapes.check_product_grads(product_grads, hidden=True,
                              cases=[{"a": [[1.0, 2.0]], "b": [[3.0, -1.0]], "trainable": False}])


def test_product_grads_rejects_one_source_watched():
    fails_with(tapes.check_product_grads, product_grads_one_watched, "M06", "respect to b")


def test_product_grads_rejects_unwatched_non_trainable_variables():
    fails_with(tapes.check_product_grads, product_grads_default_tape, "M06", "a and b",
               cases=[{"a": 1.0, "b": 2.0, "trainable": False}])


# ---------------------------------------------------------------- 02: hessian

def hessian(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.jacobian(g, x)


def hessian_inner_outside(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    g = inner.gradient(y, x)
    return outer.jacobian(g, x)


def hessian_outer_unwatched(f, x):
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.jacobian(g, x)


def hessian_with_gradient(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.gradient(g, x)


def test_finite_difference_hessian_matches_analytic_hessian():
    x = np.array([0.3, -1.2, 0.8])
    want = np.array([[0, 2 * x[1], 0], [2 * x[1], 2 * x[0], 0], [0, 0, -np.sin(x[2])]])
    got = tapes.finite_difference_hessian(tapes.VECTOR_FUNCTIONS["x0*x1**2+sin(x2)"], x)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_hessian_accepts_nested_tapes_with_jacobian():
    tapes.check_hessian(hessian)
    tapes.check_hessian(hessian, hidden=True, cases=[("x0*x1**2+sin(x2)", [0.3, -1.2, 0.8]),
                                                     ("log-sum-exp", [0.0, 1.0, -1.0])])


def test_hessian_rejects_inner_gradient_outside_outer_block():
    fails_with(tapes.check_hessian, hessian_inner_outside, "M05", "outer tape")


def test_hessian_rejects_outer_tape_that_does_not_watch():
    fails_with(tapes.check_hessian, hessian_outer_unwatched, "M01", "watch")


def test_hessian_explains_gradient_instead_of_jacobian():
    fails_with(tapes.check_hessian, hessian_with_gradient, None, "jacobian")


def test_hidden_integer_case_message_does_not_show_the_input():
    error = fails_with(tapes.check_square_grad, square_grad_no_cast, "M02", cases=[17],
                       hidden=True)
    assert "17" not in str(error)
