"""The checks of assignments 01 and 02 (autograder.checks.tapes) against right and known-wrong
implementations: each right one passes, each wrong one fails with the mistake id of the course
catalogue (autograder/checks/mistakes.py) and a message that names the cause. Real TensorFlow, no
mocks."""
from __future__ import annotations

import hashlib
from pathlib import Path

import nbformat
import numpy as np
import tensorflow as tf

import pytest

from autograder.checks import judge, plain, tapes
from autograder.checks.compare import CheckFailed
from autograder.checks.judge import tapes as judge_tapes
from autograder.checks.kernel_entry import Entry
from tests.expect import fails_with, flat

ROOT = Path(__file__).resolve().parents[1]


def grade(check_name, fn, cases):
    """Grade ``fn`` on hidden ``cases`` as the grader does: the kernel half through
    kernel_entry.Entry.observe, its reply as plain text, each case judged with reveal=False.
    Returns the number of cases judged; raises the first CheckFailed."""
    entry = judge.load()[check_name]
    request = plain.dumps({"cases": cases, "hidden": True, "options": {}})
    reply = plain.loads(Entry.observe(check_name, lambda: (fn,), request))
    assert len(reply["cases"]) <= len(cases)
    for index, (case, answer) in enumerate(zip(cases, reply["cases"])):
        case = plain.roundtrip(case)
        judge.judge_observation(entry, case, answer, entry.context(index, case, True,
                                                                   reveal=False), {})
    return len(reply["cases"])


def graded_failure(check_name, fn, cases, mistake, *words, secrets=()) -> CheckFailed:
    """``grade`` must fail with ``mistake`` and ``words``, and show none of ``secrets`` (hidden
    inputs and values)."""
    with pytest.raises(CheckFailed) as info:
        grade(check_name, fn, cases)
    text = flat(info.value)
    assert info.value.mistake == mistake, text
    for word in words:
        assert word in text, text
    for secret in secrets:
        assert secret not in text, text
    return info.value


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
    fails_with(tapes.check_square_grad, square_grad_unwatched, "M01", "GradientTape.watch")


def test_square_grad_rejects_integer_input_that_is_not_cast():
    fails_with(tapes.check_square_grad, square_grad_no_cast, "M02", "int32", "convert the input to a float32 tensor")


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


def sum_squared_grad_sum_before_block(x):  # the sum taken before the tape's block opens
    y = tf.reduce_sum(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = y ** 2
    return tape.gradient(z, x)


def sum_squared_grad_numpy(x):  # 01's draft
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = np.sum(x) ** 2
    return tape.gradient(z, x)


def test_sum_squared_grad_accepts_chain_rule_gradient():
    tapes.check_sum_squared_grad(sum_squared_grad)
    tapes.check_sum_squared_grad(sum_squared_grad, cases=[[[2.0, -1.0, 0.5]], [3.0]],
                                 hidden=True)


def test_sum_squared_grad_rejects_unwatched_constant():
    fails_with(tapes.check_sum_squared_grad, sum_squared_grad_unwatched, "M01", "GradientTape.watch")


def test_sum_squared_grad_rejects_loss_computed_after_the_block():
    fails_with(tapes.check_sum_squared_grad, sum_squared_grad_loss_outside, "M05",
               "inside the")


def test_sum_squared_grad_names_a_step_before_the_block_without_saying_after():
    error = fails_with(tapes.check_sum_squared_grad, sum_squared_grad_sum_before_block, "M05",
                       "before the block opened", "inside the tape's block")
    assert "weights" not in str(error)  # said for x and z, as the exercise names them


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
               "GradientTape's persistent argument")


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


def second_derivative_draft(f, x):
    # the notebook's draft: y differentiated again, and the inner gradient under stop_recording
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        with outer.stop_recording():
            dy_dx = inner.gradient(y, x)
    return dy_dx, outer.gradient(y, x)


def second_derivative_paused(f, x):
    # the draft with its first bug fixed: the right target, the outer tape still paused
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        with outer.stop_recording():
            dy_dx = inner.gradient(y, x)
    return dy_dx, outer.gradient(dy_dx, x)


def second_derivative_value_again(f, x):
    # the draft with its second bug fixed first: the outer tape records, but differentiates y
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy_dx = inner.gradient(y, x)
    return dy_dx, outer.gradient(y, x)


def test_second_derivative_names_the_drafts_bugs_one_at_a_time():
    fails_with(tapes.check_second_derivative, second_derivative_draft, "M99", "f''(x) is f'(x) again",
               "gradient of dy_dx")
    fails_with(tapes.check_second_derivative, second_derivative_value_again, "M99", "differentiated f's value")
    fails_with(tapes.check_second_derivative, second_derivative_paused, "M100", "stop_recording",
               "inside the outer block")


def test_grading_names_the_drafts_bugs_without_showing_the_hidden_input():
    graded_failure("check_second_derivative", second_derivative_draft, [("x**3", 0.7)], "M99",
                   secrets=("0.7", "1.47"))
    graded_failure("check_second_derivative", second_derivative_paused, [("x**3", 0.7)], "M100",
                   secrets=("0.7",))


def test_second_derivative_after_the_block_stays_m05_not_m100():
    error = fails_with(tapes.check_second_derivative, second_derivative_inner_outside, "M05")
    assert "stop_recording" not in flat(error)


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
    # The reference lives in the grader half now (NumPy functions, no TensorFlow).
    x = np.array([0.3, -1.2, 0.8])
    want = np.array([[0, 2 * x[1], 0], [2 * x[1], 2 * x[0], 0], [0, 0, -np.sin(x[2])]])
    got = judge_tapes.finite_difference_hessian(lambda x: x[0] * x[1] ** 2 + np.sin(x[2]), x)
    np.testing.assert_allclose(got, want, atol=1e-6)


#: Hidden hessian cases as the solution notebook writes them: functions as source text.
HIDDEN_HESSIAN_CASES = [
    {"tf": "def f(x):\n    return x[0] * x[1] ** 2 + tf.sin(x[2])\n",
     "np": "def f(x):\n    return x[0] * x[1] ** 2 + np.sin(x[2])\n", "x": [0.3, -1.2, 0.8]},
    {"tf": "def f(x):\n    return tf.math.reduce_logsumexp(x)\n",
     "np": "def f(x):\n    top = np.max(x)\n    return top + np.log(np.sum(np.exp(x - top)))\n",
     "x": [0.0, 1.0, -1.0]},
]


def test_hessian_accepts_nested_tapes_with_jacobian():
    tapes.check_hessian(hessian)
    tapes.check_hessian(hessian, hidden=True, cases=HIDDEN_HESSIAN_CASES)


def test_hessian_rejects_inner_gradient_outside_outer_block():
    fails_with(tapes.check_hessian, hessian_inner_outside, "M05", "outer tape")


def test_hessian_rejects_outer_tape_that_does_not_watch():
    fails_with(tapes.check_hessian, hessian_outer_unwatched, "M01", "watch")


def test_hessian_explains_gradient_instead_of_jacobian():
    fails_with(tapes.check_hessian, hessian_with_gradient, "M64", "column sums", "jacobian")


def test_hidden_integer_case_message_does_not_show_the_input():
    error = fails_with(tapes.check_square_grad, square_grad_no_cast, "M02", cases=[17],
                       hidden=True)
    assert "17" not in str(error)


# ---------------------------------------------------------------- the two halves agree

def test_the_grader_has_numpy_versions_of_the_kernels_functions_under_the_same_names():
    assert set(judge_tapes.SCALAR_FUNCTIONS) == set(tapes.SCALAR_FUNCTIONS)
    assert set(judge_tapes.VECTOR_FUNCTIONS) == set(tapes.VECTOR_FUNCTIONS)
    for name, f in tapes.SCALAR_FUNCTIONS.items():
        value, df, d2f = judge_tapes.SCALAR_FUNCTIONS[name]
        for x in (-1.3, 0.4, 2.0):
            t = tf.constant(x, dtype=tf.float64)
            with tf.GradientTape() as outer:
                outer.watch(t)
                with tf.GradientTape() as inner:
                    inner.watch(t)
                    y = f(t)
                dy = inner.gradient(y, t)
            d2y = outer.gradient(dy, t)
            np.testing.assert_allclose([float(y), float(dy), float(d2y)],
                                       [value(x), df(x), d2f(x)], rtol=1e-10, err_msg=name)
    for name, f in tapes.VECTOR_FUNCTIONS.items():
        x = np.array([0.3, -1.2, 0.8, 0.5])
        np.testing.assert_allclose(float(f(tf.constant(x))), judge_tapes.VECTOR_FUNCTIONS[name](x),
                                   rtol=1e-12, err_msg=name)


