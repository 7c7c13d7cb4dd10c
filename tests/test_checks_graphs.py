"""The checks of 03 (tf.function and AutoGraph): correct implementations pass, known-wrong ones fail
with the id of the course catalogue (autograder/checks/mistakes.py) and a message that names the
cause. Real TensorFlow."""
import logging
import sys

import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import graphs as checks
from autograder.checks import judge, plain
from autograder.checks.capture import capture_output
from autograder.checks.compare import CheckFailed
from autograder.checks.kernel_entry import Entry
from tests.expect import fails_with, flat


# ------------------------------------------------------------------ square_if_positive (tf.cond)
# Issue 27: x * x if x > 0, else 0.0 (a one-sided squared penalty), fixed from a draft whose
# Python if fails without AutoGraph and whose other branch returns the int 0.

def square_if_positive(x):
    return tf.cond(tf.greater(x, 0), lambda: x * x, lambda: 0.0)


def square_if_positive_python_if(x):
    if x > 0:
        return x * x
    return 0.0


def square_if_positive_where(x):
    return tf.where(x > 0, x * x, 0.0)


def test_square_if_positive_accepts_tf_cond(capsys):
    checks.check_square_if_positive(square_if_positive, cases=[3.0, -2.0, 0.5], hidden=True)
    assert "3 cases passed" in capsys.readouterr().out


def test_square_if_positive_accepts_decorated_function():
    checks.check_square_if_positive(tf.function(square_if_positive, autograph=False))


def test_square_if_positive_accepts_two_other_correct_answers(capsys):
    # Branch functions written differently: tf.square and a zero made from x; named
    # arguments, tf.math.greater and a float32 constant.
    @tf.function(autograph=False)
    def zeros_like(x):
        return tf.cond(x > 0, lambda: tf.square(x), lambda: tf.zeros_like(x))

    def named(x):
        return tf.cond(pred=tf.math.greater(x, 0.0), true_fn=lambda: tf.math.multiply(x, x),
                       false_fn=lambda: tf.constant(0.0))

    for fn in (zeros_like, named):
        checks.check_square_if_positive(fn, cases=[0.5, -0.5, 4.0, -7.25, 1e-3], hidden=True)
    assert capsys.readouterr().out.count("5 cases passed") == 2


def test_square_if_positive_rejects_python_if_without_autograph():
    fails_with(checks.check_square_if_positive, tf.function(square_if_positive_python_if),
               "M09", "OperatorNotAllowedInGraphError", "tf.cond")


def test_square_if_positive_rejects_branches_of_different_dtypes():
    # The draft half fixed: tf.cond, but the other branch still the int 0 (int32): M72, named
    # by the kernel from tf.cond's TypeError, with both dtypes.
    int_zero = lambda x: tf.cond(x > 0, lambda: x * x, lambda: 0)  # noqa: E731
    error = fails_with(checks.check_square_if_positive, int_zero, "M72", "different dtypes",
                       "float32 and int32", "not the int 0")
    assert error.code == "branches_disagree"


def test_square_if_positive_rejects_branches_of_different_shapes():
    # Runs (cond_v2 relaxes the output's shape) and is 0 in value: the graph's output shape,
    # unknown, is the evidence.
    vector_zero = lambda x: tf.cond(x > 0, lambda: x * x, lambda: tf.zeros([1]))  # noqa: E731
    error = fails_with(checks.check_square_if_positive, vector_zero, "M72", "different shapes")
    assert error.code == "shapes_disagree"


def test_square_if_positive_rejects_graph_without_cond():
    # Issue 18: the right numbers without the branch in the graph (M21; message as before).
    error = fails_with(checks.check_square_if_positive, square_if_positive_where, "M21", "no If op")
    assert "tf.cond" in str(error) and error.code == "no_cond"
    relu = lambda x: tf.nn.relu(x) ** 2  # noqa: E731  (arithmetic: x * x on every call)
    fails_with(checks.check_square_if_positive, relu, "M21", "no If op")


def test_square_if_positive_rejects_a_square_computed_before_the_cond():
    # An If op the value comes from, but x * x computed for every x, outside the branches.
    def both_sides(x):
        square = x * x
        return tf.cond(x > 0, lambda: square, lambda: tf.zeros_like(x))

    error = fails_with(checks.check_square_if_positive, both_sides, "M21", "before the cond",
                       "every call")
    assert error.code == "both_sides"


def test_square_if_positive_rejects_hand_computed_constants_in_a_cond():
    # Right for 3.0 and -2.0, and a real If op: but the values never depend on x.
    by_hand = lambda x: tf.cond(x > 0, lambda: tf.constant(9.0), lambda: tf.constant(0.0))  # noqa: E731
    fails_with(checks.check_square_if_positive, by_hand, "M21", "same value", "does not follow",
               "inside the branches")


def test_square_if_positive_rejects_a_zero_branch_computed_by_arithmetic():
    # Issue 28: the x <= 0 branch computes relu(x) ** 2, which is 0 there: the value comes from
    # arithmetic, not from the cond's choice.
    relu_branch = lambda x: tf.cond(x > 0, lambda: x * x,  # noqa: E731
                                    lambda: tf.nn.relu(x) ** 2)
    error = fails_with(checks.check_square_if_positive, relu_branch, "M21", "x <= 0",
                       "computes from x")
    assert error.code == "other_branch_computes"
    # A zero made from x is still a zero: the branch returns 0.0 * x, 0 for every x.
    for zero in (lambda x: 0.0 * x, lambda x: x * 0.0, tf.zeros_like):
        checks.check_square_if_positive(
            lambda x, zero=zero: tf.cond(x > 0, lambda: x * x, lambda: zero(x)),
            cases=[3.0, -2.0, 0.5], hidden=True)


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


