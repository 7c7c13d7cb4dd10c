"""The ten inputs of issue 10, each as a right or known-wrong implementation: a correct answer
gets full marks, and each mistake is named by its real cause (mistake id and fix), never by a
neighbouring cause or a raw TensorFlow error. Real TensorFlow."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import control_flow, graphs, software, tapes, training
from tests.expect import fails, fails_with, flat


# ------------------------------------------------------------ 1. 03 grad_through, own variable

def grad_through_own_variable(f, x):
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = f(v)
    return tape.gradient(y, v)


def test_grad_through_accepts_a_variable_of_its_own_in_every_call(capsys):
    # The checks make a new tf.function per case: a kept one would remember the first variable.
    graphs.check_grad_through(grad_through_own_variable)
    graphs.check_grad_through(grad_through_own_variable,
                              cases=[("poly", -1.5), ("branchy", 0.5), ("sin_x", 1.2)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


# ------------------------------------------------------------ 2. 01 train_step, op without gradient

def _train_step_with(transform):
    def train_step(model, optimizer, loss_object, x, y):
        with tf.GradientTape() as tape:
            loss_value = loss_object(y, transform(model(x)))
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss_value
    return train_step


@pytest.mark.parametrize("transform,op", [
    (tf.round, "tf.round"),
    (lambda logits: tf.cast(tf.cast(logits, tf.int32), tf.float32), "integer"),
    (lambda logits: tf.cast(tf.argmax(logits, axis=1)[:, None], tf.float32), "tf.argmax"),
])
def test_train_step_names_an_op_without_gradient_in_the_loss(transform, op):
    error = fails_with(tapes.check_train_step, _train_step_with(transform), "M12", op,
                       "no gradient", "Fix:")
    assert "outside the tape" not in str(error)


# ------------------------------------------------------------ 3. 06 stop_gradient

def make_train_step_stop_gradient(model, optimizer, loss_fn, loss_metric, acc_metric):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.stop_gradient(model(x, training=True))
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return step


def test_make_train_step_names_stop_gradient():
    fails_with(training.check_make_train_step, make_train_step_stop_gradient, "M13",
               "tf.stop_gradient", "remove tf.stop_gradient")


def test_fit_names_stop_gradient_of_its_train_step():
    def fit(model, optimizer, train_ds, val_ds, epochs):
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        step = make_train_step_stop_gradient(model, optimizer, loss_fn, tf.keras.metrics.Mean(),
                                             tf.keras.metrics.SparseCategoricalAccuracy())
        for _ in range(epochs):
            for x_batch, y_batch in train_ds:
                step(x_batch, y_batch)
        return {}
    fails_with(training.check_fit, fit, "M13", "tf.stop_gradient")


# ------------------------------------------------------------ 4. 01 fit_line, np.square in the tape

def fit_line_numpy_square(x, y, lr, steps):
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(np.square(w * x + b - y))
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
        losses.append(float(loss))
    return w, b, losses


def test_fit_line_names_numpy_inside_the_tape_not_a_rebound_variable():
    error = fails_with(tapes.check_fit_line, fit_line_numpy_square, "M14", "left TensorFlow",
                       "tf.*")
    assert "assign_sub" not in flat(error)


# ------------------------------------------------------------ 5. 05 graph_backward_tape, np.sum

def graph_backward_tape_np_sum(x, y, z):
    with tf.GradientTape() as tape:
        tape.watch([x, y, z])
        b = x * y + z
        c = np.sum(b)
    grad_x, grad_y, grad_z = tape.gradient(c, [x, y, z])
    return c, grad_x, grad_y, grad_z


def test_graph_backward_tape_names_numpy_inside_the_tape():
    error = fails_with(software.check_graph_backward_tape, graph_backward_tape_np_sum, "M14",
                       "NumPy", "tf.reduce_sum")
    assert str(error).startswith("[M14:")


# ------------------------------------------------------------ 6. 04 sum_even with a Python list

@tf.function
def sum_even_python_list(items):
    evens = []
    for item in items:
        if item % 2 != 0:
            continue
        evens.append(item)
    return tf.reduce_sum(evens)


def test_sum_even_names_python_list_and_tensor_array():
    fails_with(control_flow.check_sum_even, sum_even_python_list, "M15", "Python list",
               "tf.TensorArray")


# ------------------------------------------------------------ 7. identity tests, .numpy(), int32

@tf.function
def classify_identity(x):
    if (x > 0) is True:
        return "positive"
    elif (x < 0) is True:
        return "negative"
    return "zero"


def test_classify_names_python_identity_test():
    fails_with(control_flow.check_classify, lambda rules, default: classify_identity, "M17", "x is True",
               "a comparison of the tensor itself")


@tf.function
def sgd_step_numpy(x, y, w1, w2, lr):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.reduce_sum((tf.nn.relu(x @ w1) @ w2 - y) ** 2, axis=1))
    g1, g2 = tape.gradient(loss, [w1, w2])
    w1.assign_sub(lr * g1)
    w2.assign_sub(lr * g2)
    return loss.numpy()


def test_sgd_step_names_numpy_inside_tf_function():
    error = fails_with(software.check_sgd_step, sgd_step_numpy, "M16", ".numpy()")
    assert "in user code" not in str(error).splitlines()[0]


def fit_line_int_variable(x, y, lr, steps):
    w, b = tf.Variable(0), tf.Variable(0)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
        losses.append(float(loss))
    return w, b, losses


def test_fit_line_names_int32_variable():
    fails_with(tapes.check_fit_line, fit_line_int_variable, "M20", "int32", "float",
               "give the variable its dtype")


# ------------------------------------------------------------ 8. jit_compile=True

@tf.function(jit_compile=True)
def noisy_square_xla(x):
    tf.print("square of", x, output_stream=sys.stdout)
    return x * x


@tf.function(jit_compile=True)
def classify_xla(x):
    if x > 0:
        return "positive"
    elif x < 0:
        return "negative"
    else:
        return "zero"


def test_jit_compile_with_tf_print_names_the_op_xla_cannot_compile():
    error = fails_with(graphs.check_noisy_square, noisy_square_xla, "M18", "jit_compile=True",
                       "StringFormat")
    assert "TF_DUMP_GRAPH_PREFIX" not in str(error)


def test_jit_compile_with_strings_names_the_op_xla_cannot_compile():
    fails_with(control_flow.check_classify, lambda rules, default: classify_xla, "M18", "StatelessIf",
               "string outputs", "remove jit_compile=True")


# ------------------------------------------------------------ 9. 06 training cell failed

def test_final_model_says_the_training_cell_failed_and_why():
    def train_final_model():
        return tf.keras.optimizers.legacy.Adam()  # gone in Keras 3

    message = fails(lambda m: training.check_final_model(m, np.zeros((2, 64)), np.zeros(2),
                                                         retrain=train_final_model),
                    None, None, "the cell that runs `model, history = train_final_model")
    assert "legacy" in message and "more epochs" not in message


# ------------------------------------------------------------ 10. run_functions_eagerly(True)

@tf.function
def noisy_square_python_print(x):
    print("square of", x)
    return x * x


@tf.function
def noisy_square(x):
    tf.print("square of", x, output_stream=sys.stdout)
    return x * x


@pytest.fixture
def eager_switch_on():
    tf.config.run_functions_eagerly(True)
    yield
    tf.config.run_functions_eagerly(False)


def test_graph_checks_run_as_graphs_when_eager_switch_is_left_on(eager_switch_on, capsys):
    graphs.check_noisy_square(noisy_square)
    graphs.check_make_celsius_to_fahrenheit(lambda: tf.function(
        lambda c: c * 9.0 / 5.0 + 32.0, input_signature=[tf.TensorSpec([None], tf.float32)]))
    error = fails_with(graphs.check_noisy_square, noisy_square_python_print, "M08",
                       "run_functions_eagerly(True)", "M19", "run_functions_eagerly(False)")
    assert str(error).startswith("[M08:")
    assert tf.config.functions_run_eagerly()  # the student's setting is left as it was
    assert capsys.readouterr().err == ""
