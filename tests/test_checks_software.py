"""The checks of 05 (deep learning software) against right and known-wrong implementations."""
import ast
import json
from pathlib import Path

import nbformat
import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import judge, plain
from autograder.checks import software as checks
from autograder.checks.compare import CheckFailed
from autograder.checks.kernel_entry import Entry
from autograder.grading.demo.samples import read_answers
from tests.expect import fails, fails_with, flat


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
          lambda x, y, z: (np.sum(x * y + z), y, x, 1.0), "M61", says="shape of z")


def test_graph_backward_numpy_rejects_swapped_gradients():
    fails(checks.check_graph_backward_numpy,
          lambda x, y, z: (np.sum(x * y + z), x, y, np.ones_like(z)), "M60",
          says="the other factor")


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
    # A case is seeds and sizes (plain data of bounded size: the grader makes the problem).
    checks.check_two_layer_numpy(two_layer, cases=[{"seed": 9, "n": 64, "d": 300, "h": 40}],
                                 hidden=True)
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
    fails(checks.check_sgd_step, sgd_step.python_function, says="a tf.function")


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
    fails(checks.check_train_with_optimizer, shared, "M07", "build the optimizer for both weights first")


def test_train_with_optimizer_rejects_updates_that_never_run():
    def no_update(optimizer, x, y, w1, w2, steps):
        return [float(tf_loss(x, y, w1, w2)) for _ in range(steps)]
    fails(checks.check_train_with_optimizer, no_update, says="never update")


def test_train_with_optimizer_names_steps_by_hand_that_bump_the_iteration_count():
    # The right losses (SGD's rule written out) and the right iteration count, set by hand: the
    # message says that the optimizer was never given a gradient, not that it made the updates.
    def by_hand(optimizer, x, y, w1, w2, steps):
        lr = float(optimizer.learning_rate.numpy())
        losses = []
        for _ in range(steps):
            with tf.GradientTape() as tape:
                loss = tf_loss(x, y, w1, w2)
            g1, g2 = tape.gradient(loss, [w1, w2])
            w1.assign_sub(lr * g1)
            w2.assign_sub(lr * g2)
            optimizer.iterations.assign_add(1)
            losses.append(float(loss))
        return losses
    error = fails_with(checks.check_train_with_optimizer, by_hand, "M21", "never given a gradient")
    assert "made the updates" not in flat(error)


def test_train_with_optimizer_rejects_loss_recorded_after_the_update():
    def late(optimizer, x, y, w1, w2, steps):
        losses = train_with_optimizer(optimizer, x, y, w1, w2, steps)
        return losses[1:] + [float(tf_loss(x, y, w1, w2))]
    fails(checks.check_train_with_optimizer, late, says="before applying")


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


# ------------------------------------------------- issue 18: the right numbers without the idea
def test_graph_backward_numpy_rejects_gradients_from_a_tape():
    def by_tape(x, y, z):
        xs, ys, zs = (tf.constant(a) for a in (x, y, z))
        with tf.GradientTape() as tape:
            tape.watch([xs, ys, zs])
            c = tf.reduce_sum(xs * ys + zs)
        return (float(c), *(g.numpy() for g in tape.gradient(c, [xs, ys, zs])))
    fails_with(checks.check_graph_backward_numpy, by_tape, "M21", "a tape computed them",
               "by hand")


def test_graph_backward_tape_rejects_the_formulas_of_exercise_1():
    def by_formula(x, y, z):
        return tf.reduce_sum(x * y + z), y, x, tf.ones_like(z)
    fails_with(checks.check_graph_backward_tape, by_formula, "M21",
               "no tape computed grad_x, grad_y and grad_z", "the gradients the tape gives of c")


def test_graph_backward_tape_rejects_one_gradient_by_formula():
    def partly(x, y, z):
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            c = tf.reduce_sum(x * y + z)
        grad_x, grad_y = tape.gradient(c, [x, y])
        return c, grad_x, grad_y, tf.ones_like(z)
    fails_with(checks.check_graph_backward_tape, partly, "M21", "no tape computed grad_z")


def test_graph_backward_tape_accepts_a_tf_function_and_rejects_its_formulas(capsys):
    checks.check_graph_backward_tape(tf.function(graph_tape))
    assert "passed" in capsys.readouterr().out

    @tf.function
    def by_formula(x, y, z):
        return tf.reduce_sum(x * y + z), tf.identity(y), tf.identity(x), tf.ones_like(z)
    fails_with(checks.check_graph_backward_tape, by_formula, "M21", "no tape computed")


def test_two_layer_numpy_rejects_gradients_from_a_tape():
    def by_tape(x, y, w1, w2):
        v1, v2 = tf.Variable(w1), tf.Variable(w2)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.reduce_sum((tf.nn.relu(x @ v1) @ v2 - y) ** 2, axis=1))
        g1, g2 = tape.gradient(loss, [v1, v2])
        return loss.numpy(), g1.numpy(), g2.numpy()
    fails_with(checks.check_two_layer_numpy, by_tape, "M21", "a tape computed them", "by hand")


def tf_hand_gradients(x, y, w1, w2):
    """The two-layer network's gradients derived by hand, in TensorFlow (no tape)."""
    pre = x @ w1
    h = tf.nn.relu(pre)
    diff = h @ w2 - y
    n = tf.cast(tf.shape(x)[0], x.dtype)
    g_pred = 2.0 * diff / n
    g2 = tf.transpose(h) @ g_pred
    g1 = tf.transpose(x) @ (g_pred @ tf.transpose(w2) * tf.cast(pre > 0, x.dtype))
    return tf.reduce_mean(tf.reduce_sum(diff ** 2, axis=1)), g1, g2


def test_sgd_step_rejects_gradients_derived_by_hand():
    @tf.function
    def by_hand(x, y, w1, w2, lr):
        loss, g1, g2 = tf_hand_gradients(x, y, w1, w2)
        w1.assign_sub(lr * g1)
        w2.assign_sub(lr * g2)
        return loss
    fails_with(checks.check_sgd_step, by_hand, "M21", "no tape computed the gradients",
               "the gradients of the loss with respect to both weights")


def test_sgd_step_rejects_updates_that_ignore_the_tapes_gradients():
    @tf.function
    def ignores_tape(x, y, w1, w2, lr):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        tape.gradient(loss, [w1, w2])
        _, g1, g2 = tf_hand_gradients(x, y, w1, w2)
        w1.assign_sub(lr * g1)
        w2.assign_sub(lr * g2)
        return loss
    fails_with(checks.check_sgd_step, ignores_tape, "M21", "beside the tape")