def test_noisy_square_rejects_square_without_any_print():
    fails_with(checks.check_noisy_square, tf.function(lambda x: x * x), "M21", "prints nothing",
               "tf.print")


def test_noisy_square_rejects_hand_computed_constant():
    @tf.function
    def by_hand(x):
        tf.print("square of", x, output_stream=sys.stdout)
        return tf.constant(9.0)
    fails_with(checks.check_noisy_square, by_hand, "M21", "same value")


def test_noisy_square_says_when_what_it_prints_is_not_x():
    @tf.function
    def prints_other(x):
        tf.print("a square", output_stream=sys.stdout)
        return x * x
    fails_with(checks.check_noisy_square, prints_other, "M21", "not in what it prints")


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
    fails_with(checks.check_accumulator, AccumulatorShared, "M32", "second Accumulator()",
               "one tf.Variable", "__init__")


class AccumulatorPythonSide(tf.Module):
    """The right totals, but the variable is updated by Python code (tf.py_function), not by
    an op of add's graph."""

    def __init__(self):
        super().__init__()
        self.total = tf.Variable(0.0)

    def _add_eagerly(self, x):
        self.total.assign(float(self.total.numpy()) + float(x.numpy()))
        return self.total.read_value()

    @tf.function
    def add(self, x):
        return tf.reshape(tf.py_function(self._add_eagerly, [x], tf.float32), [])


def test_accumulator_rejects_variable_updated_outside_the_graph():
    fails_with(checks.check_accumulator, AccumulatorPythonSide, "M21", "no op of add's graph",
               "assign_add")


def test_accumulator_accepts_assign_and_assign_add_return_value():
    class Assign(tf.Module):
        def __init__(self):
            super().__init__()
            self.total = tf.Variable(0.0, trainable=False)

        @tf.function
        def add(self, x):
            return self.total.assign(self.total + x)

    checks.check_accumulator(Assign, cases=[[5.0, -1.5], [-3.0]], hidden=True)


# ------------------------------------------------------------------ make_celsius_to_fahrenheit
# Issue 27: a design choice. One trace for every float32 vector length, a list of Python floats
# converted, a matrix and a Python float refused at the call: shape=[None], not shape=None.

def fahrenheit(c):
    return c * 9.0 / 5.0 + 32.0


VECTOR = [tf.TensorSpec(shape=[None], dtype=tf.float32)]


def test_celsius_to_fahrenheit_accepts_a_vector_signature():
    made = []

    def make():
        made.append(tf.function(fahrenheit, input_signature=VECTOR))
        return made[-1]

    checks.check_make_celsius_to_fahrenheit(make, cases=[[37.0], [0.0, 10.0], [1.0, 2.0, -5.5]],
                                            hidden=True)
    assert len(made) == 3 and made[0].experimental_get_tracing_count() == 1


def test_celsius_to_fahrenheit_accepts_two_other_correct_answers(capsys):
    @tf.function(input_signature=(tf.TensorSpec((None,), tf.float32, name="celsius"),))
    def decorated(c):
        return c * 1.8 + 32.0

    def with_a_shape_object():
        spec = tf.TensorSpec(shape=tf.TensorShape([None]), dtype=tf.float32)
        return tf.function(lambda c: tf.math.add(tf.math.multiply(c, 9.0 / 5.0), 32.0),
                           input_signature=(spec,), reduce_retracing=True)

    for make in (lambda: decorated, with_a_shape_object):
        checks.check_make_celsius_to_fahrenheit(
            make, cases=[[37.0], [-273.15, 0.0, 451.0], [10.0, 20.0, 30.0, 40.0, 50.0]],
            hidden=True)
    assert capsys.readouterr().out.count("3 cases passed") == 2


def test_celsius_to_fahrenheit_rejects_retracing_for_each_length():
    # Issue 18: the right numbers, but not one graph for every input: a plain tf.function
    # traces once per vector length (M75, the shapes' retrace; issue 27).
    error = fails_with(checks.check_make_celsius_to_fahrenheit, lambda: tf.function(fahrenheit),
                       "M75", "input_signature")
    assert "3 traces" in str(error) and error.code == "retraced"


def test_celsius_to_fahrenheit_rejects_reduce_retracing_alone():
    # The notebook's draft, as it is given: 2 traces for the vectors of one case.
    error = fails_with(checks.check_make_celsius_to_fahrenheit,
                       lambda: tf.function(fahrenheit, reduce_retracing=True), "M75",
                       "reduce_retracing")
    assert "2 traces" in str(error)


def test_celsius_to_fahrenheit_rejects_a_new_function_per_call_of_each_input():
    # Each tf.function made by the factory traces once, for its first input: the check calls
    # the one it got on every input of the case, so the lengths retrace it (M75); a wrapper
    # that makes a new tf.function on each call is not a tf.function at all.
    fails_with(checks.check_make_celsius_to_fahrenheit, lambda: tf.function(fahrenheit),
               "M75", cases=[[36.6]], hidden=True)
    fails_with(checks.check_make_celsius_to_fahrenheit,
               lambda: (lambda c: tf.function(fahrenheit)(c)), None, "not a tf.function")


def test_celsius_to_fahrenheit_rejects_a_signature_of_any_shape():
    # The design choice's other way: one trace, the right numbers, but a matrix and a Python
    # float are answered, and the signature says nothing about the rank (M74).
    any_shape = [tf.TensorSpec(shape=None, dtype=tf.float32)]
    error = fails_with(checks.check_make_celsius_to_fahrenheit,
                       lambda: tf.function(fahrenheit, input_signature=any_shape), "M74",
                       "any shape", "matrix")
    assert error.code == "any_shape" and "a Python float" in str(error)
    # Flattened into a vector: the result is a vector, and a matrix is still answered.
    flat_any = lambda: tf.function(lambda c: tf.reshape(fahrenheit(c), [-1]),  # noqa: E731
                                   input_signature=any_shape)
    fails_with(checks.check_make_celsius_to_fahrenheit, flat_any, "M74", "any shape")


