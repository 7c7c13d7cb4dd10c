"""The checks of 05 (deep learning software) against right and known-wrong implementations."""
import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import software as checks
from autograder.checks.compare import CheckFailed
from tests.expect import fails


# ------------------------------------------------------------------ graph in NumPy
def graph_numpy(x, y, z):
    a = x * y
    b = a + z
    return np.sum(b), y, x, np.ones_like(z)


def test_graph_backward_numpy_accepts_analytic_gradients(capsys):
    checks.check_graph_backward_numpy(graph_numpy)
    assert "graph_backward_numpy: 1 case passed" in capsys.readouterr().out


def test_graph_backward_numpy_rejects_scalar_grad_z():
    fails(checks.check_graph_backward_numpy,
          lambda x, y, z: (np.sum(x * y + z), y, x, 1.0), says="shape of z")


def test_graph_backward_numpy_rejects_swapped_gradients():
    fails(checks.check_graph_backward_numpy,
          lambda x, y, z: (np.sum(x * y + z), x, y, np.ones_like(z)), says="swapped")


def test_graph_backward_numpy_rejects_sum_over_one_axis():
    fails(checks.check_graph_backward_numpy,
          lambda x, y, z: (np.sum(x * y + z, axis=0), y, x, np.ones_like(z)), says="one number")


def test_graph_backward_numpy_hidden_messages_hide_inputs():
    rng = np.random.default_rng(0)
    case = tuple(rng.standard_normal((2, 5)) for _ in range(3))
    with pytest.raises(CheckFailed) as info:
        checks.check_graph_backward_numpy(lambda x, y, z: (np.sum(x), y, x, np.ones_like(z)),
                                          cases=[case], hidden=True)
    assert "hidden case 1" in str(info.value)


# ------------------------------------------------------------------ graph on a tape
def graph_tape(x, y, z):
    with tf.GradientTape() as tape:
        tape.watch([x, y, z])
        c = tf.reduce_sum(x * y + z)
    return (c, *tape.gradient(c, [x, y, z]))


def test_graph_backward_tape_accepts_watched_constants(capsys):
    checks.check_graph_backward_tape(graph_tape)
    assert "passed" in capsys.readouterr().out


def test_graph_backward_tape_names_unwatched_constants():
    def unwatched(x, y, z):
        with tf.GradientTape() as tape:
            c = tf.reduce_sum(x * y + z)
        return (c, *tape.gradient(c, [x, y, z]))
    fails(checks.check_graph_backward_tape, unwatched, "M01", "tape.watch")


def test_graph_backward_tape_names_loss_outside_the_block():
    def outside(x, y, z):
        with tf.GradientTape() as tape:
            tape.watch([x, y, z])
        c = tf.reduce_sum(x * y + z)
        return (c, *tape.gradient(c, [x, y, z]))
    fails(checks.check_graph_backward_tape, outside, "M05", "inside")


# ------------------------------------------------------------ two-layer network by hand
def two_layer(x, y, w1, w2, mean=True, factor=2.0, mask=True, transpose_bug=False):
    n = x.shape[0]
    pre = x @ w1
    h = np.maximum(pre, 0)
    y_pred = h @ w2
    per_example = np.sum((y_pred - y) ** 2, axis=1)
    loss = per_example.mean() if mean else per_example.sum()
    grad_y_pred = factor * (y_pred - y) / (n if mean else 1)
    grad_w2 = h.T @ grad_y_pred
    grad_h = grad_y_pred @ w2.T
    if mask:
        grad_h = grad_h * (pre > 0)
    grad_w1 = x.T @ grad_h
    return loss, (grad_w1.T if transpose_bug else grad_w1), grad_w2