def test_sgd_step_rejects_hand_gradients_tied_to_the_tapes_by_a_zero():
    """The agreeing decoy a graph walk cannot see: the update reads the tape's gradients (times
    0) and applies hand-derived ones; only the run with the tape's results shifted tells."""
    @tf.function
    def tied_by_zero(x, y, w1, w2, lr):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        t1, t2 = tape.gradient(loss, [w1, w2])
        _, g1, g2 = tf_hand_gradients(x, y, w1, w2)
        w1.assign_sub(lr * (g1 + 0.0 * t1))
        w2.assign_sub(lr * (g2 + 0.0 * t2))
        return loss
    fails_with(checks.check_sgd_step, tied_by_zero, "M21", "did not move with it")


def test_sgd_step_accepts_assign_in_a_loop_and_a_second_trace(capsys):
    @tf.function
    def looped(x, y, w1, w2, lr):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        for w, g in zip((w1, w2), tape.gradient(loss, [w1, w2])):
            w.assign(w - lr * tf.identity(g))
        return loss
    checks.check_sgd_step(looped)
    checks.check_sgd_step(looped)  # traced already: the evidence comes from a fresh trace
    assert capsys.readouterr().out.count("passed") == 2


def test_sgd_step_takes_the_learning_rate_as_a_tensor():
    # A Python float would trace the function again for every new learning rate.
    rates = []

    @tf.function
    def records_lr(x, y, w1, w2, lr):
        rates.append(lr)
        return sgd_step.python_function(x, y, w1, w2, lr)
    checks.check_sgd_step(records_lr, cases=[(2, 16, 20, 8, 0.01, 2), (2, 16, 20, 8, 0.02, 2)])
    assert all(isinstance(r, tf.Tensor) for r in rates)
    assert records_lr.experimental_get_tracing_count() == 1


def test_train_with_optimizer_rejects_updates_by_hand():
    def by_hand(optimizer, x, y, w1, w2, steps):
        losses = []
        for _ in range(steps):
            with tf.GradientTape() as tape:
                loss = tf_loss(x, y, w1, w2)
            g1, g2 = tape.gradient(loss, [w1, w2])
            w1.assign_sub(optimizer.learning_rate * g1)
            w2.assign_sub(optimizer.learning_rate * g2)
            losses.append(float(loss))
        return losses
    fails_with(checks.check_train_with_optimizer, by_hand, "M21", "never made an update",
               "apply_gradients")


def test_train_with_optimizer_rejects_gradients_derived_by_hand():
    def by_hand(optimizer, x, y, w1, w2, steps):
        losses = []
        for _ in range(steps):
            loss, g1, g2 = tf_hand_gradients(x, y, w1, w2)
            optimizer.apply_gradients(zip([g1, g2], [w1, w2]))
            losses.append(float(loss))
        return losses
    fails_with(checks.check_train_with_optimizer, by_hand, "M21",
               "did not come from tape.gradient")


def test_sgd_step_and_train_with_optimizer_accept_a_persistent_tape_asked_per_weight(capsys):
    """One gradient call per weight on a persistent tape is the tape's gradients too."""
    @tf.function
    def per_weight_step(x, y, w1, w2, lr):
        with tf.GradientTape(persistent=True) as tape:
            loss = tf_loss(x, y, w1, w2)
        grad_w1 = tape.gradient(loss, w1)
        grad_w2 = tape.gradient(loss, {"w2": w2})["w2"]
        w1.assign_sub(lr * grad_w1)
        w2.assign_sub(lr * grad_w2)
        return loss

    def per_weight_loop(optimizer, x, y, w1, w2, steps):
        losses = []
        for _ in range(steps):
            with tf.GradientTape(persistent=True) as tape:
                loss = tf_loss(x, y, w1, w2)
            grads = [tape.gradient(loss, w1), tape.gradient(loss, w2)]
            optimizer.apply_gradients(zip(grads, [w1, w2]))
            losses.append(float(loss))
        return losses
    checks.check_sgd_step(per_weight_step)
    checks.check_train_with_optimizer(per_weight_loop)
    assert capsys.readouterr().out.count("passed") == 2


def test_train_with_optimizer_rejects_made_up_losses_for_adam():
    """Adam's losses are replayed with Keras 3's update rule: a loop that trains right but
    returns losses of its own making fails for Adam as for SGD."""
    def made_up(optimizer, x, y, w1, w2, steps):
        first = None
        for _ in range(steps):
            with tf.GradientTape() as tape:
                loss = tf_loss(x, y, w1, w2)
            optimizer.apply_gradients(zip(tape.gradient(loss, [w1, w2]), [w1, w2]))
            first = float(loss) if first is None else first
        return [first * (1 - 0.01 * k) for k in range(steps)]
    fails_with(checks.check_train_with_optimizer, made_up, None, "the losses",
               cases=[("Adam", {"learning_rate": 0.01}, 3, 16, 20, 8, 5)])


def test_train_with_optimizer_rejects_hand_gradients_beside_an_agreeing_tape():
    """The optimizer applies gradients derived by hand, beside a tape whose gradients agree with
    them; with the tape's results shifted, what the optimizer is given is not what it returned."""
    def beside_tape(optimizer, x, y, w1, w2, steps):
        losses = []
        for _ in range(steps):
            with tf.GradientTape() as tape:
                loss = tf_loss(x, y, w1, w2)
            t1, t2 = tape.gradient(loss, [w1, w2])
            _, g1, g2 = tf_hand_gradients(x, y, w1, w2)
            optimizer.apply_gradients(zip([g1 + 0.0 * t1, g2 + 0.0 * t2], [w1, w2]))
            losses.append(float(loss))
        return losses
    fails_with(checks.check_train_with_optimizer, beside_tape, "M21",
               "is not what a tape.gradient call of the loss returned")


def test_train_with_optimizer_accepts_optimizer_apply_and_copied_gradients(capsys):
    def apply_copies(optimizer, x, y, w1, w2, steps):
        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = tf_loss(x, y, w1, w2)
            optimizer.apply([tf.identity(g) for g in tape.gradient(loss, [w1, w2])], [w1, w2])
            return loss
        return [step().numpy().item() for _ in range(steps)]
    checks.check_train_with_optimizer(apply_copies)
    assert "passed" in capsys.readouterr().out


# ---------------------------------------------------------------- the grading path


def grade(check_name, fn, cases, *more):
    """Judge ``fn`` (and the check's further positional arguments ``more``) on hidden ``cases``
    as the grader does: observed by the kernel entry, judged from plain data with
    ``reveal=False``. Returns None when every case passes, else the CheckFailed."""
    reply = plain.loads(Entry.observe(check_name, lambda: (fn, *more), plain.dumps(
        {"cases": cases, "hidden": True, "options": {}})))
    entry = judge.load()[check_name]
    for i, (case, reply_case) in enumerate(zip(cases, reply["cases"])):
        try:
            judge.judge_observation(entry, plain.roundtrip(case), reply_case,
                                    entry.context(i, case, True, reveal=False), {})
        except CheckFailed as error:
            return error
    assert len(reply["cases"]) == len(cases)
    return None


