"""The checks of 03 (tf.function and AutoGraph): correct implementations pass, known-wrong ones fail
with the id of the course catalogue (autograder/checks/mistakes.py) and a message that names the
cause. Real TensorFlow."""
import logging
import sys

import tensorflow as tf

from autograder.checks import graphs as checks
from autograder.checks.capture import capture_output
from tests.expect import fails_with


# ------------------------------------------------------------------ square_if_positive (tf.cond)

def square_if_positive(x):
    return tf.cond(tf.greater(x, 0), lambda: x * x, lambda: x)


def square_if_positive_python_if(x):
    if x > 0:
        return x * x
    return x


def square_if_positive_where(x):
    return tf.where(x > 0, x * x, x)


def test_square_if_positive_accepts_tf_cond(capsys):
    checks.check_square_if_positive(square_if_positive, cases=[3.0, -2.0, 0.5], hidden=True)
    assert "3 cases passed" in capsys.readouterr().out


def test_square_if_positive_accepts_decorated_function():
    checks.check_square_if_positive(tf.function(square_if_positive, autograph=False))


def test_square_if_positive_rejects_python_if_without_autograph():
    fails_with(checks.check_square_if_positive, tf.function(square_if_positive_python_if),
               "M09", "OperatorNotAllowedInGraphError", "tf.cond")


def test_square_if_positive_rejects_graph_without_cond():
    error = fails_with(checks.check_square_if_positive, square_if_positive_where, None, "no If op")
    assert "tf.cond" in str(error)


def test_square_if_positive_rejects_wrong_branch():
    wrong = lambda x: tf.cond(x > 0, lambda: x * x, lambda: -x)  # noqa: E731
    fails_with(checks.check_square_if_positive, wrong, None, "expected")


# ------------------------------------------------------------------ noisy_square (tf.print)

@tf.function
def noisy_square(x):
    tf.print("square of", x, output_stream=sys.stdout)
    return x * x


@tf.function
def noisy_square_stderr(x):
    tf.print("square of", x)
    return x * x


@tf.function
def noisy_square_python_print(x):
    print("square of", x)
    return x * x


def test_noisy_square_counts_tf_print_lines_on_stdout_or_stderr(capfd):
    checks.check_noisy_square(noisy_square, cases=[(-1.5, 4), (2.0, 2)], hidden=True)
    checks.check_noisy_square(noisy_square_stderr)
    captured = capfd.readouterr()
    assert "square of" not in captured.out + captured.err  # captured, not re-emitted
    assert captured.err == ""


def test_noisy_square_rejects_python_print():
    fails_with(checks.check_noisy_square, noisy_square_python_print, "M08", "tf.print", "traces")


def test_noisy_square_rejects_undecorated_function():
    fails_with(checks.check_noisy_square, noisy_square.python_function, None, "not a tf.function")


def test_capture_output_sees_tf_print_at_fd_level(capfd):
    with capture_output() as out:
        noisy_square_stderr(tf.constant(7.0))
        noisy_square(tf.constant(8.0))
        print("python line")
    assert "square of 7" in out.fd_stderr
    assert "square of 8" in out.fd_stdout
    assert "python line" in out.py_stdout
    assert capfd.readouterr().err == ""


# ------------------------------------------------------------------ Accumulator (tf.Variable)

class Accumulator(tf.Module):
    def __init__(self):
        super().__init__()
        self.total = tf.Variable(0.0)

    @tf.function
    def add(self, x):
        self.total.assign_add(x)
        return self.total.read_value()


class AccumulatorVariableInside(tf.Module):
    @tf.function
    def add(self, x):
        self.total = tf.Variable(0.0)
        self.total.assign_add(x)
        return self.total.read_value()


class AccumulatorShared(tf.Module):
    shared = None

    @tf.function
    def add(self, x):
        if AccumulatorShared.shared is None:
            AccumulatorShared.shared = tf.Variable(0.0)
        self.total = AccumulatorShared.shared
        self.total.assign_add(x)
        return self.total.read_value()


def test_accumulator_accepts_variable_made_in_init():
    checks.check_accumulator(Accumulator, cases=[[5.0, -1.5], [0.25] * 4], hidden=True)


def test_accumulator_rejects_variable_created_inside_tf_function():
    fails_with(checks.check_accumulator, AccumulatorVariableInside, "M07", "ValueError",
               "outside")


def test_accumulator_rejects_total_shared_between_instances():
    fails_with(checks.check_accumulator, AccumulatorShared, None, "expected")


# ------------------------------------------------------------------ make_celsius_to_fahrenheit

def fahrenheit(c):
    return c * 9.0 / 5.0 + 32.0


ANY_FLOAT = [tf.TensorSpec(shape=None, dtype=tf.float32)]


def test_celsius_to_fahrenheit_accepts_input_signature():
    made = []

    def make():
        made.append(tf.function(fahrenheit, input_signature=ANY_FLOAT))
        return made[-1]

    checks.check_make_celsius_to_fahrenheit(make, cases=[37.0, [0.0, 10.0], [[1.0], [2.0]], -5.5],
                                            hidden=True)
    assert made[0].experimental_get_tracing_count() == 1


def test_celsius_to_fahrenheit_rejects_retracing_on_python_floats():
    error = fails_with(checks.check_make_celsius_to_fahrenheit, lambda: tf.function(fahrenheit),
                       None, "input_signature")
    assert "traced 3 times" in str(error)


def test_celsius_to_fahrenheit_rejects_reduce_retracing_alone():
    fails_with(checks.check_make_celsius_to_fahrenheit,
               lambda: tf.function(fahrenheit, reduce_retracing=True), None, "reduce_retracing")


def test_celsius_to_fahrenheit_rejects_wrong_formula():
    wrong = tf.function(lambda c: c * 5.0 / 9.0 + 32.0, input_signature=ANY_FLOAT)
    fails_with(checks.check_make_celsius_to_fahrenheit, lambda: wrong, None, "expected")


def test_celsius_to_fahrenheit_rejects_plain_python_function():
    fails_with(checks.check_make_celsius_to_fahrenheit, lambda: fahrenheit, None,
               "not a tf.function")


# ------------------------------------------------------------------ grad_through

def grad_through(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def grad_through_unwatched(f, x):
    with tf.GradientTape() as tape:
        y = f(x)
    return tape.gradient(y, x)


def test_grad_through_matches_analytic_derivatives():
    checks.check_grad_through(grad_through,
                              cases=[("poly", -1.0), ("branchy", 0.5), ("sin_x", 1.2)], hidden=True)


def test_grad_through_rejects_unwatched_constant():
    fails_with(checks.check_grad_through, grad_through_unwatched, "M01", "tape.watch")


def test_capture_output_redirects_logging_handlers_that_write_to_stderr(capfd):
    # In a Jupyter kernel TensorFlow's logger has such a handler, holding the kernel's stderr.
    logger = logging.getLogger("capture-test")
    handler = logging.StreamHandler(sys.stderr)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with capture_output() as out:
            logger.error("a logged line")
    finally:
        logger.removeHandler(handler)
    assert "a logged line" in out.py_stderr
    assert handler.stream is sys.stderr  # restored
    captured = capfd.readouterr()
    assert "a logged line" not in captured.out + captured.err


def test_unwritten_exercise_is_reported_as_not_written_yet():
    @tf.function
    def blank(x):
        raise NotImplementedError()

    error = fails_with(checks.check_noisy_square, blank, None, "not written yet")
    assert "raise NotImplementedError()" in str(error)