def test_celsius_to_fahrenheit_rejects_a_signature_that_refuses_other_lengths():
    # Written for the first batch seen: shape [3] refuses a longer vector (M73), and so does a
    # float64 spec refuse float32 readings.
    fixed = [tf.TensorSpec(shape=[3], dtype=tf.float32)]
    fails_with(checks.check_make_celsius_to_fahrenheit,
               lambda: tf.function(fahrenheit, input_signature=fixed), "M73",
               "refuses a float32 vector", "Can not cast")
    wide = [tf.TensorSpec(shape=[None], dtype=tf.float64)]
    fails_with(checks.check_make_celsius_to_fahrenheit,
               lambda: tf.function(fahrenheit, input_signature=wide), "M73", "input_signature")


def test_celsius_to_fahrenheit_rejects_hand_computed_constant():
    constant = tf.function(lambda c: tf.constant([32.0, 212.0, -40.0]), input_signature=VECTOR)
    fails_with(checks.check_make_celsius_to_fahrenheit, lambda: constant, "M21", "same value",
               "a longer vector", cases=[[0.0, 100.0, -40.0]], hidden=True)


def test_celsius_to_fahrenheit_rejects_wrong_formula():
    wrong = tf.function(lambda c: c * 5.0 / 9.0 + 32.0, input_signature=VECTOR)
    fails_with(checks.check_make_celsius_to_fahrenheit, lambda: wrong, None, "expected")


def test_celsius_to_fahrenheit_rejects_plain_python_function():
    fails_with(checks.check_make_celsius_to_fahrenheit, lambda: fahrenheit, None,
               "not a tf.function")


def test_celsius_to_fahrenheit_rejects_an_object_posing_as_a_tf_function():
    # Issue 28: a subclass of PolymorphicFunction that reports one trace and a vector signature
    # of a real function's, while a plain tf.function (one trace per length) does the work.
    class Posing(tf.types.experimental.PolymorphicFunction):
        def __init__(self):
            self.inner = tf.function(fahrenheit)
            self.shown = tf.function(fahrenheit, input_signature=VECTOR)

        def __call__(self, c):
            if not isinstance(c, tf.Tensor) or c.shape.rank != 1 or c.dtype != tf.float32:
                raise TypeError("refused")
            return self.inner(c)

        def experimental_get_tracing_count(self):
            return 1

        function_type = None

        @property
        def input_signature(self):
            return self.shown.input_signature

        def get_concrete_function(self, *args, **kwargs):
            return self.shown.get_concrete_function(*args, **kwargs)

    error = fails_with(checks.check_make_celsius_to_fahrenheit, Posing, "M87",
                       "not the Function that tf.function makes")
    assert error.code == "posing_function"


def test_celsius_to_fahrenheit_names_a_concrete_function():
    # Issue 28: one graph from get_concrete_function is not the tf.function the design asks.
    concrete = tf.function(fahrenheit, input_signature=VECTOR).get_concrete_function()
    error = fails_with(checks.check_make_celsius_to_fahrenheit, lambda: concrete, "M21",
                       "ConcreteFunction", "return the tf.function itself")
    assert error.code == "concrete_function"


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
    fails_with(checks.check_grad_through, grad_through_unwatched, "M01", "GradientTape.watch")


def test_grad_through_accepts_forward_mode_and_functions_given_by_coefficients():
    def forward(f, x):
        with tf.autodiff.ForwardAccumulator(primals=x, tangents=tf.ones_like(x)) as accumulator:
            y = f(x)
        return accumulator.jvp(y)

    cases = [("sin_x", 0.3), ({"coefficients": [0.5, -1.0, 0.0, 0.25]}, 1.7)]
    checks.check_grad_through(forward, cases=cases, hidden=True)
    checks.check_grad_through(grad_through, cases=cases, hidden=True)


def test_grad_through_accepts_a_tf_function_of_its_own():
    checks.check_grad_through(tf.function(grad_through),
                              cases=[("poly", -1.0), ("branchy", 0.5), ("sin_x", 1.2)], hidden=True)


def grad_through_by_hand(f, x):
    """The derivatives of the visible functions, worked out by hand and picked by name."""
    name = f.python_function.__name__
    return {"_poly": 3 * x ** 2 - 2.0, "_branchy": 2 * x if x > 1.0 else 3.0 + 0 * x}[name]


def grad_through_finite_difference(f, x):
    h = 1e-2
    return (f(x + h) - f(x - h)) / (2 * h)


def test_grad_through_rejects_derivatives_written_by_hand():
    fails_with(checks.check_grad_through, grad_through_by_hand, "M21", "no tape computed it",
               "with respect to x")


def test_grad_through_rejects_finite_differences():
    fails_with(checks.check_grad_through, grad_through_finite_difference, "M21",
               "no tape computed it", cases=[("poly", 2.0)])