def test_grading_path_sgd_step():
    cases = [(11, 32, 12, 6, 0.02, 4), (12, 8, 30, 10, 0.005, 3)]
    assert grade("check_sgd_step", sgd_step, cases) is None

    @tf.function
    def by_hand(x, y, w1, w2, lr):
        loss, g1, g2 = tf_hand_gradients(x, y, w1, w2)
        w1.assign_sub(lr * g1)
        w2.assign_sub(lr * g2)
        return loss
    error = grade("check_sgd_step", by_hand, cases)
    assert error.mistake == "M21" and "hidden case 1" in str(error)

    @tf.function
    def late_loss(x, y, w1, w2, lr):
        sgd_step.python_function(x, y, w1, w2, lr)
        return tf_loss(x, y, w1, w2)
    error = grade("check_sgd_step", late_loss, cases)
    message = str(error)
    assert "after the update" in message and "call" not in message
    assert not any(str(v) in message for v in (32, 12, 0.02))


def test_grading_path_two_layer_numpy_shows_no_hidden_value():
    cases = [{"seed": 3, "n": 64, "d": 300, "h": 40}, {"seed": 4, "n": 10, "d": 7, "h": 3}]
    assert grade("check_two_layer_numpy", two_layer, cases) is None
    for wrong, says in ((lambda *a: two_layer(*a, mean=False), "times too large"),
                        (lambda *a: two_layer(*a, transpose_bug=True), "shape of the weight"),
                        (lambda *a: two_layer(*a, factor=3.0), "differ")):
        error = grade("check_two_layer_numpy", wrong, cases)
        message = flat(error)
        assert says in message and "hidden case 1" in message, message
        assert not any(s in message for s in ("64", "300", "40", "got")), message


def test_grading_path_graph_backward_tape():
    cases = [{"seed": 12, "shape": [2, 5]}]
    assert grade("check_graph_backward_tape", graph_tape, cases) is None
    error = grade("check_graph_backward_tape",
                  lambda x, y, z: (tf.reduce_sum(x * y + z), y, x, tf.ones_like(z)), cases)
    assert error.mistake == "M21" and "(2, 5)" not in str(error)


# ------------------------------------------------------- the sample students of 05

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "05_deep_learning_software"


def graded_calls(source):
    """``(check name, argument names, keyword options)`` of each call of a graded cell."""
    for statement in ast.parse(source).body:
        call = statement.value
        options = {k.arg: eval(compile(ast.Expression(k.value), "<cell>", "eval"), {"np": np})
                   for k in call.keywords}
        yield call.func.attr, [a.id for a in call.args], options


@pytest.mark.parametrize("student", ["ada_full", "alt1_variables", "alt2_tf_math",
                                     "p04_rebound_weights", "p05_unwatched_loss_outside",
                                     "p06_shape_dtype_slips", "p07_shared_optimizer_step",
                                     "p09_numerical_shortcuts"])
def test_sample_students_get_their_expected_verdicts_on_the_grading_path(student):
    expected = json.loads((ROOT / "tests" / "samples" / "expected" / f"{ASSIGNMENT}.json")
                          .read_text())
    namespace = {"np": np, "tf": tf}
    notebook = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    for source in read_answers(ROOT / "tests" / "samples" / "answers", student,
                               ASSIGNMENT).values():
        exec(source, namespace)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if not cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        error = None
        for check_name, args, options in graded_calls(cell.source):
            entry = judge.load()[check_name]
            cases = options.pop("cases", None) or entry.cases
            error = grade(check_name, namespace[args[0]], [plain.roundtrip(c) for c in cases],
                          *(namespace[a] for a in args[1:]))
            if error is not None:
                break
        want = expected["points"][student][grade_id]
        assert (error is None) == (want > 0), f"{grade_id}: {error}"
        mistake = expected.get("mistakes", {}).get(student, {}).get(grade_id)
        if mistake:
            assert error.mistake == mistake, f"{grade_id}: {error}"


# ------------------------------------- issue 18, part 2: find and fix, predict then measure
def notebook_cell(start):
    """The source of the one code cell of 05's solution notebook that starts with ``start``
    (a cell the student is given: a buggy function, a broken step)."""
    notebook = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    found = [c.source for c in notebook.cells
             if c.cell_type == "code" and c.source.startswith(start)]
    assert len(found) == 1, start
    return found[0]


def given(start, name):
    namespace = {"np": np, "tf": tf}
    exec(notebook_cell(start), namespace)
    return namespace[name]


def two_layer_slips(x, y, w1, w2, no_mean=False, pre_relu=False, no_mask=False):
    """two_layer_numpy with any of the three bugs of the notebook's two_layer_numpy_buggy."""
    n = x.shape[0]
    h_pre = x @ w1
    h = np.maximum(h_pre, 0)
    y_pred = h @ w2
    loss = np.mean(np.sum((y_pred - y) ** 2, axis=1))
    grad_y_pred = 2.0 * (y_pred - y) / (1 if no_mean else n)
    grad_w2 = (h_pre if pre_relu else h).T @ grad_y_pred
    grad_h = grad_y_pred @ w2.T
    if not no_mask:
        grad_h = grad_h * (h_pre > 0)
    return loss, x.T @ grad_h, grad_w2


def test_two_layer_numpy_buggy_of_the_notebook_fails_and_names_grad_w1s_two_slips():
    # Exercise 3 is find-and-fix: submitted unchanged, the given function scores nothing, and the
    # check names both slips of grad_w1 at once (the first gradient it compares).
    buggy = given("def two_layer_numpy_buggy", "two_layer_numpy_buggy")
    message = fails(checks.check_two_layer_numpy, buggy, says="grad_w1 has 2 slips")
    assert "times too large" in flat(message) and "ignores the ReLU" in flat(message)
    # The same bugs, reproduced here, and each of them alone.
    fails(checks.check_two_layer_numpy,
          lambda *a: two_layer_slips(*a, no_mean=True, pre_relu=True, no_mask=True),
          says="grad_w1 has 2 slips")


def test_two_layer_numpy_names_grad_w2_before_the_relu():
    fails(checks.check_two_layer_numpy, lambda *a: two_layer_slips(*a, pre_relu=True),
          says="grad_w2 is computed from x @ w1, the values before the ReLU")
    # grad_w1 fixed, grad_w2 still both wrong: its two slips named together.
    message = fails(checks.check_two_layer_numpy,
                    lambda *a: two_layer_slips(*a, no_mean=True, pre_relu=True),
                    says="grad_w1 is N = 8 times too large")
    fails(checks.check_two_layer_numpy,
          lambda *a: (two_layer_slips(*a)[0], two_layer_slips(*a)[1],
                      two_layer_slips(*a, no_mean=True, pre_relu=True)[2]),
          says="grad_w2 has 2 slips at once: (1) grad_w2 is N = 8 times too large")
    assert message


def test_two_layer_numpy_fixed_from_the_buggy_one_passes(capsys):
    checks.check_two_layer_numpy(two_layer_slips)
    assert "passed" in capsys.readouterr().out