def test_the_grader_half_imports_without_tensorflow():
    import subprocess
    import sys
    code = ("import sys; import autograder.checks.judge as j; j.load(); "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'; "
            "assert 'check_hessian' in j.EXERCISES")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- M21: the numbers without the idea

def square_grad_jacobian(x):
    x = tf.cast(tf.convert_to_tensor(x), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.square(x)
    return tape.jacobian(y, x)


@tf.function
def square_grad_tf_function(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)


def test_square_grad_accepts_a_jacobian_and_a_tf_function():
    tapes.check_square_grad(square_grad_jacobian)
    tapes.check_square_grad(square_grad_tf_function, cases=[3.0, -1.5])


def test_square_grad_rejects_the_formula():
    fails_with(tapes.check_square_grad, lambda x: tf.constant(2.0 * x), "M21",
               "no automatic differentiation computed them", "with respect to x")


def train_step_by_hand(model, optimizer, loss_object, x, y):
    kernel, bias = model.trainable_variables
    predictions = model(x)
    loss_value = loss_object(y, predictions)
    d_pred = 2.0 * (predictions - y) / tf.cast(tf.size(predictions), tf.float32)
    optimizer.apply_gradients([(tf.transpose(x) @ d_pred, kernel),
                               (tf.reduce_sum(d_pred, axis=0), bias)])
    return loss_value


def train_step_keras_fit(model, optimizer, loss_object, x, y):
    model.compile(optimizer=optimizer, loss=loss_object)
    history = model.fit(x, y, batch_size=int(x.shape[0]), epochs=1, verbose=0, shuffle=False)
    return tf.constant(history.history["loss"][0])


@tf.function
def train_step_tf_function(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        loss_value = loss_object(y, model(x))
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss_value


def train_step_assign_sub(model, optimizer, loss_object, x, y):
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        loss_value = loss_object(y, model(x))
    for variable, grad in zip(variables, tape.gradient(loss_value, variables)):
        variable.assign_sub(optimizer.learning_rate * grad)
    return loss_value


def test_train_step_accepts_a_tf_function_and_updates_by_hand_from_the_tape():
    tapes.check_train_step(train_step_tf_function)
    tapes.check_train_step(train_step_assign_sub)


def test_train_step_rejects_gradients_derived_by_hand():
    fails_with(tapes.check_train_step, train_step_by_hand, "M21", "right numbers",
               "no tape computed the gradient",
               "the tape's gradients of the loss with respect to the model's trainable variables")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_train_step_rejects_keras_fit():
    fails_with(tapes.check_train_step, train_step_keras_fit, "M21", "Keras' own loop",
               "no model.compile")


def fit_line_by_hand(x, y, lr, steps):
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    losses = []
    for _ in range(steps):
        residual = w * x + b - y
        losses.append(float(tf.reduce_mean(residual ** 2)))
        w.assign_sub(lr * 2.0 * tf.reduce_mean(residual * x))
        b.assign_sub(lr * 2.0 * tf.reduce_mean(residual))
    return w, b, losses


def fit_line_new_variables(x, y, lr, steps):
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w, b = tf.Variable(w - lr * dw), tf.Variable(b - lr * db)
        losses.append(float(loss))
    return w, b, losses


def fit_line_tf_function_step(x, y, lr, steps):
    w, b = tf.Variable(0.0), tf.Variable(0.0)

    @tf.function
    def step():
        with tf.GradientTape(persistent=True) as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        w.assign_sub(lr * tape.gradient(loss, w))
        b.assign_sub(lr * tape.gradient(loss, b))
        return loss

    return w, b, [float(step()) for _ in range(steps)]


def fit_line_draft(x, y, lr, steps, *, restart=True, b_with_dw=True):
    """01's fit_line_draft (both bugs), and each bug alone."""
    losses = []
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    for _ in range(steps):
        if restart:
            w, b = tf.Variable(0.0), tf.Variable(0.0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * (dw if b_with_dw else db))
        losses.append(float(loss))
    return w, b, losses


@pytest.mark.parametrize("restart, b_with_dw, mistake, says", [
    (True, True, "M96", "first step's loss"),
    (True, False, "M96", "starts again from w = b = 0"),
    (False, True, None, "b updated with w's gradient"),
], ids=["draft", "restart_only", "b_with_dw_only"])
def test_fit_line_names_each_bug_of_the_draft(restart, b_with_dw, mistake, says):
    fails_with(tapes.check_fit_line,
               lambda *a: fit_line_draft(*a, restart=restart, b_with_dw=b_with_dw), mistake, says)


def fit_line_tape_for_show(x, y, lr, steps):
    """A red-team answer: the descent in NumPy, one tape call per step on a made-up target whose
    gradients are the hand-derived ones (thrown away), the variables assigned the NumPy values."""
    xn, yn = x.numpy().astype(np.float64), y.numpy().astype(np.float64)
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    wn = bn = 0.0
    losses = []
    for _ in range(steps):
        r = wn * xn + bn - yn
        loss, dw, db = np.mean(r ** 2), 2 * np.mean(r * xn), 2 * np.mean(r)
        with tf.GradientTape() as tape:
            made_up = float(dw) * w + float(db) * b
        tape.gradient(made_up, [w, b])
        wn, bn = wn - lr * dw, bn - lr * db
        w.assign(wn)
        b.assign(bn)
        losses.append(float(loss))
    return w, b, losses


def test_fit_line_rejects_hand_updates_beside_a_tape_whose_gradients_agree():
    fails_with(tapes.check_fit_line, fit_line_tape_for_show, "M21", "computed beside the tape")


def test_fit_line_draft_fixed_passes():
    tapes.check_fit_line(lambda *a: fit_line_draft(*a, restart=False, b_with_dw=False))


def test_fit_line_accepts_a_tf_function_step_with_one_call_per_variable():
    tapes.check_fit_line(fit_line_tf_function_step)


def test_fit_line_rejects_updates_derived_by_hand():
    fails_with(tapes.check_fit_line, fit_line_by_hand, "M21", "derived by hand",
               "update w and b in place with the gradients it gives")


def test_fit_line_rejects_a_tape_whose_gradients_are_ignored():
    # A tape is asked, but for the gradient of another value: the update was derived by hand.
    def tape_of_other_loss(x, y, lr, steps):
        w, b = tf.Variable(0.0), tf.Variable(0.0)
        losses = []
        for _ in range(steps):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((w * x + b - y) ** 2)
                other = tf.reduce_sum(w * b)
            tape.gradient(other, [w, b])
            residual = w * x + b - y
            w.assign_sub(lr * 2.0 * tf.reduce_mean(residual * x))
            b.assign_sub(lr * 2.0 * tf.reduce_mean(residual))
            losses.append(float(loss))
        return w, b, losses
    fails_with(tapes.check_fit_line, tape_of_other_loss, "M21", "derived by hand")


def test_fit_line_rejects_new_variables_every_step():
    fails_with(tapes.check_fit_line, fit_line_new_variables, "M21", "in place",
               "one gradient call per step")


def grads_from_one_tape_formulas(x):
    x = tf.constant(x)
    return 4.0 * x ** 3, 2.0 * x


def grads_from_one_tape_two_tapes(x):
    x = tf.constant(x)
    with tf.GradientTape() as first:
        first.watch(x)
        z = (x * x) ** 2
    with tf.GradientTape() as second:
        second.watch(x)
        y = x * x
    return first.gradient(z, x), second.gradient(y, x)


def test_grads_from_one_tape_rejects_formulas():
    fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_formulas, "M21",
               "no automatic differentiation computed them", "GradientTape's persistent argument")


def test_grads_from_one_tape_rejects_two_tapes_even_where_both_values_are_zero():
    fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_two_tapes, "M21",
               "from two tapes", "GradientTape's persistent argument")
    fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_two_tapes, "M21",
               "from two tapes", cases=[0.0], hidden=True)