def test_two_layer_numpy_accepts_hand_gradients(capsys):
    checks.check_two_layer_numpy(two_layer)
    checks.check_two_layer_numpy(two_layer, cases=[checks.two_layer_problem(
        seed=9, n=64, d=1000, h=100, dtype=np.float64)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_two_layer_numpy_rejects_missing_relu_mask():
    fails(checks.check_two_layer_numpy, lambda *a: two_layer(*a, mask=False), says="relu")


def test_two_layer_numpy_rejects_missing_factor_two():
    fails(checks.check_two_layer_numpy, lambda *a: two_layer(*a, factor=1.0), says="half")


def test_two_layer_numpy_rejects_gradient_without_mean():
    def no_mean_in_grad(x, y, w1, w2):
        loss, g1, g2 = two_layer(x, y, w1, w2)
        return loss, g1 * x.shape[0], g2 * x.shape[0]
    fails(checks.check_two_layer_numpy, no_mean_in_grad, says="times too large")


def test_two_layer_numpy_rejects_summed_loss():
    fails(checks.check_two_layer_numpy, lambda *a: two_layer(*a, mean=False), says="mean")


def test_two_layer_numpy_rejects_transposed_gradient_shape():
    fails(checks.check_two_layer_numpy, lambda *a: two_layer(*a, transpose_bug=True),
          says="should have the shape")


# --------------------------------------------------------------- sgd_step in place
def tf_loss(x, y, w1, w2):
    return tf.reduce_mean(tf.reduce_sum((tf.nn.relu(x @ w1) @ w2 - y) ** 2, axis=1))


@tf.function
def sgd_step(x, y, w1, w2, lr):
    with tf.GradientTape() as tape:
        loss = tf_loss(x, y, w1, w2)
    g1, g2 = tape.gradient(loss, [w1, w2])
    w1.assign_sub(lr * g1)
    w2.assign_sub(lr * g2)
    return loss


def test_sgd_step_accepts_assign_sub(capsys):
    checks.check_sgd_step(sgd_step)
    checks.check_sgd_step(sgd_step, cases=[(7, 32, 12, 6, 0.02, 4)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_sgd_step_names_rebound_weights():
    @tf.function
    def rebinding(x, y, w1, w2, lr):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1 = w1 - lr * g1
        w2 = w2 - lr * g2
        return loss
    fails(checks.check_sgd_step, rebinding, "M03", "assign_sub")


def test_sgd_step_names_update_that_never_runs():
    @tf.function
    def forgets_w2(x, y, w1, w2, lr):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(lr * g1)
        return loss
    fails(checks.check_sgd_step, forgets_w2, "M03", "w2 did not change")


def test_sgd_step_rejects_plain_python_function():
    fails(checks.check_sgd_step, sgd_step.python_function, says="@tf.function")


def test_sgd_step_names_variable_created_inside():
    @tf.function
    def makes_variable(x, y, w1, w2, lr):
        step = tf.Variable(lr)
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(step * g1)
        w2.assign_sub(step * g2)
        return loss
    fails(checks.check_sgd_step, makes_variable, "M07", "inside the tf.function")


def test_sgd_step_rejects_gradient_ascent():
    @tf.function
    def ascent(x, y, w1, w2, lr):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_add(lr * g1)
        w2.assign_add(lr * g2)
        return loss
    fails(checks.check_sgd_step, ascent, says="uphill")


def test_sgd_step_rejects_loss_after_the_update():
    @tf.function
    def late_loss(x, y, w1, w2, lr):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(lr * g1)
        w2.assign_sub(lr * g2)
        return tf_loss(x, y, w1, w2)
    fails(checks.check_sgd_step, late_loss, says="after the update")


# ------------------------------------------------------- training with an optimizer
def train_with_optimizer(optimizer, x, y, w1, w2, steps):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        grads = tape.gradient(loss, [w1, w2])
        optimizer.apply_gradients(zip(grads, [w1, w2]))
        return loss
    return [float(step()) for _ in range(steps)]


def test_train_with_optimizer_accepts_keras_optimizers(capsys):
    checks.check_train_with_optimizer(train_with_optimizer)
    checks.check_train_with_optimizer(train_with_optimizer, cases=[
        ("SGD", {"learning_rate": 0.005, "momentum": 0.9}, 4, 16, 20, 8, 6),
        ("SGD", {"learning_rate": 0.005, "momentum": 0.9, "nesterov": True}, 4, 16, 20, 8, 6),
        ("RMSprop", {"learning_rate": 0.003}, 4, 16, 20, 8, 6)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_train_with_optimizer_names_loss_outside_the_tape():
    def outside(optimizer, x, y, w1, w2, steps):
        losses = []
        for _ in range(steps):
            with tf.GradientTape() as tape:
                pass
            loss = tf_loss(x, y, w1, w2)
            optimizer.apply_gradients(zip(tape.gradient(loss, [w1, w2]), [w1, w2]))
            losses.append(float(loss))
        return losses
    fails(checks.check_train_with_optimizer, outside, "M05", "inside")


def test_train_with_optimizer_names_shared_tf_function():
    @tf.function
    def shared_step(optimizer, x, y, w1, w2):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w1, w2]), [w1, w2]))
        return loss

    def shared(optimizer, x, y, w1, w2, steps):
        return [float(shared_step(optimizer, x, y, w1, w2)) for _ in range(steps)]
    fails(checks.check_train_with_optimizer, shared, "M07", "optimizer.build")


def test_train_with_optimizer_rejects_updates_that_never_run():
    def no_update(optimizer, x, y, w1, w2, steps):
        return [float(tf_loss(x, y, w1, w2)) for _ in range(steps)]
    fails(checks.check_train_with_optimizer, no_update, says="never update")


def test_train_with_optimizer_rejects_loss_recorded_after_the_update():
    def late(optimizer, x, y, w1, w2, steps):
        losses = train_with_optimizer(optimizer, x, y, w1, w2, steps)
        return losses[1:] + [float(tf_loss(x, y, w1, w2))]
    fails(checks.check_train_with_optimizer, late, says="before applying")


# ------------------------------------------------------------------ custom ReLU
@tf.custom_gradient
def relu_custom(x):
    def grad(upstream):
        return upstream * tf.cast(x > 0, x.dtype)
    return tf.maximum(x, 0.0), grad


def test_relu_custom_accepts_masked_backward(capsys):
    checks.check_relu_custom(relu_custom)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    checks.check_relu_custom(relu_custom, cases=[(x, rng.uniform(1, 2, (3, 4)).astype(np.float32))],
                             hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_relu_custom_rejects_backward_without_mask():
    @tf.custom_gradient
    def no_mask(x):
        return tf.maximum(x, 0.0), lambda upstream: upstream
    fails(checks.check_relu_custom, no_mask, says="mask")


def test_relu_custom_rejects_backward_ignoring_upstream():
    @tf.custom_gradient
    def mask_only(x):
        return tf.maximum(x, 0.0), lambda upstream: tf.cast(x > 0, x.dtype)
    fails(checks.check_relu_custom, mask_only, says="upstream")


def test_relu_custom_rejects_boolean_mask():
    @tf.custom_gradient
    def boolean(x):
        return tf.maximum(x, 0.0), lambda upstream: upstream * (x > 0)
    fails(checks.check_relu_custom, boolean, says="cast")


def test_relu_custom_rejects_builtin_without_custom_backward():
    fails(checks.check_relu_custom, tf.nn.relu, says="custom_gradient")


def test_train_with_optimizer_rejects_loss_that_does_not_fall():
    def ascent(optimizer, x, y, w1, w2, steps):
        losses = []
        for _ in range(steps):
            with tf.GradientTape() as tape:
                loss = tf_loss(x, y, w1, w2)
            grads = tape.gradient(loss, [w1, w2])
            optimizer.apply_gradients(zip([-g for g in grads], [w1, w2]))
            losses.append(float(loss))
        return losses
    with pytest.raises(CheckFailed, match="did not fall"):
        checks.check_train_with_optimizer(ascent, cases=[
            ("Adam", {"learning_rate": 0.01}, 3, 16, 20, 8, 5)])