def test_grading_path_two_layer_numpy_slips_show_no_hidden_value():
    cases = [{"seed": 3, "n": 64, "d": 300, "h": 40}]
    buggy = given("def two_layer_numpy_buggy", "two_layer_numpy_buggy")
    message = flat(grade("check_two_layer_numpy", buggy, cases))
    assert "2 slips" in message and "hidden case 1" in message, message
    assert not any(s in message for s in ("64", "300", "40")), message


# step_report: predict, then measure
def step_report(step, x, y, w1, w2, lr, calls):
    w1_before, w2_before = w1.numpy(), w2.numpy()
    losses = [float(step(x, y, w1, w2, lr)) for _ in range(calls)]
    changed = not (np.array_equal(w1_before, w1.numpy())
                   and np.array_equal(w2_before, w2.numpy()))
    return losses, changed


STEP_HIDDEN = [{"step": "late_loss", "seed": 21, "n": 12, "d": 10, "h": 6, "lr": 0.02, "calls": 3},
               {"step": "w2_only", "seed": 22, "n": 8, "d": 12, "h": 5, "lr": 0.01, "calls": 3},
               {"step": "sgd", "seed": 23, "n": 10, "d": 6, "h": 4, "lr": 0.05, "calls": 1}]


def check_report(fn, drop=0.0, change=False, cases=None, hidden=False):
    checks.check_step_report(fn, drop, change, cases=cases, hidden=hidden)


def test_step_report_accepts_a_measuring_report_and_right_predictions(capsys):
    check_report(step_report)
    check_report(step_report, cases=STEP_HIDDEN, hidden=True)
    # Predictions written another way: an int, a scalar tensor, a NumPy bool.
    check_report(step_report, 0, np.bool_(False))
    check_report(step_report, tf.constant(0.0), False)
    assert capsys.readouterr().out.count("passed") == 4


def test_step_report_accepts_tensor_snapshots_and_variable_copies(capsys):
    def identities(step, x, y, w1, w2, lr, calls):
        start = [tf.identity(w1), tf.identity(w2)]
        losses = [step(x, y, w1, w2, lr) for _ in range(calls)]
        return losses, bool(tf.reduce_any(start[0] != w1) or tf.reduce_any(start[1] != w2))

    def variables(step, x, y, w1, w2, lr, calls):
        before = [tf.Variable(w1), tf.Variable(w2)]
        losses = []
        for _ in range(calls):
            losses.append(step(x, y, w1, w2, lr).numpy().item())
        return losses, any(bool(tf.reduce_any(a != b)) for a, b in zip(before, [w1, w2]))
    for fn in (identities, variables):
        check_report(fn)
        check_report(fn, cases=STEP_HIDDEN, hidden=True)
    assert capsys.readouterr().out.count("passed") == 4


def test_step_report_rejects_wrong_predictions_after_a_right_report():
    # The student thought the step trains: a drop, weights that move.
    message = flat(fails_with(check_report, step_report, None,
                              "prediction predicted_loss_drop", "you predicted 3000.0",
                              "the variable the caller passed in", drop=3000.0))
    # The message asks for the reason, never for the number the report printed.
    assert "what the report shows" not in message and "set predicted" not in message, message
    fails_with(check_report, step_report, None, "prediction predicted_weights_change",
               "you predicted True", change=True)
    # False is not a number of the drop, 0 is not a bool of the change.
    fails_with(check_report, step_report, None, "predicted_loss_drop", drop=False)
    fails_with(check_report, step_report, None, "predicted_weights_change", change=0)
    fails_with(check_report, step_report, None, "neither", drop=...)


def test_step_report_rejects_a_report_that_never_calls_the_step():
    # Right numbers on broken_sgd_step without the idea: the losses computed, the answer assumed.
    def assumes(step, x, y, w1, w2, lr, calls):
        return [float(tf_loss(x, y, w1, w2))] * calls, False
    fails_with(check_report, assumes, "M21", "never called the step", "measure")


def test_step_report_rejects_losses_it_computed_itself():
    def own_losses(step, x, y, w1, w2, lr, calls):
        before = w1.numpy(), w2.numpy()
        losses = []
        for _ in range(calls):
            losses.append(float(tf_loss(x, y, w1, w2)))
            step(x, y, w1, w2, lr)
        changed = not (np.array_equal(before[0], w1.numpy())
                       and np.array_equal(before[1], w2.numpy()))
        return losses, changed
    check_report(own_losses)  # the visible steps return the loss before the update: it passes
    fails_with(check_report, own_losses, "M21", "instead of recording what the step returned",
               cases=STEP_HIDDEN, hidden=True)


def test_step_report_rejects_change_inferred_from_the_losses():
    def inferred(step, x, y, w1, w2, lr, calls):
        losses = [float(step(x, y, w1, w2, lr)) for _ in range(calls)]
        return losses, len(set(losses)) > 1
    check_report(inferred)  # right on the visible steps
    fails_with(check_report, inferred, "M21", "infers from them whether the weights changed",
               "look at the weights themselves", cases=STEP_HIDDEN[2:], hidden=True)


def test_step_report_names_the_variable_kept_instead_of_a_copy():
    def aliased(step, x, y, w1, w2, lr, calls):
        before = [w1, w2]
        losses = [float(step(x, y, w1, w2, lr)) for _ in range(calls)]
        return losses, not all(np.array_equal(b.numpy(), w.numpy())
                               for b, w in zip(before, (w1, w2)))
    fails_with(check_report, aliased, None, "did you keep the variables themselves",
               "keep copies of both weights' values")


def test_step_report_rejects_calls_and_returns_of_the_wrong_form():
    def twice(step, x, y, w1, w2, lr, calls):
        losses, changed = step_report(step, x, y, w1, w2, lr, calls)
        step(x, y, w1, w2, lr)
        return losses, changed
    fails_with(check_report, twice, None, "exactly `calls` times", "(6 for 5)")
    fails_with(check_report, lambda *a: step_report(*a)[0], None, "2 values")
    fails_with(check_report, lambda *a: (step_report(*a)[0], "no"), None, "Python bool")


def test_broken_sgd_step_of_the_notebook_trains_nothing_and_fails_sgd_step():
    broken = given("@tf.function\ndef broken_sgd_step", "broken_sgd_step")
    # What the predictions are about, measured with the report, on the notebook's problem.
    x, y, w1, w2 = checks.two_layer_problem()
    losses, changed = step_report(broken, tf.constant(x), tf.constant(y), tf.Variable(w1),
                                  tf.Variable(w2), tf.constant(1e-5), 5)
    assert losses[0] - losses[-1] == judge.by_name("step_report").judge.__globals__[
        "BROKEN_STEP_TRUTH"]["predicted_loss_drop"] and changed is False
    # Exercise 4b is find-and-fix: submitted unchanged, broken_sgd_step is the rebinding (M03).
    fails(checks.check_sgd_step, broken, "M03", "assign_sub")