def second_derivative_finite_difference(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    h, x64 = 1e-4, tf.cast(x, tf.float64)
    d2y = (f(x64 + h) - 2.0 * f(x64) + f(x64 - h)) / h ** 2
    return tape.gradient(y, x), tf.cast(d2y, tf.float32)


def second_derivative_no_tape(f, x):
    h, x64 = 1e-4, tf.cast(x, tf.float64)
    dy = (f(x64 + h) - f(x64 - h)) / (2.0 * h)
    d2y = (f(x64 + h) - 2.0 * f(x64) + f(x64 - h)) / h ** 2
    return tf.cast(dy, tf.float32), tf.cast(d2y, tf.float32)


@tf.function
def second_derivative_tf_function(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy_dx = inner.gradient(y, x)
    return dy_dx, outer.gradient(dy_dx, x)


def test_second_derivative_accepts_a_tf_function():
    tapes.check_second_derivative(second_derivative_tf_function)


def test_second_derivative_rejects_a_second_derivative_not_from_the_outer_tape():
    fails_with(tapes.check_second_derivative, second_derivative_finite_difference, "M21",
               "not computed by a tape that recorded the first gradient",
               "the outer tape's gradient of it after the block")


def test_second_derivative_rejects_a_formula_beside_nested_tapes():
    """Nested tapes run and agree, but the values returned are a formula's (x**3 only): the run
    with every tape result shifted shows they do not come from the tapes."""
    def formula_beside(f, x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            dy = inner.gradient(y, x)
        outer.gradient(dy, x)
        return 3.0 * x ** 2, 6.0 * x
    fails_with(tapes.check_second_derivative, formula_beside, "M21", "beside the tape calls",
               cases=[("x**3", 1.0), ("x**3", -2.0)])


def test_second_derivative_rejects_finite_differences():
    fails_with(tapes.check_second_derivative, second_derivative_no_tape, "M21",
               "no automatic differentiation computed them")


def test_product_grads_rejects_returning_b_and_a():
    fails_with(tapes.check_product_grads, lambda a, b: [tf.identity(b), tf.identity(a)], "M21",
               "no automatic differentiation computed them", "sources it watches")
    fails_with(tapes.check_product_grads, lambda a, b: [b, a], "M21", "no automatic differentiation computed them")


def test_product_grads_accepts_a_default_tape_that_watches_both():
    def default_tape(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            y = a * b
        return tape.gradient(y, [a, b])
    tapes.check_product_grads(default_tape)


def hessian_finite_differences(f, x):
    n, h = int(x.shape[0]), 1e-5
    point = tf.cast(x, tf.float64)

    def gradient(p):
        with tf.GradientTape() as tape:
            tape.watch(p)
            y = f(p)
        return tape.gradient(y, p)

    rows = [(gradient(point + h * tf.one_hot(i, n, dtype=tf.float64))
             - gradient(point - h * tf.one_hot(i, n, dtype=tf.float64))) / (2 * h)
            for i in range(n)]
    return tf.cast(tf.stack(rows), tf.float32)


def hessian_jacobian_of_finite_difference_gradient(f, x):
    n, h = int(x.shape[0]), 1e-3
    with tf.GradientTape() as tape:
        tape.watch(x)
        g = tf.stack([(f(x + h * tf.one_hot(i, n)) - f(x - h * tf.one_hot(i, n))) / (2 * h)
                      for i in range(n)])
    return tape.jacobian(g, x)


def hessian_rows(f, x):
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        entries = [g[i] for i in range(int(x.shape[0]))]
    rows = [outer.gradient(entry, x) for entry in entries]
    del outer
    return tf.stack(rows, axis=1)


def test_hessian_accepts_rows_stacked_from_gradients_of_the_entries():
    tapes.check_hessian(hessian_rows)


def test_hessian_rejects_finite_differences_of_tape_gradients():
    fails_with(tapes.check_hessian, hessian_finite_differences, "M21", "no automatic differentiation computed them",
               "the outer tape's jacobian of")


def test_hessian_rejects_an_outer_tape_that_did_not_differentiate_a_gradient():
    # a tape's jacobian, but of a finite-difference gradient: right numbers, no inner tape
    fails_with(tapes.check_hessian, hessian_jacobian_of_finite_difference_gradient, "M21",
               "did not differentiate the inner tape's gradient", "the outer tape's jacobian of")


# ---------------------------------------------------------------- the grading path

def test_grading_grads_from_one_tape_passes_the_solution_and_hides_what_it_judged():
    from tests.test_checks_tapes import grads_from_one_tape
    assert grade("check_grads_from_one_tape", grads_from_one_tape, [2.0, -0.75, 0.0]) == 3
    graded_failure("check_grads_from_one_tape", grads_from_one_tape_formulas, [1.75], "M21",
                   "hidden case 1", "no automatic differentiation computed them", secrets=["1.75", "21.4", "3.5"])
    graded_failure("check_grads_from_one_tape", grads_from_one_tape_two_tapes, [1.75], "M21",
                   "from two tapes", secrets=["1.75"])
    error = graded_failure("check_grads_from_one_tape", lambda x: (tf.constant(x), tf.constant(x)),
                           [1.75], None, "hidden case 1", "differ", secrets=["1.75", "21.4"])
    assert error.code == "value"


def test_grading_fit_line_passes_the_solution_and_names_the_idea_without_values():
    cases = [{"x": [0.25, 0.5, 2.0], "y": [1.5, 0.5, -1.0], "lr": 0.07, "steps": 4}]
    assert grade("check_fit_line", fit_line, cases) == 1
    graded_failure("check_fit_line", fit_line_by_hand, cases, "M21", "hidden case 1",
                   "derived by hand", secrets=["0.25", "0.07"])
    error = graded_failure("check_fit_line", fit_line_rebound, cases, "M03", "hidden case 1",
                           secrets=["0.25", "0.07"])
    assert "assign_sub" in flat(error)
    error = graded_failure("check_fit_line", lambda x, y, lr, steps: fit_line(x, y, lr, 1),
                           cases, None, "one value per step", secrets=["4", "0.25"])
    assert "got" not in flat(error)


def test_grading_hessian_passes_the_solution_and_rejects_finite_differences():
    cases = HIDDEN_HESSIAN_CASES
    assert grade("check_hessian", hessian, cases) == 2
    assert grade("check_hessian", hessian_rows, cases) == 2
    graded_failure("check_hessian", hessian_finite_differences, cases, "M21", "hidden case 1",
                   secrets=["0.3", "1.2", "x0*x1"])
    error = graded_failure("check_hessian", hessian_with_gradient, cases, "M64", "jacobian",
                           secrets=["(3, 3)", "(3,)"])
    assert error.code == "summed_hessian"
    graded_failure("check_hessian", hessian_outer_unwatched, cases, "M01", "hidden case 1",
                   secrets=["0.3"])


def test_grading_train_step_rejects_gradients_by_hand():
    cases = [{"n": 5, "n_in": 4, "n_out": 1, "loss": "mae", "lr": 0.3, "seed": 7}]
    assert grade("check_train_step", train_step, cases) == 1
    graded_failure("check_train_step", train_step_by_hand,
                   [{"n": 6, "n_in": 2, "n_out": 3, "loss": "mse", "lr": 0.01, "seed": 11}],
                   "M21", "hidden case 1", "tape.gradient", secrets=["0.01", "mse", "->"])


# ---------------------------------------------------------------- predict-then-verify, find-and-fix
# 01's sum_squared_grad (predict dz/dx, then verify with the tape), 01's train_step (find the line
# of broken_train_step at fault, M05, then fix it) and 02's product_grads (predict which
# gradients a default tape returns as None, then fix): the prediction is judged against the
# grader's reference, the function that shows it must get its values from a tape (M21).

PREDICTED_DZ_DX = [[20.0, 20.0], [20.0, 20.0]]  # at x = [[1, 2], [3, 4]]: 2 * sum(x) = 20


def fails_for(check, predicted, fn, mistake, *words) -> CheckFailed:
    """``fails_with`` for a check of (prediction, function)."""
    return fails_with(lambda f: check(predicted, f), fn, mistake, *words)


def test_sum_squared_prediction_accepts_the_chain_rule_in_any_numeric_form():
    for predicted in (PREDICTED_DZ_DX, [[20, 20], [20, 20]], np.full((2, 2), 20.0),
                      tf.fill((2, 2), 20.0)):
        tapes.check_sum_squared_prediction(predicted, sum_squared_grad)


def test_sum_squared_prediction_rejects_a_prediction_copied_from_the_example():
    # The example's x = ones gives 8 everywhere; at [[1, 2], [3, 4]] the chain rule gives 20.
    error = fails_for(tapes.check_sum_squared_prediction, [[8.0, 8.0], [8.0, 8.0]],
                      sum_squared_grad, None, "not the gradient", "dz/dy for z the square of the sum")
    assert error.code == "prediction" and "20" not in flat(error)


def test_sum_squared_prediction_rejects_a_scalar_where_the_gradient_has_x_s_shape():
    error = fails_for(tapes.check_sum_squared_prediction, 20.0, sum_squared_grad, None,
                      "shape of x")
    assert error.code == "prediction_shape"


def test_sum_squared_prediction_rejects_a_formula_as_the_verification():
    # right prediction, right numbers from sum_squared_grad, but no tape: nothing verified it
    def formula(x):
        return 2.0 * tf.reduce_sum(x) * tf.ones_like(x)
    fails_for(tapes.check_sum_squared_prediction, PREDICTED_DZ_DX, formula, "M21",
              "no automatic differentiation computed them",
              "the gradient the tape computes of the square with respect to x")


BROKEN_LINE = "loss_value = loss_object(y, logits)"
GRADIENT_LINE = "grads = tape.gradient(loss_value, model.trainable_variables)"


def test_train_step_fault_accepts_the_line_copied_with_or_without_spaces_and_comments():
    for line in (BROKEN_LINE, "    loss_value = loss_object(y, logits)  # after the block",
                 "loss_value=loss_object(y,logits)"):
        tapes.check_train_step_fault(line, train_step)
    tapes.check_train_step_fault(BROKEN_LINE, train_step_assign_sub)


def test_train_step_fault_rejects_the_line_where_the_none_gradients_show():
    error = fails_for(tapes.check_train_step_fault, GRADIENT_LINE, train_step, None,
                      "where the None gradients appear", "while its `with` block ran")
    assert error.code == "symptom"


def test_train_step_fault_rejects_a_right_line_and_text_that_is_no_line():
    check = tapes.check_train_step_fault
    assert fails_for(check, "logits = model(x)", train_step, None,
                     "right as it stands").code == "not_the_fault"
    assert fails_for(check, "the loss", train_step, None, "not a line").code == "not_a_line"
    assert fails_for(check, 4, train_step, None, "should be a string").code == "line_type"


def test_train_step_fault_rejects_a_fix_that_is_still_broken():
    # the right line named, but the step handed in unfixed: the optimizer gets no gradients
    fails_for(tapes.check_train_step_fault, BROKEN_LINE, train_step_loss_outside, "M05",
              "inside")


def test_train_step_fault_rejects_a_fix_that_derives_the_gradients_by_hand():
    fails_for(tapes.check_train_step_fault, BROKEN_LINE, train_step_by_hand, "M21",
              "no tape computed", "compute the loss there too")


PREDICTED_NONE = [[False, False], [False, True], [True, True], [True, False]]


def test_product_grads_prediction_accepts_the_watch_rule_in_any_form():
    for predicted in (PREDICTED_NONE, [tuple(p) for p in PREDICTED_NONE],
                      np.array(PREDICTED_NONE), tf.constant(PREDICTED_NONE)):
        tapes.check_product_grads_prediction(predicted, product_grads)

    def default_tape_watching_both(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            y = a * b
        return tape.gradient(y, [a, b])
    tapes.check_product_grads_prediction(PREDICTED_NONE, default_tape_watching_both)


def test_product_grads_prediction_rejects_a_default_tape_that_watches_constants():
    wrong = [[False, False], [False, True], [True, True], [False, False]]
    error = fails_for(tapes.check_product_grads_prediction, wrong, product_grads, None,
                      "wrong for 1 of the 4", "trainable=False and a tf.constant get None")
    assert error.code == "prediction"


def test_product_grads_prediction_rejects_numbers_for_true_and_false():
    error = fails_for(tapes.check_product_grads_prediction, [[0, 0], [0, 1], [1, 1], [1, 0]],
                      product_grads, None, "True/False")
    assert error.code == "prediction_shape"


def test_product_grads_prediction_rejects_the_unfixed_function_with_the_kind_of_source():
    # broken_product_grads itself (a default tape): None for the frozen b of pair 2
    fails_for(tapes.check_product_grads_prediction, PREDICTED_NONE, product_grads_default_tape,
              "M06", "b (a variable with trainable=False)", "watch both sources (read GradientTape.watch)")
    fails_for(tapes.check_product_grads_prediction, PREDICTED_NONE, product_grads_one_watched,
              "M06", "b (a trainable variable)")


def test_product_grads_prediction_rejects_returning_b_and_a():
    fails_for(tapes.check_product_grads_prediction, PREDICTED_NONE,
              lambda a, b: [tf.identity(b), tf.identity(a)], "M21",
              "no automatic differentiation computed them", "watch_accessed_variables off")


def grade_prediction(check_name, predicted, fn, cases=None):
    """``grade`` for a check whose arguments are (prediction, function), with the exercise's
    visible cases by default, judged with reveal=False as the grader does."""
    entry = judge.load()[check_name]
    cases = entry.cases if cases is None else cases
    request = plain.dumps({"cases": cases, "hidden": False, "options": {}})
    reply = plain.loads(Entry.observe(check_name, lambda: (predicted, fn), request))
    for index, (case, answer) in enumerate(zip(cases, reply["cases"])):
        case = plain.roundtrip(case)
        judge.judge_observation(entry, case, answer, entry.context(index, case, False,
                                                                   reveal=False), {})
    return len(reply["cases"])


def test_grading_predictions_passes_right_answers_and_shows_no_value():
    assert grade_prediction("check_sum_squared_prediction", PREDICTED_DZ_DX, sum_squared_grad) == 1
    assert grade_prediction("check_train_step_fault", BROKEN_LINE, train_step) == 1
    assert grade_prediction("check_product_grads_prediction", PREDICTED_NONE, product_grads) == 1
    cases = [
        ("check_sum_squared_prediction", [[8.0, 8.0], [8.0, 8.0]], sum_squared_grad, None,
         "prediction", ["8.0", "20"]),
        ("check_sum_squared_prediction", PREDICTED_DZ_DX,
         lambda x: 2.0 * tf.reduce_sum(x) * tf.ones_like(x), "M21", "no_tape", ["20"]),
        ("check_train_step_fault", GRADIENT_LINE, train_step, None, "symptom", ["grads = tape"]),
        ("check_train_step_fault", BROKEN_LINE, train_step_by_hand, "M21", "no_tape", ["0.1"]),
        ("check_train_step_fault", BROKEN_LINE, train_step_loss_outside, "M05", None, []),
        ("check_product_grads_prediction", [[False, False]] * 4, product_grads, None,
         "prediction", ["of the 4"]),
        ("check_product_grads_prediction", PREDICTED_NONE, product_grads_one_watched, "M06",
         "unwatched_source", ["trainable variable)"]),
    ]
    for check_name, predicted, fn, mistake, code, secrets in cases:
        with pytest.raises(CheckFailed) as info:
            grade_prediction(check_name, predicted, fn)
        text = flat(info.value)
        assert info.value.mistake == mistake, text
        assert code is None or info.value.code == code, text
        for secret in secrets:
            assert secret not in text, text


def test_the_notebooks_broken_functions_behave_as_the_judges_say():
    # The judges know broken_train_step's fault and broken_product_grads' None pattern without
    # running them; the notebooks' versions must behave that way.
    import nbformat
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    sources = {}
    for name in ("01_gradient_tape", "02_persistent_nested_tapes"):
        nb = nbformat.read(root / "solutions" / name / f"{name}.ipynb", as_version=4)
        sources.update({c.source.split("(")[0]: c.source for c in nb.cells
                        if c.cell_type == "code" and c.source.startswith("def broken_")})
    namespace = {"tf": tf}
    exec(sources["def broken_train_step"], namespace)
    lines = [line.strip() for line in sources["def broken_train_step"].splitlines()]
    assert lines == list(judge_tapes.BROKEN_TRAIN_STEP_LINES) and BROKEN_LINE in lines
    assert GRADIENT_LINE == judge_tapes.SYMPTOM_LINE in lines
    assert hashlib.sha256(judge_tapes.line_key(BROKEN_LINE).encode()).hexdigest() == \
        judge_tapes.FAULTY_LINE_SHA256
    fails_with(tapes.check_train_step, namespace["broken_train_step"], "M05", "inside")
    exec(sources["def broken_product_grads"], namespace)
    case = judge_tapes.PRODUCT_PREDICTION_CASES[0]
    got = [[g is None for g in namespace["broken_product_grads"](
        tapes._source(ka, case["a"]), tapes._source(kb, case["b"]))] for ka, kb in case["pairs"]]
    assert got == judge_tapes.broken_product_grads_none(case["pairs"]).tolist() == PREDICTED_NONE
    assert namespace["pairs"] is not None and len(namespace["pairs"]) == len(case["pairs"])


def second_derivative_back_over_forward(f, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
            y = f(x)
        dy = acc.jvp(y)
    return dy, tape.gradient(dy, x)


def hessian_back_over_forward(f, x):
    x = tf.constant(x)
    n = int(x.shape[0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        rows = []
        for i in range(n):
            with tf.autodiff.ForwardAccumulator(x, tf.one_hot(i, n)) as acc:
                y = f(x)
            rows.append(acc.jvp(y))
        g = tf.stack(rows)
    return tape.jacobian(g, x)


def test_back_over_forward_passes_where_a_tape_records_the_first_derivative(capsys):
    # Issue 28: a tape outside a ForwardAccumulator differentiates the jvp it recorded, row by
    # row for the Hessian (the rows stacked): the outer tape records the first derivative.
    tapes.check_second_derivative(second_derivative_back_over_forward)
    tapes.check_hessian(hessian_back_over_forward)
    out = capsys.readouterr().out
    assert "second_derivative: 3 cases passed" in out and "hessian: 3 cases passed" in out


def test_hessian_names_tf_hessians_in_a_tf_function_correct_and_asks_for_nested_tapes():
    # Issue 28: tf.hessians works only in a graph; it was refused with "raised RuntimeError"
    # (observing_tapes runs tf.functions eagerly). It is correct: M46 says so, and what is asked.
    @tf.function
    def by_tf_hessians(f, x):
        return tf.hessians(f(x), x)[0]

    error = fails_with(tapes.check_hessian, by_tf_hessians, "M46", "your answer is correct",
                       "tf.hessians", "nested GradientTapes")
    assert error.code == "graph_hessians"


# ---------------------------------------------------------------- decoy tape calls (red team)

def square_grad_decoy(x):
    """The formula handed back through an empty tape: gradient(v, v, output_gradients=...)."""
    value = tf.constant(2.0 * float(x), dtype=tf.float32)
    v = tf.Variable(0.0)
    with tf.GradientTape() as tape:
        pass
    return tape.gradient(v, v, output_gradients=value)


def grads_from_one_tape_decoy(x):
    v = tf.Variable(0.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(v)
        w = tf.identity(v)
    dz = tape.gradient(w, v, output_gradients=tf.constant(4.0 * float(x) ** 3))
    dy = tape.gradient(w, v, output_gradients=tf.constant(2.0 * float(x)))
    del tape
    return dz, dy


def test_square_grad_rejects_a_formula_handed_back_through_output_gradients():
    fails_with(tapes.check_square_grad, square_grad_decoy, "M21", "no automatic differentiation computed them")


def test_grads_from_one_tape_rejects_formulas_handed_back_through_output_gradients():
    fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_decoy, "M21")


def test_a_vector_jacobian_product_is_evidence_and_a_formula_handed_back_is_not():
    # Issue 28: output_gradients alone does not make a decoy; handing back what it was given does.
    from autograder.checks import harness
    x = tf.constant([1.0, 2.0])
    v = tf.constant([3.0, -1.0])
    with harness.recording_autodiff() as record:
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
            w = tf.identity(x)
        vjp = tape.gradient(y, x, output_gradients=v)
        tape.gradient(w, x, output_gradients=tf.constant([9.0, 9.0]))  # handed back: a decoy
    assert record.methods == ["gradient"] and record.produced(vjp)
    assert vjp.numpy().tolist() == [6.0, -4.0]


# ------------------------------------------ round 2: a made-up target laundered through a tape

def square_grad_made_up_target(x):
    """The formula 2x as the gradient of x * (a constant 2x): a tape produced it, but of a target
    that is not y = x * x."""
    v = tf.constant(float(x))
    with tf.GradientTape() as tape:
        tape.watch(v)
        t = v * tf.constant(2.0 * float(x))
    return tape.gradient(t, v)


def sum_squared_grad_made_up_target(x):
    """2 * sum(x) everywhere as the gradient of sum(x * formula)."""
    formula = tf.fill(tf.shape(x), 2.0 * tf.reduce_sum(x))
    with tf.GradientTape() as tape:
        tape.watch(x)
        t = tf.reduce_sum(x * tf.stop_gradient(formula))
    return tape.gradient(t, x)


def test_square_grad_rejects_the_gradient_of_a_made_up_target():
    fails_with(tapes.check_square_grad, square_grad_made_up_target, "M21",
               "the differentiated target was not y = x * x")


def test_sum_squared_grad_rejects_the_gradient_of_a_made_up_target():
    fails_with(tapes.check_sum_squared_grad, sum_squared_grad_made_up_target, "M21",
               "the differentiated target was not z = (sum of x) ** 2")
    fails_with(lambda fn: tapes.check_sum_squared_prediction([[20.0, 20.0], [20.0, 20.0]], fn),
               sum_squared_grad_made_up_target, "M21", "was not z = (sum of x) ** 2")


def test_grading_square_grad_rejects_a_made_up_target_without_showing_values():
    entry = judge.load()["check_square_grad"]
    cases = [0.75, -2.5]
    for fn, ok in ((square_grad, True), (square_grad_made_up_target, False)):
        reply = plain.loads(Entry.observe("check_square_grad", lambda fn=fn: (fn,), plain.dumps(
            {"cases": cases, "hidden": True, "options": {}})))
        errors = []
        for i, case in enumerate(cases):
            try:
                judge.judge_observation(entry, plain.roundtrip(case), reply["cases"][i],
                                        entry.context(i, case, True, reveal=False), {})
            except CheckFailed as error:
                errors.append(error)
        assert (not errors) == ok, errors
        for error in errors:
            assert error.mistake == "M21" and "0.75" not in str(error) and \
                "2.5" not in str(error) and "1.5" not in str(error), str(error)


# ---------------------------------------------------------------- 01: square_grad, predict then fix
# The draft of the notebook (a watched tf.constant(x), no dtype) is right for 3.0 and None for
# the integer 2 (M02); the student predicts both before it runs, then fixes it.

def draft_square_grad(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)


def square_grad_forward_mode(x):
    x = tf.constant(float(x))
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=tf.constant(1.0)) as acc:
        y = x * x
    return acc.jvp(y)


def square_grad_variable_and_jacobian(x):
    v = tf.Variable(tf.cast(x, tf.float32))
    with tf.GradientTape() as tape:
        y = tf.square(v)
    return tape.jacobian(y, v)


def test_square_grad_prediction_accepts_the_draft_s_behaviour_in_any_numeric_form(capsys):
    tapes.check_square_grad_prediction(6.0, None)
    tapes.check_square_grad_prediction(6, None)
    assert "square_grad_prediction" in capsys.readouterr().out


def test_square_grad_prediction_rejects_a_gradient_for_the_integer_naming_m02():
    with pytest.raises(CheckFailed) as info:
        tapes.check_square_grad_prediction(6.0, 4.0)
    assert info.value.mistake == "M02" and "int32" in flat(info.value)


def test_square_grad_prediction_rejects_a_measured_tensor_and_a_wrong_derivative():
    with pytest.raises(CheckFailed) as info:
        tapes.check_square_grad_prediction(tf.constant(6.0), None)
    assert info.value.code == "prediction_type"
    with pytest.raises(CheckFailed) as info:
        tapes.check_square_grad_prediction(9.0, None)
    assert info.value.code == "wrong_prediction" and "2x" in flat(info.value)


def test_grads_from_one_tape_prediction_accepts_none_and_none(capsys):
    tapes.check_grads_from_one_tape_prediction(None, None)
    assert "grads_from_one_tape_prediction: 1 case passed" in capsys.readouterr().out


def test_grads_from_one_tape_prediction_rejects_the_numbers_of_both_fixes_naming_m01():
    # 108.0 and 6.0 are what the draft gives once the constant is watched too: the answer of a
    # student who did not see the second bug behind the first.
    for predicted in [(108.0, 6.0), (None, 6.0), (108, None)]:
        with pytest.raises(CheckFailed) as info:
            tapes.check_grads_from_one_tape_prediction(*predicted)
        assert info.value.mistake == "M01" and "never watches" in flat(info.value)
    with pytest.raises(CheckFailed) as info:
        tapes.check_grads_from_one_tape_prediction(tf.constant(108.0), None)
    assert info.value.code == "prediction_type"


def test_grads_from_one_tape_prediction_is_what_the_draft_gives_with_a_persistent_tape():
    # The judge's reference (None, None), measured on this TensorFlow: the notebook's draft with
    # persistent=True and nothing else changed.
    source = next(c.source for c in nbformat.read(ROOT / "solutions/02_persistent_nested_tapes/"
                                                   "02_persistent_nested_tapes.ipynb", as_version=4).cells
                  if "def grads_from_one_tape_draft(" in c.source).split("\n\n\n")[0]
    assert source.count("tf.GradientTape()") == 1
    namespace = {"tf": tf}
    exec(source.replace("tf.GradientTape()", "tf.GradientTape(persistent=True)"), namespace)
    assert namespace["grads_from_one_tape_draft"](3.0) == (None, None)


def test_grading_the_grads_from_one_tape_prediction():
    entry = judge.load()["check_grads_from_one_tape_prediction"]
    request = plain.dumps({"cases": [None], "hidden": False, "options": {}})
    reply = plain.loads(Entry.observe("check_grads_from_one_tape_prediction", lambda: (108.0, 6.0),
                                      request))
    with pytest.raises(CheckFailed) as info:
        judge.judge_observation(entry, None, reply["cases"][0],
                                entry.context(0, None, False, reveal=False), {})
    assert info.value.mistake == "M01" and "108.0" in flat(info.value)  # 108.0 is in its why


def test_square_grad_rejects_the_notebooks_draft_with_m02():
    fails_with(tapes.check_square_grad, draft_square_grad, "M02", "int32")


def test_square_grad_accepts_forward_mode_and_a_jacobian_of_a_variable():
    # issue 28 item 3: every autodiff spelling is accepted where a derivative is asked
    tapes.check_square_grad(square_grad_forward_mode)
    tapes.check_square_grad(square_grad_variable_and_jacobian)
    assert grade("check_square_grad", square_grad_forward_mode, [0.5, -4, 7]) == 3


def test_grading_the_square_grad_prediction_shows_no_value():
    entry = judge.load()["check_square_grad_prediction"]
    request = plain.dumps({"cases": [None], "hidden": False, "options": {}})
    reply = plain.loads(Entry.observe("check_square_grad_prediction", lambda: (6.0, 4.0), request))
    with pytest.raises(CheckFailed) as info:
        judge.judge_observation(entry, None, reply["cases"][0],
                                entry.context(0, None, False, reveal=False), {})
    assert info.value.mistake == "M02" and "4.0" not in flat(info.value)


def test_the_draft_and_the_seven_none_reasons_of_notebook_01_hold_on_this_tensorflow():
    # The cells of section 4 claim None for an assign on the path and for model.predict.
    assert float(draft_square_grad(3.0)) == 6.0 and draft_square_grad(2) is None
    x, y = tf.Variable(3.0), tf.Variable(0.0)
    with tf.GradientTape() as tape:
        y.assign(x * x)
        loss = y * 1.0
    dx, dy = tape.gradient(loss, [x, y])
    assert dx is None and float(dy) == 1.0
    model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
    with tf.GradientTape() as tape:
        out = model.predict(tf.ones((1, 2)), verbose=0)
        loss = tf.reduce_sum(out)
    assert isinstance(out, np.ndarray)
    assert tape.gradient(loss, model.trainable_variables) == [None, None]


def test_a_message_never_says_no_tape_when_autodiff_made_the_value():
    error = fails_with(tapes.check_square_grad, square_grad_made_up_target, "M21",
                       "autodiff produced")
    assert "no tape" not in flat(error)


# ---------------------------------------------------------------- 02: forward-over-back asked elsewhere

def second_derivative_forward_over_back(f, x):
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        dy = tape.gradient(y, x)
    return dy, acc.jvp(dy)


def hessian_forward_over_back(f, x):
    rows = []
    for e in tf.unstack(tf.eye(x.shape[0], dtype=x.dtype)):
        with tf.autodiff.ForwardAccumulator(x, e) as acc:
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            g = tape.gradient(y, x)
        rows.append(acc.jvp(g))
    return tf.stack(rows)


def test_second_derivative_refuses_forward_over_back_saying_it_is_correct():
    error = fails_with(tapes.check_second_derivative, second_derivative_forward_over_back, "M46",
                       "your answer is correct", "nested GradientTapes", "because")
    assert "no tape" not in flat(error)


def test_hessian_refuses_forward_over_back_rows_saying_it_is_correct():
    fails_with(tapes.check_hessian, hessian_forward_over_back, "M46", "your answer is correct",
               "nested GradientTapes")


# ---------------------------------------------------------------- 02: hvp, forward-over-back

def hvp(f, x, v):
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
    return acc.jvp(g)


def hvp_accumulator_object_and_jacobian(f, x, v):
    accumulator = tf.autodiff.ForwardAccumulator(x, v)
    with accumulator:
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = f(x)
        gradient = tape.jacobian(value, x)  # of a scalar: the gradient
    return tf.identity(accumulator.jvp(gradient))


def hvp_full_hessian(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return tf.linalg.matvec(outer.jacobian(g, x), v)


def hvp_hessian_by_columns(f, x, v):
    columns = []
    for e in tf.unstack(tf.eye(x.shape[0])):
        with tf.autodiff.ForwardAccumulator(x, e) as acc:
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            g = tape.gradient(y, x)
        columns.append(acc.jvp(g))
    return tf.linalg.matvec(tf.stack(columns, axis=1), v)


def hvp_back_over_back(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        g_dot_v = tf.reduce_sum(g * v)
    return outer.gradient(g_dot_v, x)


def hvp_formula_gradient_pushed_forward(f, x, v):
    # right numbers for "sum of quartics" only: the gradient x ** 3 written by hand
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        g = x ** 3
    return acc.jvp(g)


def hvp_formula(f, x, v):
    return 3 * x ** 2 * v


QUARTIC = [{"f": "sum of quartics", "n": 6, "seed": 0}]

#: Hidden hvp cases as the solution notebook writes them.
HIDDEN_HVP_CASES = [
    {"tf": "def f(x):\n    return tf.reduce_sum(tf.math.log(tf.cosh(x)))\n",
     "np": "def grad(x):\n    return np.tanh(x)\n", "n": 30, "seed": 5},
    {"tf": "def f(x):\n    return 0.5 * tf.reduce_sum(x) ** 2 + tf.reduce_sum(tf.sin(x))\n",
     "np": "def grad(x):\n    return np.sum(x) * np.ones_like(x) + np.cos(x)\n", "n": 64, "seed": 6},
]


def test_hvp_accepts_forward_over_back_in_two_spellings(capsys):
    tapes.check_hvp(hvp)
    tapes.check_hvp(hvp_accumulator_object_and_jacobian)
    assert capsys.readouterr().out.count("hvp: 3 cases passed") == 2


def hvp_jvp_of_the_value(f, x, v):
    # the jvp of f's value, grad f . v, where the gradient's was meant
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        tape.gradient(y, x)
    return acc.jvp(y)


def test_hvp_of_the_value_is_named_the_jvp_of_the_value_in_the_kernel_and_in_grading():
    fails_with(tapes.check_hvp, hvp_jvp_of_the_value, "M101", "derivative of f along v",
               "jvp of the tape's gradient")
    graded_failure("check_hvp", hvp_jvp_of_the_value, [{"f": "coupled", "n": 17, "seed": 7}], "M101")


def test_hvp_rejects_the_full_hessian_times_v_with_m45():
    # the right numbers without the idea (the notebook's draft): H is built, then multiplied
    fails_with(tapes.check_hvp, hvp_full_hessian, "M45", "full Hessian", "n * n")


def test_hvp_rejects_the_hessian_built_column_by_column_with_m45():
    fails_with(tapes.check_hvp, hvp_hessian_by_columns, "M45", "column by column")


def test_hvp_refuses_back_over_back_saying_it_is_correct_and_why_forward():
    fails_with(tapes.check_hvp, hvp_back_over_back, "M46", "your H v is correct",
               "forward-over-back, because")


def test_hvp_rejects_a_formula_gradient_and_a_formula():
    fails_with(tapes.check_hvp, hvp_formula_gradient_pushed_forward, "M21", "formula",
               cases=QUARTIC)
    fails_with(tapes.check_hvp, hvp_formula, "M21", "no automatic differentiation computed them",
               cases=QUARTIC)


def test_grading_hvp_passes_hidden_source_cases_and_hides_them():
    assert grade("check_hvp", hvp, HIDDEN_HVP_CASES) == 2
    assert grade("check_hvp", hvp_accumulator_object_and_jacobian, HIDDEN_HVP_CASES) == 2
    graded_failure("check_hvp", hvp_full_hessian, HIDDEN_HVP_CASES, "M45", "hidden case 1",
                   secrets=["tanh", "cosh", "30"])
    graded_failure("check_hvp", hvp_back_over_back, HIDDEN_HVP_CASES, "M46", "hidden case 1",
                   secrets=["tanh", "cosh"])


def test_hvp_prediction_accepts_the_arithmetic_and_names_what_is_wrong(capsys):
    tapes.check_hvp_prediction(4.0, 0.004, 1000)
    tapes.check_hvp_prediction(4, 4e-3, 1000)
    assert "hvp_prediction" in capsys.readouterr().out
    for predicted, name in (((4000.0, 0.004, 1000), "predicted_hessian_mb"),
                            ((4.0, 0.04, 1000), "predicted_hvp_mb"),
                            ((4.0, 0.004, 1), "predicted_hvps_per_hessian")):
        with pytest.raises(CheckFailed) as info:
            tapes.check_hvp_prediction(*predicted)
        assert info.value.code == "wrong_prediction" and name in flat(info.value)
    with pytest.raises(CheckFailed) as info:
        tapes.check_hvp_prediction(4.0, 0.004, 1000.0)
    assert info.value.code == "prediction_type"


# ---------------------------------------------------------------- one recorder (harness)

def test_the_one_recorder_sees_every_spelling_of_autodiff_and_restores_the_methods():
    from autograder.checks import harness
    before = [tf.GradientTape.gradient, tf.GradientTape.jacobian,
              tf.GradientTape.batch_jacobian, tf.autodiff.ForwardAccumulator.jvp, tf.gradients]
    x = tf.constant([[1.0, 2.0]])
    with harness.recording_autodiff() as record:
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
        g = tape.gradient(y, x)
        j = tape.jacobian(y, x)
        b = tape.batch_jacobian(y, x)
        tape.gradient(tf.identity(y), y, output_gradients=tf.ones_like(y))  # a decoy: not evidence
        with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
            z = x * 3.0
        t = acc.jvp(z)
        tf.function(lambda: tf.gradients(tf.constant(1.0) * 2.0, []))()
    assert record.methods == ["gradient", "jacobian", "batch_jacobian", "jvp"]
    assert all(record.produced(value) for value in (g, j, b, t))
    assert [c.forward for c in record.events] == [False, False, False, True]
    assert record.events[3].target_value.tolist() == [[3.0, 6.0]]
    assert record.largest_result() == 4 and record.graph_gradients == 1
    assert before == [tf.GradientTape.gradient, tf.GradientTape.jacobian,
                      tf.GradientTape.batch_jacobian, tf.autodiff.ForwardAccumulator.jvp,
                      tf.gradients]
    with harness.recording_gradients() as reverse_only:
        with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
            z = x * 3.0
        acc.jvp(z)
    assert reverse_only.calls == []


def test_the_tape_checks_record_through_the_harness_recorder():
    from autograder.checks import harness
    with tapes.observing_tapes() as record:
        square_grad(3.0)
    assert isinstance(record, harness.GradientRecord) and record.methods == ["gradient"]
    assert not hasattr(tapes, "TapeRecord")


# ---------------------------------------------------------------- hidden material stays on the grader

def test_the_kernel_half_defines_only_the_functions_of_visible_cases():
    entries = judge.load()
    visible = {"check_second_derivative": tapes.SCALAR_FUNCTIONS,
               "check_hessian": tapes.VECTOR_FUNCTIONS}
    for check_name, functions in visible.items():
        named = {case[0] for case in entries[check_name].cases}
        assert set(functions) <= named, check_name
    assert {c["f"] for c in entries["check_hvp"].cases} == set(tapes.HVP_FUNCTIONS)
    assert set(judge_tapes.HVP_GRADIENTS) == set(tapes.HVP_FUNCTIONS)
    from pathlib import Path
    text = Path(tapes.__file__).read_text() + Path(judge_tapes.__file__).read_text()
    for hidden in ("reduce_logsumexp", "x * tf.sin(x)", "np.tanh(x)", "log(tf.cosh(x))"):
        assert hidden not in text, hidden


def test_second_derivative_grades_hidden_cases_given_as_source_text():
    cases = [{"tf": "def f(x):\n    return tf.tanh(x)\n",
              "np": "def f(x):\n    return np.tanh(x)\ndef df(x):\n    return 1 - np.tanh(x) ** 2\n"
                    "def d2f(x):\n    return -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)\n",
              "x": -0.4}]
    assert grade("check_second_derivative", second_derivative, cases) == 1
    graded_failure("check_second_derivative", second_derivative_forward_over_back, cases, "M46",
                   "hidden case 1", secrets=["tanh", "-0.4"])


def test_the_hvp_references_agree_with_tensorflow():
    for name, f in tapes.HVP_FUNCTIONS.items():
        x, v = judge_tapes.hvp_problem({"n": 7, "seed": 3})
        got = hvp(f, tf.constant(x, tf.float64), tf.constant(v, tf.float64))
        want = judge_tapes.hvp_reference(judge_tapes.HVP_GRADIENTS[name], x, v)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-8, err_msg=name)


# ---------------------------------------------------------------- 01: model.predict inside the tape

def train_step_predict(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        logits = model.predict(x, verbose=0)
        loss_value = loss_object(y, logits)
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss_value


def test_train_step_names_model_predict_inside_the_tape_with_m47(capsys):
    fails_with(tapes.check_train_step, train_step_predict, "M47", "model.predict",
               "call the model object itself on the inputs inside the tape")
    fails_with(lambda fn: tapes.check_train_step_fault(BROKEN_LINE, fn), train_step_predict,
               "M47", "model.predict")
    assert capsys.readouterr().err == ""


def grads_from_one_tape_forward_mode(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        y = x * x
        z = y * y
    return acc.jvp(z), acc.jvp(y)


def test_grads_from_one_tape_refuses_forward_mode_saying_it_is_correct():
    error = fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_forward_mode, "M46",
                       "your answer is correct", "persistent GradientTape", "because")
    assert "no tape" not in flat(error)


# ---------------------------------------------------------------- 02: the notebook's drafts
# Each find-and-fix exercise of 02 shows a colleague's draft; handed in unchanged it fails with
# its mistake id, and each half-fixed version fails with the id of the bug still left.

def grads_from_one_tape_draft(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        y = x * x
        z = y * y
    dz_dx = tape.gradient(z, x)
    dy_dx = tape.gradient(y, x)
    return dz_dx, dy_dx


def grads_from_one_tape_of_a_variable(x):
    x = tf.Variable(float(x))
    with tf.GradientTape(persistent=True) as tape:
        z = (x * x) * (x * x)
        y = x * x
    grads = [tape.gradient(target, x) for target in (z, y)]
    del tape
    return tuple(grads)


def test_grads_from_one_tape_draft_fails_with_m04_then_m01():
    fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_draft, "M04")
    fails_with(tapes.check_grads_from_one_tape, grads_from_one_tape_unwatched, "M01", "watch")


def test_grads_from_one_tape_accepts_a_persistent_tape_of_a_variable(capsys):
    tapes.check_grads_from_one_tape(grads_from_one_tape_of_a_variable)
    assert "passed" in capsys.readouterr().out


def second_derivative_after_block_unwatched(f, x):
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    dy_dx = inner.gradient(y, x)
    d2y_dx2 = outer.gradient(dy_dx, x)
    return dy_dx, d2y_dx2


def second_derivative_watching_both_at_once(f, x):
    with tf.GradientTape() as outer, tf.GradientTape() as inner:
        outer.watch(x)
        inner.watch(x)
        y = f(x)
        inner_done = inner.gradient(y, x)
    return inner_done, outer.gradient(inner_done, x)


def test_second_derivative_after_block_unwatched_fails_with_m05_and_each_half_fix_with_the_other_bug():
    fails_with(tapes.check_second_derivative, second_derivative_after_block_unwatched, "M05", "outer tape")
    # the gradient moved inside, x still unwatched by the outer tape; and the reverse
    fails_with(tapes.check_second_derivative, second_derivative_outer_unwatched, "M01", "watch")
    fails_with(tapes.check_second_derivative, second_derivative_inner_outside, "M05",
               "outer tape")


def test_second_derivative_accepts_two_tapes_opened_in_one_with(capsys):
    tapes.check_second_derivative(second_derivative_watching_both_at_once)
    assert "passed" in capsys.readouterr().out


def hessian_column_sums(f, x):  # the gradient of the gradient: sum(g) differentiated
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        grad = inner.gradient(y, x)
    return outer.gradient(grad, x)


def hessian_draft(f, x):  # the notebook's draft: each grad[i] sliced after the outer block
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        grad = inner.gradient(y, x)
    rows = [outer.gradient(grad[i], x) for i in range(x.shape[0])]
    del outer
    return tf.stack(rows)


def hessian_draft_unwatched(f, x):  # the draft's slicing fixed, the outer watch left out
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        grad = inner.gradient(y, x)
        entries = [grad[i] for i in range(x.shape[0])]
    rows = [outer.gradient(entry, x) for entry in entries]
    del outer
    return tf.stack(rows)


def hessian_entries_sliced_inside(f, x):  # the draft with its slicing moved into the block
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        grad = inner.gradient(y, x)
        entries = [grad[i] for i in range(x.shape[0])]
    rows = [outer.gradient(entry, x) for entry in entries]
    del outer
    return tf.stack(rows)


def hessian_jacobian_of_the_drafts_gradient(f, x):  # the draft's tapes, one jacobian call
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        grad = inner.gradient(y, x)
    return outer.jacobian(grad, x)


def test_hessian_rejects_the_draft_that_slices_the_gradient_after_the_outer_block():
    error = fails_with(tapes.check_hessian, hessian_draft, "M05", "returned None",
                       "never recorded", "inside the outer tape's block")
    assert error.code == "target_outside"
    graded_failure("check_hessian", hessian_draft, [("square of sum", [0.5, 1.0])], "M05",
                   "never recorded", "the outer tape's jacobian, which keeps one row per entry",
                   secrets=("0.5",))


def test_hessian_rejects_the_fixed_slicing_without_the_outer_watch_as_m01():
    fails_with(tapes.check_hessian, hessian_draft_unwatched, "M01", "watch")


def test_hessian_accepts_the_draft_fixed_three_ways(capsys):
    for fn in (hessian_entries_sliced_inside, hessian_persistent_outer_rows,
               hessian_jacobian_of_the_drafts_gradient):
        tapes.check_hessian(fn)
        tapes.check_hessian(fn, hidden=True, cases=HIDDEN_HESSIAN_CASES)
    assert capsys.readouterr().out.count("passed") == 6


def test_hessian_rejects_a_closed_form_written_by_hand():
    # The right numbers for the sum of cubes (H = diag(6 x)) with no tape at all.
    fails_with(tapes.check_hessian, lambda f, x: tf.linalg.diag(6.0 * x), "M21",
               "no automatic differentiation computed them", cases=[("sum of cubes", [1.0, -2.0])],
               hidden=True)


def hessian_reduced_first(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        total = tf.reduce_sum(inner.gradient(y, x))
    return outer.jacobian(total, x)


def hessian_persistent_outer_rows(f, x):
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        grad = inner.gradient(y, x)
        entries = tf.unstack(grad)
    rows = [outer.gradient(entry, x) for entry in entries]
    del outer
    return tf.stack(rows)


def test_hessian_column_sums_and_a_gradient_reduced_first_fail_with_m64():
    fails_with(tapes.check_hessian, hessian_column_sums, "M64", "column sums")
    fails_with(tapes.check_hessian, hessian_reduced_first, "M64", "column sums")
    graded_failure("check_hessian", hessian_column_sums, [("square of sum", [0.5, 1.0])], "M64",
                   "column sums", secrets=("0.5",))


def test_hessian_accepts_rows_from_a_persistent_outer_tape(capsys):
    tapes.check_hessian(hessian_persistent_outer_rows)
    assert "passed" in capsys.readouterr().out


def hvp_gradient_after_the_block(f, x, v):
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
    g = tape.gradient(y, x)
    return acc.jvp(g)


def test_hvp_gradient_after_the_block_fails_with_m05_in_the_kernel_and_in_grading():
    fails_with(tapes.check_hvp, hvp_gradient_after_the_block, "M05", "with` block",
               "the accumulator's jvp of that gradient")
    graded_failure("check_hvp", hvp_gradient_after_the_block, [{"f": "coupled", "n": 9, "seed": 4}], "M05",
                   "after the block closed", secrets=("coupled",))


def test_grading_words_the_inner_gradient_outside_for_what_was_written():
    error = graded_failure("check_second_derivative", second_derivative_after_block_unwatched, [("x**3", 0.7)],
                           "M05", "take the first derivative inside the outer tape's block",
                           "outer block", secrets=("0.7",))
    assert error.code == "inner_gradient_outside"
    graded_failure("check_hessian", hessian_inner_outside, [("square of sum", [0.5, 1.0])],
                   "M05", "the outer tape's jacobian of", "outer block", secrets=("0.5",))


# ---------------------------------------------------------------- 02: hessian beside a tape (#28)

def hessian_finite_differences_beside_a_tape(f, x):
    # Nested tapes run and their jacobian is thrown away; the matrix returned is central finite
    # differences in float64, which agree with the tape's float32 values to 1e-6.
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    outer.jacobian(g, x)
    n, h = int(x.shape[0]), 1e-4
    p = tf.cast(x, tf.float64)
    e = tf.eye(n, dtype=tf.float64) * h
    rows = [tf.stack([(f(p + e[i] + e[j]) - f(p + e[i] - e[j]) - f(p - e[i] + e[j])
                       + f(p - e[i] - e[j])) / (4 * h * h) for j in range(n)]) for i in range(n)]
    return tf.cast(tf.stack(rows), tf.float32)


def hessian_one_persistent_tape_as_numpy(f, x):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
        g = tape.gradient(y, x)
    h = tape.jacobian(g, x)
    del tape
    return tf.constant(h.numpy())


@tf.function
def hessian_symmetrised_in_a_tf_function(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x)
    return 0.5 * (h + tf.transpose(h))


def test_hessian_rejects_finite_differences_returned_beside_an_unused_jacobian():
    # Issue 28: the float64 finite differences equal the tape's values, so "a tape call returned
    # these numbers" held; a second call with every autodiff result shifted shows they are not
    # the tape's (they stay put).
    error = fails_with(tapes.check_hessian, hessian_finite_differences_beside_a_tape, "M21",
                       "not those calls' results", "shifted every result",
                       "return the result of its jacobian of the inner tape's gradient")
    assert error.code == "beside_tape"
    assert "no automatic differentiation" not in flat(error)
    error = graded_failure("check_hessian", hessian_finite_differences_beside_a_tape,
                           HIDDEN_HESSIAN_CASES, "M21", "hidden case 1", "computed beside the tape",
                           secrets=["0.3", "1.2"])
    assert error.code == "beside_tape"


def test_hessian_accepts_a_tape_result_copied_or_symmetrised(capsys):
    for fn in (hessian_one_persistent_tape_as_numpy, hessian_symmetrised_in_a_tf_function):
        tapes.check_hessian(fn)
        tapes.check_hessian(fn, hidden=True, cases=HIDDEN_HESSIAN_CASES)
        assert grade("check_hessian", fn, HIDDEN_HESSIAN_CASES) == 2
    assert capsys.readouterr().out.count("hessian: 3 cases passed") == 2


# ---------------------------------------------------------------- 02: finite differences through a tape (#28)
# Each answer below gets its numbers from finite differences and hands them back through real
# tape calls built to return them (tf.stop_gradient targets whose value is f's and whose
# derivative is the difference quotient): the values agree with the tapes', the calls are
# nested, and every result moves with the shift. Only f's evaluations away from x tell.

def _difference(f, x, h=1e-3):
    return lambda p: (f(p + h) - f(p - h)) / (2 * h)


def second_derivative_differences_through_tapes(f, x):
    h = 1e-3
    x64 = tf.cast(x, tf.float64)
    d1 = tf.cast(_difference(f, x64)(x64), tf.float32)
    d2 = tf.cast((f(x64 + h) - 2 * f(x64) + f(x64 - h)) / h ** 2, tf.float32)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * d1 + tf.stop_gradient(f(x) - x * d1)
        g = inner.gradient(y, x)
        g = g + x * d2 - tf.stop_gradient(x * d2)
    return g, outer.gradient(g, x)


def hessian_differences_through_tapes(f, x):
    n, h = x.shape[0], 1e-3
    x64, e = tf.cast(x, tf.float64), np.eye(n)
    columns = [(_grad_fd(f, x64 + h * e[j]) - _grad_fd(f, x64 - h * e[j])) / (2 * h) for j in range(n)]
    H = tf.cast(tf.stack(columns, axis=1), tf.float32)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        g = tf.stop_gradient(g) + tf.linalg.matvec(H, x) - tf.stop_gradient(tf.linalg.matvec(H, x))
    return outer.jacobian(g, x)


def _grad_fd(f, p, h=1e-3):
    n = p.shape[0]
    return tf.stack([(f(p + h * tf.one_hot(i, n, dtype=p.dtype)) - f(p - h * tf.one_hot(i, n, dtype=p.dtype)))
                     / (2 * h) for i in range(n)])


def hvp_differences_through_an_accumulator(f, x, v):
    h = 1e-3
    x64, v64 = tf.cast(x, tf.float64), tf.cast(v, tf.float64)

    def grad(p):
        with tf.GradientTape() as t:
            t.watch(p)
            y = f(p)
        return t.gradient(y, p)

    hv = tf.cast((grad(x64 + h * v64) - grad(x64 - h * v64)) / (2 * h), tf.float32)
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
        along = hv * tf.reduce_sum(x * v) / tf.reduce_sum(v * v)
        g = tf.stop_gradient(g) + along - tf.stop_gradient(along)
    return acc.jvp(g)


def test_finite_differences_passed_through_tape_calls_fail_with_the_idea_named():
    for check, fn in [(tapes.check_second_derivative, second_derivative_differences_through_tapes),
                      (tapes.check_hessian, hessian_differences_through_tapes),
                      (tapes.check_hvp, hvp_differences_through_an_accumulator)]:
        error = fails_with(check, fn, "M21", "returns the right numbers", "at points other than x",
                           "finite differences")
        assert error.code == "finite_differences"
    graded_failure("check_hessian", hessian_differences_through_tapes, [("square of sum", [0.5, 1.0])],
                   "M21", "finite differences", secrets=("0.5",))


def second_derivative_of_x_reshaped_and_cast(f, x):
    # f evaluated at x alone, though reshaped and in float64: autodiff, not differences
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.cast(tf.reshape(f(tf.cast(tf.reshape(x, [-1]), tf.float64)), tf.shape(x)), tf.float32)
        g = inner.gradient(y, x)
    return g, outer.gradient(g, x)


def test_f_evaluated_at_x_alone_in_another_shape_or_dtype_is_not_finite_differences(capsys):
    tapes.check_second_derivative(second_derivative_of_x_reshaped_and_cast)
    tapes.check_second_derivative(second_derivative)
    tapes.check_hessian(hessian)
    tapes.check_hvp(hvp)
    assert capsys.readouterr().out.count("passed") == 4