def test_grad_through_rejects_f_run_eagerly():
    def eagerly(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f.python_function(x)
        return tape.gradient(y, x)
    fails_with(checks.check_grad_through, eagerly, "M21", "never ran as a graph")


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


# ------------------------------------------------------------------ the grading path

def _graded(check_name, fn, cases):
    """Grade ``fn`` as the grader does: the kernel half through kernel_entry (plain data),
    the grader half on the reply, messages without values (``reveal=False``)."""
    entry = judge.load()[check_name]
    reply = plain.loads(Entry.observe(check_name, lambda: (fn,), plain.dumps(
        {"cases": cases, "hidden": True, "options": {}})))
    for i, case in enumerate(cases):
        answer = reply["cases"][i] if i < len(reply["cases"]) else None
        judge.judge_observation(entry, plain.roundtrip(case), answer,
                                entry.context(i, plain.roundtrip(case), True, reveal=False), {})
    return reply


def test_grading_square_if_positive_passes_the_solution_and_words_a_missing_cond():
    _graded("check_square_if_positive", square_if_positive, [0.5, -0.5, 4.0, -7.25])
    with pytest.raises(CheckFailed) as info:
        _graded("check_square_if_positive", square_if_positive_where, [4.0, -7.25])
    message = flat(info.value)
    assert info.value.mistake == "M21" and "hidden case 1" in message and "tf.cond" in message
    for value in ("4.0", "-7.25", "16", "Select", "Greater"):
        assert value not in message, message


def test_grading_square_if_positive_words_m09_from_the_kernels_finding():
    with pytest.raises(CheckFailed) as info:
        _graded("check_square_if_positive", tf.function(square_if_positive_python_if), [2.5])
    assert info.value.mistake == "M09" and "2.5" not in str(info.value)


def test_grading_square_if_positive_words_m72_from_the_kernels_finding():
    int_zero = lambda x: tf.cond(x > 0, lambda: x * x, lambda: 0)  # noqa: E731
    with pytest.raises(CheckFailed) as info:
        _graded("check_square_if_positive", int_zero, [2.5])
    message = flat(info.value)
    assert info.value.mistake == "M72" and "different dtypes" in message
    assert "2.5" not in message and "int32" not in message


def test_grading_grad_through_passes_the_solution_and_rejects_derivatives_by_hand():
    cases = [["poly", -1.5], ["branchy", 0.5], [{"coefficients": [1.0, 2.0, -3.0]}, 0.75]]
    _graded("check_grad_through", grad_through, cases)
    with pytest.raises(CheckFailed) as info:
        _graded("check_grad_through", grad_through_finite_difference, cases)
    message = flat(info.value)
    assert info.value.mistake == "M21" and "hidden case 1" in message
    for value in ("-1.5", "poly", "4.75", "expected"):
        assert value not in message, message


def test_grading_make_celsius_rejects_retracing_without_counts():
    with pytest.raises(CheckFailed) as info:
        _graded("check_make_celsius_to_fahrenheit", lambda: tf.function(fahrenheit), [[37.0]])
    message = flat(info.value)
    assert info.value.mistake == "M75" and "input_signature" in message
    assert "37" not in message and "3 traces" not in message


def test_grading_make_celsius_words_the_signature_choice_without_values():
    _graded("check_make_celsius_to_fahrenheit", lambda: tf.function(
        fahrenheit, input_signature=VECTOR), [[37.0], [-40.0, 98.6]])
    any_shape = [tf.TensorSpec(shape=None, dtype=tf.float32)]
    with pytest.raises(CheckFailed) as info:
        _graded("check_make_celsius_to_fahrenheit", lambda: tf.function(
            fahrenheit, input_signature=any_shape), [[-40.0, 98.6]])
    message = flat(info.value)
    assert info.value.mistake == "M74" and "hidden case 1" in message
    for value in ("98.6", "-40", "shape': None", "answered:"):
        assert value not in message, message
    fixed = [tf.TensorSpec(shape=[2], dtype=tf.float32)]
    with pytest.raises(CheckFailed) as info:  # the kernel's finding, worded by the grader
        _graded("check_make_celsius_to_fahrenheit", lambda: tf.function(
            fahrenheit, input_signature=fixed), [[-40.0, 98.6]])
    message = flat(info.value)
    assert info.value.mistake == "M73" and "refuses a float32 vector" in message
    assert "Can not cast" not in message and "98.6" not in message


def test_grading_noisy_square_counts_lines_in_the_kernel_and_judges_them_on_the_grader(capfd):
    reply = _graded("check_noisy_square", noisy_square, [[-1.5, 4], [10.0, 3]])
    assert reply["cases"][0]["obs"]["lines"] == 4  # a count, never the printed text
    with pytest.raises(CheckFailed) as info:
        _graded("check_noisy_square", noisy_square_python_print, [[-1.5, 4]])
    assert info.value.mistake == "M08" and "-1.5" not in str(info.value)
    assert "square of" not in capfd.readouterr().err


def test_grading_accumulator_and_not_tf_function_findings():
    _graded("check_accumulator", Accumulator, [[5.0, -1.5], [0.25, 0.25]])

    class Eager(tf.Module):
        def __init__(self):
            super().__init__()
            self.total = tf.Variable(0.0)

        def add(self, x):
            return self.total.assign_add(x)

    with pytest.raises(CheckFailed) as info:
        _graded("check_accumulator", Eager, [[5.0]])
    assert info.value.code == "not_tf_function" and "a tf.function" in str(info.value)


def test_printed_counts_leave_out_tensorflow_log_lines():
    # A fresh process logs a line such as this one when its first op runs (no GPU driver).
    from autograder.checks.capture import Captured

    out = Captured(fd_stdout="square of 3\nsquare of 3\n", fd_stderr=(
        "E0000 00:00:1796123594.147085   31162 cuda_platform.cc:52] failed call to cuInit: "
        "INTERNAL: CUDA error 303\n"))
    assert checks.printed_count(out) == 2 and checks.printed_count(out, 3.0) == 2
    assert len(checks.printed_lines(out)) == 3


# ------------------------------------------------------------------ round 2: decoys and laundering
# The red team's answers (rt_a, 03): a derivative by finite differences handed back through a
# tape of x * formula, a Python print inside tf.py_function, a cond beside the answer.

def grad_through_laundered(f, x):
    x64 = tf.cast(x, tf.float64)
    h = tf.constant(1e-4, tf.float64)
    fd = tf.cast((f(x64 + h) - f(x64 - h)) / (2 * h), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        t = x * fd
    return tape.gradient(t, x)


def test_grad_through_rejects_a_derivative_laundered_through_a_tape():
    error = fails_with(checks.check_grad_through, grad_through_laundered, "M21",
                       "target", "not f(x)", "with respect to x")
    assert error.code == "target_not_f"


def test_grad_through_accepts_a_target_given_as_a_list():
    def grad_list(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient([y], x)
    checks.check_grad_through(grad_list, cases=[("poly", 2.0), ("sin_x", -0.5)], hidden=True)


def test_grading_grad_through_rejects_laundering_without_values():
    cases = [["poly", -1.5], [{"coefficients": [1.0, 2.0, -3.0]}, 0.75]]
    with pytest.raises(CheckFailed) as info:
        _graded("check_grad_through", grad_through_laundered, cases)
    message = flat(info.value)
    assert info.value.mistake == "M21" and "hidden case 1" in message
    for value in ("-1.5", "poly", "4.75", "0.75"):
        assert value not in message, message


@tf.function
def noisy_square_py_function(x):
    def say(v):
        print("square of", float(v))
        return v
    tf.py_function(say, [x], tf.float32)
    return x * x


def test_noisy_square_rejects_a_python_print_inside_py_function(capfd):
    error = fails_with(checks.check_noisy_square, noisy_square_py_function, "M21",
                       "tf.py_function")
    assert error.code == "py_function"


@tf.function(autograph=False)
def square_if_positive_beside_a_decoy_cond(x):
    tf.cond(x > 0, lambda: tf.constant(1), lambda: tf.constant(0))
    return tf.where(x > 0, x * x, 0.0)


def test_square_if_positive_rejects_tf_where_beside_a_decoy_cond():
    error = fails_with(checks.check_square_if_positive, square_if_positive_beside_a_decoy_cond,
                       "M21", "If op", "not computed from it")
    assert error.code == "cond_beside"


def test_make_celsius_rejects_a_formula_in_py_function():
    def make():
        return tf.function(lambda c: tf.py_function(lambda v: v * 9 / 5 + 32, [c], tf.float32),
                           input_signature=[tf.TensorSpec(None, tf.float32)])
    fails_with(checks.check_make_celsius_to_fahrenheit, make, "M21", "tf.py_function")


# ------------------------------------------------------------------ review round: causes worded right

class AccumulatorNumpy(tf.Module):
    """.numpy() on the variable inside the tf.function: TensorFlow raises NotImplementedError
    ("numpy() is only available when eager execution is enabled"), which is not the stub."""

    def __init__(self):
        super().__init__()
        self.total = tf.Variable(0.0)

    @tf.function
    def add(self, x):
        self.total.assign_add(x)
        return self.total.numpy()


class AccumulatorStub(tf.Module):
    """The release's stub, in a tf.function method: the trace re-raises it with a message."""

    def __init__(self):
        super().__init__()
        self.total = tf.Variable(0.0)

    @tf.function
    def add(self, x):
        raise NotImplementedError()


def test_numpy_inside_a_tf_function_is_m16_not_an_unwritten_exercise():
    error = fails_with(checks.check_accumulator, AccumulatorNumpy, "M16",
                       "numpy() is only available when eager execution is enabled",
                       ".numpy() only on what the tf.function returned")
    assert "not written yet" not in flat(error) and "tf.py_function" not in flat(error)
    error = fails_with(checks.check_accumulator, AccumulatorStub, None, "not written yet")
    assert error.code == "not_answered"


def test_grading_numpy_inside_a_tf_function_words_m16():
    with pytest.raises(CheckFailed) as info:
        _graded("check_accumulator", AccumulatorNumpy, [[5.0, -1.5]])
    message = flat(info.value)
    assert info.value.mistake == "M16" and "not written yet" not in message, message
    assert "tf.py_function" not in message and "-1.5" not in message
    with pytest.raises(CheckFailed) as info:
        _graded("check_accumulator", AccumulatorStub, [[5.0]])
    assert info.value.code == "not_answered"


def test_variable_inside_a_tf_function_is_named_for_the_first_calls_second_trace():
    error = fails_with(checks.check_accumulator, AccumulatorVariableInside, "M07",
                       "twice on its first call", "the second trace created a tf.Variable")
    assert "later call" not in flat(error)
    with pytest.raises(CheckFailed) as info:
        _graded("check_accumulator", AccumulatorVariableInside, [[5.0]])
    message = flat(info.value)
    assert info.value.mistake == "M07" and "traced twice on its first call" in message, message
    assert "on a later call" not in message


@tf.function
def noisy_square_numpy(x):
    print("square of", x.numpy())
    return x * x


def test_noisy_square_with_numpy_is_sent_to_tf_print_not_to_py_function():
    # tf.py_function is what this check refuses: the fix is the one the exercise accepts.
    error = fails_with(checks.check_noisy_square, noisy_square_numpy, "M16",
                       "symbolic", "print x with tf.print: an op of the graph")
    assert error.code == "numpy_in_graph"
    assert "wrap Python-only code in tf.py_function" not in flat(error)
    with pytest.raises(CheckFailed) as info:
        _graded("check_noisy_square", noisy_square_numpy, [[-1.5, 4]])
    message = flat(info.value)
    assert info.value.mistake == "M16" and "print x with tf.print: an op of the graph" in message, message
    assert "-1.5" not in message and "or tf.py_function" not in message


def grad_through_jacobian(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.jacobian(y, x)


def grad_through_batch_jacobian(f, x):
    xs = tf.reshape(x, [1, 1])
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = tf.reshape(f(xs[0, 0]), [1, 1])
    return tape.batch_jacobian(y, xs)[0, 0, 0]


def test_grad_through_accepts_every_spelling_of_a_tape_gradient():
    # tape.jacobian passes in 01 and 02: the same recorder (harness.wrapping_tape_calls) here.
    cases = [("poly", -1.0), ("branchy", 0.5), ("sin_x", 1.2),
             ({"coefficients": [0.5, -1.0, 0.0, 0.25]}, 1.7)]
    checks.check_grad_through(grad_through_jacobian, cases=cases, hidden=True)
    checks.check_grad_through(tf.function(grad_through_jacobian), cases=cases, hidden=True)
    _graded("check_grad_through", grad_through_jacobian, [["poly", -1.5], ["branchy", 0.5]])


def test_grad_through_batch_jacobian_is_recorded_as_a_tape_gradient():
    # the result is an entry of the jacobian, not the call's result itself: no tape produced
    # that tensor, as for tape.gradient(y, x)[0] in 01
    from autograder.checks.harness import recording_gradients
    f = tf.function(checks.GRAD_FUNCTIONS["poly"])
    with recording_gradients() as record:
        grad_through_batch_jacobian(f, tf.constant(2.0))
    assert [tuple(result.shape) for *_, result in record.calls] == [(1, 1, 1)]
    assert float(record.calls[0][3][0, 0, 0]) == pytest.approx(10.0)


def test_grad_through_with_jacobian_still_rejects_the_wrong_answers():
    def jacobian_of_a_formula(f, x):  # poly's derivative handed back through x * formula
        formula = tf.stop_gradient(3 * x ** 2 - 2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            t = x * formula
        return tape.jacobian(t, x)
    fails_with(checks.check_grad_through, grad_through_by_hand, "M21", "no tape computed it")
    error = fails_with(checks.check_grad_through, jacobian_of_a_formula, "M21", "not f(x)",
                       cases=[("poly", 2.0)])
    assert error.code == "target_not_f"

    def unwatched(f, x):
        with tf.GradientTape() as tape:
            y = f(x)
        return tape.jacobian(y, x)
    fails_with(checks.check_grad_through, unwatched, "M01", "GradientTape.watch")


# ------------------------------------------------------------------ issue 27: predictions
# Graded as 07's predict_* cells: a wrong prediction names the misconception, a right one
# passes however it is written.

def test_predict_if_error_accepts_the_name_the_class_and_its_base(capsys):
    checks.check_predict_if_error("OperatorNotAllowedInGraphError")
    checks.check_predict_if_error(tf.errors.OperatorNotAllowedInGraphError)
    checks.check_predict_if_error("tf.errors.OperatorNotAllowedInGraphError")
    checks.check_predict_if_error("TypeError")
    assert capsys.readouterr().out.count("passed") == 4


def test_predict_if_error_rejects_a_value_and_another_error():
    error = fails_with(checks.check_predict_if_error, None, "M09", "symbolic tensor",
                       "tf.cond")
    assert error.code == "wrong_prediction"
    fails_with(checks.check_predict_if_error, ValueError, "M09", "you predicted 'ValueError'")
    error = fails_with(checks.check_predict_if_error, 2.0, "M71", "name of an exception class")
    assert error.code == "prediction_type"


def test_predict_retraces_and_prints(capsys):
    checks.check_predict_retraces(4)
    checks.check_predict_prints(2, 4)
    assert capsys.readouterr().out.count("passed") == 2
    fails_with(checks.check_predict_retraces, 2, "M26", "relaxes shapes, not Python values")
    fails_with(checks.check_predict_retraces, 5, None, "generalised to any shape")
    prints = lambda pair: checks.check_predict_prints(*pair)  # noqa: E731
    fails_with(prints, (4, 4), "M08", "only while TensorFlow traces")
    fails_with(prints, (1, 4), None, "traces once more")
    fails_with(prints, (2, 2), None, "runs on every call")
    error = fails_with(prints, (2.0, 4), "M71", "a whole number")
    assert error.code == "prediction_type"


def test_grading_predictions_show_no_values():
    with pytest.raises(CheckFailed) as info:
        _graded("check_predict_if_error", "ValueError", [None])
    message = flat(info.value)
    assert info.value.mistake == "M09" and "ValueError" not in message, message


def test_show_prediction_refuses_until_the_prediction_is_set(capsys):
    error = fails_with(lambda ns: checks.show_prediction(ns, "predicted_if_error"), {}, None,
                       "waits for your prediction", "predicted_if_error = ...")
    assert error.mistake is None
    checks.show_prediction({"predicted_a": 2, "predicted_b": "x"}, "predicted_a", "predicted_b")
    assert "you predicted: predicted_a = 2, predicted_b = 'x'" in capsys.readouterr().out


# ------------------------------------------------------------------ issue 27: log_cosh (find-and-fix)

@tf.function
def log_cosh(x):
    return tf.math.log(tf.math.cosh(x))


@tf.function
def log_cosh_stable(x):  # another correct spelling: |x| + log1p(exp(-2|x|)) - log 2
    a = tf.abs(x)
    return a + tf.math.log1p(tf.exp(-2.0 * a)) - tf.math.log(2.0)


@tf.function
def log_cosh_numpy_function(x):  # the notebook's draft: runs, the value is right, no gradient
    return tf.numpy_function(lambda v: np.log(np.cosh(v)), [x], tf.float32)


@tf.function
def log_cosh_numpy(x):
    return np.log(np.cosh(x))


@tf.function
def log_cosh_dot_numpy(x):
    return tf.constant(np.log(np.cosh(x.numpy())))


@tf.custom_gradient
def _log_cosh_numpy_with_gradient(x):
    y = tf.numpy_function(lambda v: np.log(np.cosh(v)), [x], tf.float32)
    return tf.reshape(y, tf.shape(x)), lambda dy: dy * tf.tanh(x)


@tf.function
def log_cosh_numpy_gradient_by_hand(x):  # the right value and gradient, NumPy in the graph
    return _log_cosh_numpy_with_gradient(x)


def test_log_cosh_accepts_two_spellings_with_tensorflow_ops(capsys):
    cases = [[0.5, -2.0, 0.0], [[0.1, -4.0], [2.5, 1.0]]]
    checks.check_log_cosh(log_cosh, cases=cases, hidden=True)
    checks.check_log_cosh(log_cosh_stable, cases=cases, hidden=True)
    assert capsys.readouterr().out.count("2 cases passed") == 2


def test_log_cosh_rejects_the_draft_without_a_gradient():
    error = fails_with(checks.check_log_cosh, log_cosh_numpy_function, "M30", "no gradient",
                       "tf.numpy_function", "tf.math")
    assert error.code == "no_gradient"


def test_log_cosh_rejects_numpy_on_the_graph_tensor():
    fails_with(checks.check_log_cosh, log_cosh_numpy, "M16", "symbolic")
    fails_with(checks.check_log_cosh, log_cosh_dot_numpy, "M16")


def test_log_cosh_rejects_numpy_with_a_gradient_written_by_hand():
    # The right value and the right gradient, but NumPy computes it outside the graph.
    error = fails_with(checks.check_log_cosh, log_cosh_numpy_gradient_by_hand, "M21",
                       "calls Python code", "tf.math")
    assert error.code == "py_function"


def test_log_cosh_rejects_a_wrong_function_and_an_undecorated_one():
    fails_with(checks.check_log_cosh, tf.function(lambda x: tf.math.log(tf.math.sinh(x) + 2.0)),
               None, "expected", cases=[[0.5, -2.0, 0.0]], hidden=True)
    fails_with(checks.check_log_cosh, log_cosh.python_function, None, "tf.function")


def test_grading_log_cosh_words_m30_without_values():
    _graded("check_log_cosh", log_cosh, [[1.5, -0.25, 3.0]])
    with pytest.raises(CheckFailed) as info:
        _graded("check_log_cosh", log_cosh_numpy_function, [[1.5, -0.25, 3.0]])
    message = flat(info.value)
    assert info.value.mistake == "M30" and "hidden case 1" in message, message
    assert "1.5" not in message and "PyFunc" not in message


# ------------------------------------------------------------------ issue 27: the notebook's drafts
# Each find-and-fix exercise's draft, as the notebook gives it, fails with its mistake named.

def test_celsius_accepts_a_signature_given_as_a_tuple_with_reduce_retracing(capsys):
    spec = (tf.TensorSpec(shape=[None], dtype=tf.float32),)
    checks.check_make_celsius_to_fahrenheit(
        lambda: tf.function(lambda c: c * 1.8 + 32.0, input_signature=spec, reduce_retracing=True),
        cases=[[37.0], [1.5, -2.5]], hidden=True)
    assert "2 cases passed" in capsys.readouterr().out


def test_celsius_refuses_a_scalar_only_signature():
    # A spec of shape [] refuses the vectors the service must convert (M73).
    scalar = [tf.TensorSpec(shape=[], dtype=tf.float32)]
    fails_with(checks.check_make_celsius_to_fahrenheit,
               lambda: tf.function(fahrenheit, input_signature=scalar), "M73", "refuses")


class AccumulatorDraft(tf.Module):
    def __init__(self):
        super().__init__()

    @tf.function
    def add(self, x):
        self.total = tf.Variable(0.0)
        self.total.assign_add(x)
        return self.total.read_value()


def test_the_accumulator_draft_is_m07():
    fails_with(checks.check_accumulator, AccumulatorDraft, "M07", "ValueError")


def test_the_square_if_positive_draft_is_m09():
    @tf.function(autograph=False)
    def draft(x):  # the notebook's draft, as it is given
        if x > 0:
            return x * x
        return 0

    fails_with(checks.check_square_if_positive, draft, "M09", "tf.cond")


# ------------------------------------------------------------------ review 03: reworked drafts

SHARED_TOTAL = tf.Variable(0.0)


class AccumulatorModuleLevel(tf.Module):
    """The notebook's draft: the ValueError "fixed" with one module-level variable."""

    def __init__(self):
        super().__init__()
        self.total = SHARED_TOTAL

    @tf.function
    def add(self, x):
        self.total.assign_add(x)
        return self.total.read_value()


def test_accumulator_rejects_one_module_level_variable_for_all_instances():
    SHARED_TOTAL.assign(0.0)
    fails_with(checks.check_accumulator, AccumulatorModuleLevel, "M32", "starts where the first",
               "its own tf.Variable")


def test_accumulator_names_the_shared_variable_after_earlier_calls_moved_it():
    # The notebook's own check (or a demonstration) has run before the hidden test: the shared
    # variable no longer starts at 0, and the finding must still be M32, not "values differ".
    SHARED_TOTAL.assign(17.5)
    fails_with(checks.check_accumulator, AccumulatorModuleLevel, "M32", "starts where the first",
               "its own tf.Variable")


def test_accumulator_accepts_a_variable_made_once_on_the_first_call():
    class Lazy(tf.Module):
        def __init__(self):
            super().__init__()
            self.total = None

        @tf.function
        def add(self, x):
            if self.total is None:
                self.total = tf.Variable(0.0)
            return self.total.assign_add(x)

    checks.check_accumulator(Lazy, cases=[[5.0, -1.5], [-3.0]], hidden=True)


@tf.function
def noisy_square_f_string(x):
    tf.print(f"square of {x}", output_stream=sys.stdout)
    return x * x


@tf.function
def noisy_square_format_args(x):
    tf.print("square of", x, "=", x * x, output_stream=sys.stderr)
    return tf.square(x)


def test_noisy_square_rejects_an_f_string_of_the_symbolic_tensor():
    # The notebook's draft: a line on every call, the right values, but no value of x (M31).
    fails_with(checks.check_noisy_square, noisy_square_f_string, "M31", "symbolic tensor",
               "argument of its own")


def test_noisy_square_accepts_another_correct_print(capfd):
    checks.check_noisy_square(noisy_square_format_args, cases=[(-1.5, 4), (2.25, 2)],
                              hidden=True)


def log_cosh_naive(x):
    return tf.math.log(tf.math.cosh(x))


@tf.function
def log_cosh_softplus(x):
    return x + tf.nn.softplus(-2.0 * x) - tf.math.log(2.0)


@tf.function
def log_cosh_log1p(x):
    a = tf.abs(x)
    return a + tf.math.log1p(tf.exp(-2.0 * a)) - np.log(2.0).astype(np.float32)


@tf.function
def log_cosh_float64(x):
    return tf.cast(tf.math.log(tf.math.cosh(tf.cast(x, tf.float64))), tf.float32)


def test_log_cosh_accepts_stable_forms_written_differently(capsys):
    for fn in (log_cosh_softplus, log_cosh_log1p, log_cosh_float64):
        checks.check_log_cosh(fn, cases=[[1.5, -0.25, 3.0], [[0.1, -4.0], [95.0, -120.0]]],
                              hidden=True)


def test_log_cosh_rejects_the_naive_form_where_cosh_overflows():
    # Right on small errors, inf (gradient nan) at 100: M33, named.
    fails_with(checks.check_log_cosh, tf.function(log_cosh_naive), "M33", "overflows",
               "float32")
    error = fails_with(checks.check_log_cosh, tf.function(log_cosh_naive), "M33",
                       cases=[[89.0]], hidden=True)  # finite value, gradient 0 instead of 1
    assert "inf or nan" in str(error)
    checks.check_log_cosh(tf.function(log_cosh_naive), cases=[[0.5, -2.0]], hidden=True)


def test_log_cosh_rejects_numpy_function_with_stable_values():
    # The right numbers (a stable NumPy form) without the idea: no gradient (M30).
    @tf.function
    def draft(x):
        return tf.numpy_function(lambda v: np.logaddexp(v, -v) - np.log(2.0, dtype=v.dtype),
                                 [x], tf.float32)

    fails_with(checks.check_log_cosh, draft, "M30", "no gradient", "TensorFlow ops")


def test_square_if_positive_accepts_switch_case_and_tf_case(capsys):
    # tf.switch_case builds a Case op, tf.case nested Ifs: a branch in the graph either way.
    def switch(x):
        return tf.switch_case(tf.cast(x > 0, tf.int32), [lambda: tf.zeros_like(x), lambda: x * x])

    def case(x):
        return tf.case([(x > 0, lambda: tf.square(x))], default=lambda: tf.constant(0.0))

    for fn in (switch, case):
        checks.check_square_if_positive(fn, cases=[0.5, -0.5, 4.0, -7.25, 1e-3], hidden=True)
        _graded("check_square_if_positive", fn, [0.5, -0.5, 4.0, -7.25, 1e-3])
    assert capsys.readouterr().out.count("5 cases passed") == 2


def test_square_if_positive_rejects_any_computation_from_x_before_the_cond():
    # The class, not one op: x * x (by any op, here none of Mul, Square, Pow) computed before
    # the cond, for every x, and a cond that only passes it on.
    def squared_difference(x):
        y = tf.math.squared_difference(tf.nn.relu(x), 0.0)
        return tf.cond(x > 0, lambda: y, lambda: y)

    def mul_no_nan(x):
        y = tf.math.multiply_no_nan(x, x)
        return tf.cond(x > 0, lambda: tf.identity(y), lambda: tf.zeros_like(x))

    def after(x):  # the square of the branch's value, computed after the cond
        y = tf.cond(x > 0, lambda: x, lambda: tf.zeros_like(x))
        return tf.math.multiply_no_nan(y, y)

    for fn in (squared_difference, mul_no_nan, after):
        error = fails_with(checks.check_square_if_positive, fn, "M21", "every call")
        assert error.code == "both_sides"
        with pytest.raises(CheckFailed) as info:
            _graded("check_square_if_positive", fn, [4.0, -7.25])
        assert info.value.mistake == "M21" and info.value.code == "both_sides"


def test_square_if_positive_rejects_a_predicate_not_computed_from_x():
    def constant_true(x):
        return tf.cond(tf.constant(True), lambda: tf.where(x > 0, x * x, 0.0),
                       lambda: tf.zeros_like(x))

    error = fails_with(checks.check_square_if_positive, constant_true, "M21", "predicate")
    assert error.code == "pred_not_x"


def test_square_if_positive_rejects_tf_where_inside_a_branch():
    def where_inside(x):
        return tf.cond(x > 0, lambda: tf.where(x > 0, x * x, 0.0), lambda: tf.constant(0.0))

    error = fails_with(checks.check_square_if_positive, where_inside, "M21", "tf.where")
    assert error.code == "where_inside"


def test_square_if_positive_rejects_two_branches_doing_the_same_work():
    def same(x):
        return tf.cond(x > 0, lambda: tf.nn.relu(x) ** 2, lambda: tf.nn.relu(x) ** 2)

    error = fails_with(checks.check_square_if_positive, same, "M21", "same work")
    assert error.code == "same_branches"


@tf.function(autograph=False)
def square_if_positive_masked_in_an_always_true_branch(x):
    # a predicate from x that is always true: a mask inside the branch does the picking
    return tf.cond(x > -1e30, lambda: x * x * tf.cast(x > 0, tf.float32), lambda: tf.zeros_like(x))


def test_square_if_positive_refuses_a_branch_that_compares_x_again():
    error = fails_with(checks.check_square_if_positive,
                       square_if_positive_masked_in_an_always_true_branch, "M21",
                       "a branch compares x again")
    assert error.code == "branch_decides"