def test_grading_path_step_report():
    assert grade("check_step_report", step_report, STEP_HIDDEN, 0.0, False) is None
    error = grade("check_step_report", step_report, STEP_HIDDEN, 3000.0, False)
    assert error.code == "prediction" and "3000" not in str(error)

    def inferred(step, x, y, w1, w2, lr, calls):
        losses = [float(step(x, y, w1, w2, lr)) for _ in range(calls)]
        return losses, len(set(losses)) > 1
    error = grade("check_step_report", inferred, STEP_HIDDEN, 0.0, False)
    message = flat(error)
    assert error.mistake == "M21" and "hidden case 3" in message, message
    assert not any(s in message for s in ("0.05", "late_loss", "sgd step", "1 calls")), message

    def twice(step, x, y, w1, w2, lr, calls):
        step(x, y, w1, w2, lr)
        return step_report(step, x, y, w1, w2, lr, calls)
    message = flat(grade("check_step_report", twice, STEP_HIDDEN, 0.0, False))
    assert "exactly `calls` times" in message and "for 3" not in message, message


# ------------------------------------------------ round 2: formulas laundered through a tape
#: A red team's answers (round 2): the two by-hand exercises computed by tf.GradientTape through
#: a reference to GradientTape.gradient kept at cell time; graph_backward_tape, sgd_step and
#: train_with_optimizer with hand-derived gradients and a decoy tape call of a made-up target
#: (0 * its result added to the update).
LAUNDERED = """
# %% graph_backward_numpy
_tape_gradient = tf.GradientTape.gradient


def graph_backward_numpy(x, y, z):
    xs = [tf.constant(a) for a in (x, y, z)]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        c = tf.reduce_sum(xs[0] * xs[1] + xs[2])
    gx, gy, gz = _tape_gradient(tape, c, xs)
    return float(c.numpy()), gx.numpy(), gy.numpy(), gz.numpy()

# %% graph_backward_tape
def graph_backward_tape(x, y, z):
    c = tf.reduce_sum(x * y + z)
    hx, hy, hz = tf.constant(y.numpy()), tf.constant(x.numpy()), tf.ones_like(z)
    with tf.GradientTape() as tape:
        tape.watch([x, y, z])
        t = tf.reduce_sum(x * hx) + tf.reduce_sum(y * hy) + tf.reduce_sum(z * hz)
    gx, gy, gz = tape.gradient(t, [x, y, z])
    return c, gx, gy, gz

# %% two_layer_numpy
def two_layer_numpy(x, y, w1, w2):
    xt, yt = tf.constant(x), tf.constant(y)
    v = [tf.constant(w1), tf.constant(w2)]
    with tf.GradientTape() as tape:
        tape.watch(v)
        loss = tf.reduce_mean(tf.reduce_sum((tf.nn.relu(xt @ v[0]) @ v[1] - yt) ** 2, axis=1))
    g1, g2 = _tape_gradient(tape, loss, v)
    return float(loss.numpy()), g1.numpy(), g2.numpy()

# %% sgd_step
def _hand(x, y, w1, w2):
    h_pre = x @ w1
    h = tf.nn.relu(h_pre)
    diff = h @ w2 - y
    loss = tf.reduce_mean(tf.reduce_sum(diff ** 2, axis=1))
    g_pred = 2.0 * diff / tf.cast(tf.shape(x)[0], tf.float32)
    g_w2 = tf.transpose(h) @ g_pred
    g_w1 = tf.transpose(x) @ ((g_pred @ tf.transpose(w2)) * tf.cast(h_pre > 0, tf.float32))
    return loss, g_w1, g_w2


@tf.function
def sgd_step(x, y, w1, w2, lr):
    with tf.GradientTape() as tape:
        dummy = tf.reduce_sum(w1) + tf.reduce_sum(w2)
    t1, t2 = tape.gradient(dummy, [w1, w2])
    loss, g_w1, g_w2 = _hand(x, y, w1, w2)
    w1.assign_sub(lr * (g_w1 + 0.0 * t1))
    w2.assign_sub(lr * (g_w2 + 0.0 * t2))
    return loss

# %% train_with_optimizer
def train_with_optimizer(optimizer, x, y, w1, w2, steps):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            dummy = tf.reduce_sum(w1) + tf.reduce_sum(w2)
        t1, t2 = tape.gradient(dummy, [w1, w2])
        loss, g_w1, g_w2 = _hand(x, y, w1, w2)
        optimizer.apply_gradients(zip([g_w1 + 0.0 * t1, g_w2 + 0.0 * t2], [w1, w2]))
        return loss
    return [float(step()) for _ in range(steps)]
"""


def laundered(name):
    namespace = {"np": np, "tf": tf}
    exec(LAUNDERED, namespace)
    return namespace[name]


@pytest.mark.parametrize("name,check", [
    ("graph_backward_numpy", checks.check_graph_backward_numpy),
    ("two_layer_numpy", checks.check_two_layer_numpy)])
def test_by_hand_exercises_see_a_tape_reached_through_a_saved_method(name, check):
    message = fails_with(check, laundered(name), "M21")
    assert "a tape computed them" in flat(message) or "automatic" in flat(message), message


@pytest.mark.parametrize("name,check,words", [
    ("graph_backward_tape", checks.check_graph_backward_tape, "differentiated c"),
    ("sgd_step", checks.check_sgd_step, "differentiated the loss"),
    ("train_with_optimizer", checks.check_train_with_optimizer, "apply_gradients was given"),
])
def test_a_decoy_tape_call_on_a_made_up_target_is_no_evidence(name, check, words):
    message = fails_with(check, laundered(name), "M21")
    assert words in flat(message), message


def test_grading_sgd_step_rejects_a_decoy_tape_and_shows_no_value():
    cases = [(7, 12, 9, 5, 0.05, 2)]
    assert grade("check_sgd_step", sgd_step, cases) is None
    error = grade("check_sgd_step", laundered("sgd_step"), cases)
    assert error is not None and error.mistake == "M21", error
    assert "0.05" not in str(error) and "differentiated the loss" in flat(error), str(error)


def test_grading_train_with_optimizer_rejects_a_decoy_tape():
    cases = [("SGD", {"learning_rate": 0.02}, 4, 10, 7, 5, 3)]
    error = grade("check_train_with_optimizer", laundered("train_with_optimizer"), cases)
    assert error is not None and error.mistake == "M21", error


# ------------------------- issue 28: a backward pass by hand, not finite differences (M54)
def graph_finite_differences(x, y, z, eps=1e-6):
    """Right to about 1e-10: central differences of c, entry by entry."""
    def c_of(x, y, z):
        return np.sum(x * y + z)
    grads = []
    for k in range(3):
        args = [x, y, z]
        grad = np.zeros_like(args[k])
        for index in np.ndindex(grad.shape):
            plus, minus = [a.copy() for a in args], [a.copy() for a in args]
            plus[k][index] += eps
            minus[k][index] -= eps
            grad[index] = (c_of(*plus) - c_of(*minus)) / (2 * eps)
        grads.append(grad)
    return (c_of(x, y, z), *grads)


def two_layer_finite_differences(x, y, w1, w2, eps=1e-6):
    def loss_of(w1, w2):
        return np.mean(np.sum((np.maximum(x @ w1, 0) @ w2 - y) ** 2, axis=1))
    grads = []
    for k, w in enumerate((w1, w2)):
        grad = np.zeros_like(w)
        for index in np.ndindex(w.shape):
            up, down = [w1.copy(), w2.copy()], [w1.copy(), w2.copy()]
            up[k][index] += eps
            down[k][index] -= eps
            grad[index] = (loss_of(*up) - loss_of(*down)) / (2 * eps)
        grads.append(grad)
    return loss_of(w1, w2), grads[0], grads[1]


def test_graph_backward_numpy_rejects_finite_differences_whatever_the_step():
    fails(checks.check_graph_backward_numpy, graph_finite_differences, "M54",
          says="finite differences")
    # c is linear in each input, so a huge step loses no accuracy to curvature: still not exact.
    fails(checks.check_graph_backward_numpy,
          lambda x, y, z: graph_finite_differences(x, y, z, eps=1024.0), "M54",
          says="not exactly")


def test_graph_backward_numpy_accepts_two_more_spellings_of_the_chain_rule(capsys):
    def with_grad_c(x, y, z):
        grad_b = 1.0 * np.ones_like(x * y + z)
        return float((x * y + z).sum()), grad_b * y, np.multiply(grad_b, x), grad_b.copy()

    def float32_outputs(x, y, z):
        return (np.sum(x * y + z), y.astype(np.float32), x.astype(np.float32),
                np.ones(z.shape, np.float32))
    for fn in (with_grad_c, float32_outputs):
        checks.check_graph_backward_numpy(fn)
        checks.check_graph_backward_numpy(fn, cases=[{"seed": 11, "shape": [2, 5]}], hidden=True)
    assert capsys.readouterr().out.count("passed") == 4


def test_two_layer_numpy_rejects_finite_differences_at_the_relu_kink():
    # On the first visible case central differences are within 1e-6; the kink case catches them.
    message = fails(checks.check_two_layer_numpy, two_layer_finite_differences, "M54",
                    says="kink")
    assert "x @ w1" in flat(message)
    # A step small enough not to cross the kink drowns in rounding everywhere.
    fails(checks.check_two_layer_numpy,
          lambda *a: two_layer_finite_differences(*a, eps=1e-12), "M54", says="numerical")


def test_two_layer_numpy_kink_case_passes_the_chain_rule_written_twice(capsys):
    def with_where(x, y, w1, w2):
        pre = x @ w1
        h = np.where(pre > 0, pre, 0.0)
        d_out = 2.0 * (h @ w2 - y) / len(x)
        return (np.mean(np.sum((h @ w2 - y) ** 2, axis=1)),
                x.T @ np.where(pre > 0, d_out @ w2.T, 0.0), h.T @ d_out)
    kink = [{"seed": 41, "n": 16, "d": 12, "h": 10, "kink": 1e-9}]
    for fn in (two_layer, with_where):
        checks.check_two_layer_numpy(fn)
        checks.check_two_layer_numpy(fn, cases=kink, hidden=True)
    assert capsys.readouterr().out.count("passed") == 4


def test_grading_path_finite_differences_fail_without_a_hidden_value():
    kink = [{"seed": 41, "n": 16, "d": 12, "h": 10, "kink": 1e-9}]
    error = grade("check_two_layer_numpy", two_layer_finite_differences, kink)
    assert error.mistake == "M54" and "16" not in str(error)
    assert grade("check_two_layer_numpy", two_layer, kink) is None
    error = grade("check_graph_backward_numpy", graph_finite_differences,
                  [{"seed": 11, "shape": [2, 5]}])
    assert error.mistake == "M54" and "(2, 5)" not in str(error)


# ------------------------------------ exercise 6: the loss that goes NaN, found and fixed
def ce_logsumexp(logits, labels):
    return tf.reduce_mean(tf.reduce_logsumexp(logits, axis=1)
                          - tf.gather(logits, labels, batch_dims=1))


def ce_shifted_by_hand(logits, labels):
    top = tf.reduce_max(logits, axis=1, keepdims=True)
    shifted = logits - top
    lse = tf.math.log(tf.reduce_sum(tf.exp(shifted), axis=1))
    return tf.reduce_mean(lse - tf.reduce_sum(shifted * tf.one_hot(labels, logits.shape[1]), 1))


CE_HIDDEN = [{"seed": 31, "n": 6, "c": 4, "scale": 200.0},
             ([[-1000.0, 1000.0, 0.0], [30.0, -30.0, 0.5]], [0, 2])]


def test_cross_entropy_accepts_three_stable_spellings(capsys):
    def builtin(logits, labels):
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    for fn in (ce_logsumexp, ce_shifted_by_hand, builtin):
        checks.check_cross_entropy(fn)
        checks.check_cross_entropy(fn, cases=CE_HIDDEN, hidden=True)
    assert capsys.readouterr().out.count("passed") == 6


def test_cross_entropy_rejects_the_notebooks_draft():
    draft = given("def classifier_problem", "draft_cross_entropy")
    fails(checks.check_cross_entropy, draft, "M50", says="-log(0) = inf")


def test_cross_entropy_rejects_the_tf_where_fix_for_its_nan_gradient():
    def where_fix(logits, labels):
        p = tf.gather(tf.nn.softmax(logits), labels, batch_dims=1)
        return tf.reduce_mean(tf.where(p > 0, -tf.math.log(p), 100.0))
    fails(checks.check_cross_entropy, where_fix, "M51", says="gradient is NaN")


def test_cross_entropy_rejects_right_numbers_from_probabilities():
    # float64 probabilities: right on the first visible case, and on logits tens apart...
    def in_float64(logits, labels):
        p = tf.gather(tf.nn.softmax(tf.cast(logits, tf.float64)), labels, batch_dims=1)
        return tf.cast(tf.reduce_mean(-tf.math.log(p)), tf.float32)
    checks.check_cross_entropy(in_float64, cases=[([[30.0, -30.0, 0.5]], [1])], hidden=True)
    # ... but e^-1000 is 0 in float64 too: the idea is no probability at all.
    fails(checks.check_cross_entropy, in_float64, "M50", says="from the logits")

    def clipped(logits, labels):  # what Keras's loss from probabilities does: finite, capped
        p = tf.gather(tf.nn.softmax(logits), labels, batch_dims=1)
        return tf.reduce_mean(-tf.math.log(tf.clip_by_value(p, 1e-7, 1.0)))
    fails(checks.check_cross_entropy, clipped, "M50", says="caps the loss")


def test_cross_entropy_rejects_numpy_inside_the_loss():
    def in_numpy(logits, labels):
        values = logits.numpy()
        top = values.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(values - top).sum(axis=1))
        return tf.constant(np.mean(lse - values[np.arange(len(values)), labels.numpy()]))
    with pytest.raises(CheckFailed) as info:
        checks.check_cross_entropy(in_numpy)
    assert info.value.mistake in ("M14", "M16"), str(info.value)


def test_grading_path_cross_entropy():
    assert grade("check_cross_entropy", ce_shifted_by_hand, CE_HIDDEN) is None
    draft = given("def classifier_problem", "draft_cross_entropy")
    error = grade("check_cross_entropy", draft, CE_HIDDEN)
    assert error.mistake == "M50" and "1000" not in str(error) and "200" not in str(error)


# ------------------------------- exercise 7: a custom gradient with a formula of its own
@tf.custom_gradient
def log1pexp_sigmoid(x):
    def grad(upstream):
        return upstream * tf.math.sigmoid(x)
    return tf.nn.softplus(x), grad


@tf.custom_gradient
def log1pexp_by_cases(x):
    y = tf.where(x > 0, x + tf.math.log1p(tf.exp(-tf.abs(x))), tf.math.log1p(tf.exp(x)))

    def grad(upstream):
        e = tf.exp(-tf.abs(x))
        return upstream * tf.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return y, grad


LOG1PEXP_HIDDEN = [{"seed": 33, "n": 12, "scale": 60.0},
                   ([88.0, 88.9, 89.0, 95.0, -88.0, -104.0], [1.0, 0.5, 2.0, 1.5, 1.0, 3.0])]


def test_log1pexp_accepts_two_formulas_of_the_derivative(capsys):
    for fn in (log1pexp_sigmoid, log1pexp_by_cases):
        checks.check_log1pexp(fn)
        checks.check_log1pexp(fn, cases=LOG1PEXP_HIDDEN, hidden=True)
    assert capsys.readouterr().out.count("passed") == 4


def test_log1pexp_rejects_a_backward_that_opens_a_tape_over_the_builtin():
    @tf.custom_gradient
    def tape_inside(x):
        def grad(upstream):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.nn.softplus(x)
            return upstream * tape.gradient(y, x)
        return tf.nn.softplus(x), grad
    fails(checks.check_log1pexp, tape_inside, "M52", says="own formula")


def test_log1pexp_rejects_the_builtin_gradient_op_and_tf_gradients():
    @tf.custom_gradient
    def raw_op(x):
        return tf.nn.softplus(x), lambda u: tf.raw_ops.SoftplusGrad(gradients=u, features=x)
    fails(checks.check_log1pexp, raw_op, "M52", says="SoftplusGrad")


def test_log1pexp_rejects_no_custom_gradient():
    fails(checks.check_log1pexp, tf.nn.softplus, "M21", says="custom_gradient")


def test_log1pexp_names_overflow_in_the_value_and_in_the_backward():
    @tf.custom_gradient
    def naive_value(x):
        return tf.math.log(1.0 + tf.exp(x)), lambda u: u * tf.math.sigmoid(x)
    fails(checks.check_log1pexp, naive_value, "M53", says="value")

    @tf.custom_gradient
    def naive_backward(x):
        e = tf.exp(x)
        return tf.nn.softplus(x), lambda u: u * e / (1.0 + e)
    fails(checks.check_log1pexp, naive_backward, "M53", says="backward's formula overflows")


def test_log1pexp_rejects_a_backward_without_the_upstream_gradient():
    @tf.custom_gradient
    def no_upstream(x):
        return tf.nn.softplus(x), lambda u: tf.math.sigmoid(x)
    fails(checks.check_log1pexp, no_upstream, says="upstream")


def test_grading_path_log1pexp():
    assert grade("check_log1pexp", log1pexp_by_cases, LOG1PEXP_HIDDEN) is None
    error = grade("check_log1pexp", tf.nn.softplus, LOG1PEXP_HIDDEN)
    assert error.mistake == "M21" and "95" not in str(error)



# --------------------- issue 27: exercises 1, 2, 4b and 5 are find-and-fix of a given draft
def given_function(start, name):
    """The function ``name`` of the notebook's code cell that starts with ``start``, defined
    alone (the rest of the cell runs the draft on the notebook's data)."""
    tree = ast.parse(notebook_cell(start))
    namespace = {"np": np, "tf": tf}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            exec(compile(ast.Module([node], []), name, "exec"), namespace)
    return namespace[name]


def test_graph_backward_numpy_draft_of_the_notebook_fails_with_both_of_its_slips():
    draft = given_function("def graph_backward_numpy_draft", "graph_backward_numpy_draft")
    # Handed in unchanged: each input times its own factor (M60) ...
    fails(checks.check_graph_backward_numpy, draft, "M60", says="the other factor")

    # ... and, that line fixed, grad_b (so grad_z) still the number 1.0 (M61).
    def half_fixed(x, y, z):
        c, _, _, grad_z = draft(x, y, z)
        return c, 1.0 * y, 1.0 * x, grad_z
    fails(checks.check_graph_backward_numpy, half_fixed, "M61", says="not one number")


def test_graph_backward_tape_draft_of_the_notebook_and_its_half_fixes():
    """The draft (exercise 1's np.sum made a tf.constant, on an unwatched tape: the right c
    and three Nones, no error) fails M14 as handed in; fixing one of its two bugs leaves the
    other's id."""
    draft = given_function("def graph_backward_tape_draft", "graph_backward_tape_draft")
    fails(checks.check_graph_backward_tape, draft, "M14", says="left TensorFlow")

    def sum_fixed_only(x, y, z):
        with tf.GradientTape() as tape:
            c = tf.reduce_sum(x * y + z)
        return (c, *tape.gradient(c, [x, y, z]))
    fails(checks.check_graph_backward_tape, sum_fixed_only, "M01", says="tape.watch")

    def watched_but_numpy(x, y, z):
        with tf.GradientTape() as tape:
            tape.watch([x, y, z])
            c = np.sum(x * y + z)
        return (c, *tape.gradient(c, [x, y, z]))
    fails(checks.check_graph_backward_tape, watched_but_numpy, "M14", says="NumPy")

    def watched_but_made_a_constant(x, y, z):  # the watch added, tf.constant(np.sum) kept
        with tf.GradientTape() as tape:
            tape.watch([x, y, z])
            c = tf.constant(np.sum(x * y + z))
        return (c, *tape.gradient(c, [x, y, z]))
    fails(checks.check_graph_backward_tape, watched_but_made_a_constant, "M14",
          says="left TensorFlow")


def test_graph_backward_tape_rejects_numpy_numbers_with_a_decoy_tape():
    """The right numbers without the idea: c by np.sum, the gradients converted from the
    formulas through a tape of another target."""
    def numpy_numbers(x, y, z):
        c = np.sum(x.numpy() * y.numpy() + z.numpy())
        with tf.GradientTape() as tape:
            tape.watch([x, y, z])
            t = tf.reduce_sum(x * tf.stop_gradient(y)) + tf.reduce_sum(y * tf.stop_gradient(x)) \
                + tf.reduce_sum(z)
        return (tf.constant(c), *tape.gradient(t, [x, y, z]))
    fails_with(checks.check_graph_backward_tape, numpy_numbers, "M21", "differentiated c")


def test_graph_backward_tape_accepts_variables_made_inside_and_a_jacobian(capsys):
    def as_variables(x, y, z):
        xv, yv, zv = (tf.Variable(t) for t in (x, y, z))
        with tf.GradientTape() as tape:
            c = tf.math.reduce_sum(tf.math.add(xv * yv, zv))
        return (c, *tape.gradient(c, [xv, yv, zv]))

    def by_jacobian(x, y, z):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            tape.watch(y)
            tape.watch(z)
            b = x * y + z
            c = tf.reduce_sum(b)
        grads = [tape.jacobian(c, t) for t in (x, y, z)]
        del tape
        return (c, *grads)
    for answer in (as_variables, by_jacobian):
        checks.check_graph_backward_tape(answer)
        checks.check_graph_backward_tape(answer, cases=[{"seed": 121, "shape": [1, 6]}],
                                         hidden=True)
    assert capsys.readouterr().out.count("passed") == 4


def test_graph_backward_tape_accepts_a_persistent_tape_and_one_gradient_at_a_time(capsys):
    def one_at_a_time(x, y, z):
        with tf.GradientTape(persistent=True) as tape:
            for t in (x, y, z):
                tape.watch(t)
            c = tf.reduce_sum(tf.add(tf.multiply(x, y), z))
        grads = [tape.gradient(c, t) for t in (x, y, z)]
        del tape
        return (c, *grads)
    checks.check_graph_backward_tape(one_at_a_time)
    checks.check_graph_backward_tape(one_at_a_time, cases=[{"seed": 12, "shape": [2, 5]}],
                                     hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_sgd_step_draft_of_the_notebook_creates_variables_inside_the_step():
    draft = given_function("@tf.function\ndef sgd_step_draft", "sgd_step_draft")
    message = fails(checks.check_sgd_step, draft, "M07", says="inside the tf.function")
    assert "assign" in flat(message), message


def test_train_with_optimizer_draft_of_the_notebook_shares_one_step_between_optimizers():
    namespace = {"np": np, "tf": tf}
    tree = ast.parse(notebook_cell("@tf.function\ndef shared_step"))
    exec(compile(ast.Module([n for n in tree.body if isinstance(n, ast.FunctionDef)], []),
                 "draft", "exec"), namespace)
    fails(checks.check_train_with_optimizer, namespace["train_with_optimizer_draft"], "M07",
          says="build the optimizer for both weights first")


def test_train_with_optimizer_accepts_a_shared_step_once_each_optimizer_is_built(capsys):
    # The other fix of the draft: one compiled step stays shared, and each optimizer creates its
    # variables before the step first runs (optimizer.build), so no trace creates any.
    @tf.function
    def shared(optimizer, x, y, w1, w2):
        with tf.GradientTape() as tape:
            loss = tf_loss(x, y, w1, w2)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w1, w2]), [w1, w2]))
        return loss

    def built_first(optimizer, x, y, w1, w2, steps):
        optimizer.build([w1, w2])
        return [float(shared(optimizer, x, y, w1, w2)) for _ in range(steps)]
    checks.check_train_with_optimizer(built_first)
    checks.check_train_with_optimizer(built_first, cases=[
        ("RMSprop", {"learning_rate": 0.003}, 4, 16, 20, 8, 6)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_step_report_reveal_refuses_until_both_predictions_exist(capsys):
    reveal = notebook_cell("checks.show_prediction(globals(), \"predicted_loss_drop\"")
    assert reveal.splitlines()[0] == ('checks.show_prediction(globals(), "predicted_loss_drop", '
                                      '"predicted_weights_change")')
    with pytest.raises(CheckFailed, match="waits for your prediction"):
        checks.show_prediction({"predicted_loss_drop": 0.0}, "predicted_loss_drop",
                               "predicted_weights_change")
    checks.show_prediction({"predicted_loss_drop": 0.0, "predicted_weights_change": False},
                           "predicted_loss_drop", "predicted_weights_change")
    assert "predicted_weights_change = False" in capsys.readouterr().out


def test_graph_backward_tape_tells_another_autodiff_spelling_it_is_correct_but_not_the_tape():
    @tf.function
    def by_tf_gradients(x, y, z):
        c = tf.reduce_sum(x * y + z)
        return (c, *tf.gradients(c, [x, y, z]))

    def by_forward_mode(x, y, z):
        grads = []
        for source in (x, y, z):
            columns = []
            for i in range(int(tf.size(source))):
                tangent = tf.reshape(tf.one_hot(i, tf.size(source)), source.shape)
                with tf.autodiff.ForwardAccumulator(source, tangent) as acc:
                    c = tf.reduce_sum(x * y + z)
                columns.append(acc.jvp(c))
            grads.append(tf.reshape(tf.stack(columns), source.shape))
        return (tf.reduce_sum(x * y + z), *grads)
    for answer in (by_tf_gradients, by_forward_mode):
        fails_with(checks.check_graph_backward_tape, answer, "M46", "correct",
                   "asks for the tape")
    cases = [{"seed": 12, "shape": [2, 5]}]
    error = grade("check_graph_backward_tape", by_tf_gradients, cases)
    assert error.mistake == "M46" and "(2, 5)" not in str(error)


# ------------------------------------------------------- graph_backward_tape: formulas through a tape (#28)

def graph_backward_tape_formulas_beside_an_unused_tape(x, y, z):
    with tf.GradientTape() as tape:
        tape.watch([x, y, z])
        c = tf.reduce_sum(x * y + z)
    tape.gradient(c, [x, y, z])  # thrown away: the values returned are the formulas
    return c, y + 0.0, x + 0.0, tf.ones_like(z)


def graph_backward_tape_formulas_through_a_stopped_target(x, y, z):
    with tf.GradientTape() as tape:
        tape.watch([x, y, z])
        c = tf.reduce_sum(x * y + z)
        hand = [y, x, tf.ones_like(z)]
        s = tf.add_n([tf.reduce_sum(v * tf.stop_gradient(g)) for v, g in zip([x, y, z], hand)])
        target = tf.stop_gradient(c) + s - tf.stop_gradient(s)  # value c, gradient the formulas
    return (c, *tape.gradient(target, [x, y, z]))


def test_graph_backward_tape_refuses_formulas_beside_or_through_a_tape():
    fails(checks.check_graph_backward_tape, graph_backward_tape_formulas_beside_an_unused_tape,
          "M21", says="no tape computed")
    fails(checks.check_graph_backward_tape, graph_backward_tape_formulas_through_a_stopped_target,
          "M21", says="built with tf.stop_gradient")
