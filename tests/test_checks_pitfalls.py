"""The checks of assignment 07 (autograder.checks.pitfalls) against right and known-wrong
implementations: each right one passes, each broken one (the notebook's broken code) fails with
its mistake of the course catalogue (M08, M09, M13, M16, M18, M19, M22-M28, M36, M37, M40, M41,
M44, M57, M69, M70, M71, M80), and
each answer that reaches the
right numbers without the exercise's idea fails with M21 and a message that names the idea. The
predictions pass when right and name the misconception a wrong one shows. Real TensorFlow, no
mocks; the grading path (kernel half through kernel_entry, judged with reveal=False) is tested
for several exercises."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import judge, mistakes, pitfalls, plain
from autograder.checks.compare import CheckFailed
from autograder.checks.kernel_entry import Entry
from tests.expect import fails_with, flat


@pytest.fixture(autouse=True)
def graphs_afterwards():
    """Every test leaves tf.config.run_functions_eagerly off, as it found it."""
    yield
    assert tf.config.functions_run_eagerly() is False
    tf.config.run_functions_eagerly(False)


def grade(check_name, args, cases):
    """Grade ``args`` (the check's positional arguments) on hidden ``cases`` as the grader
    does: the kernel half through kernel_entry.Entry.observe, its reply as plain text, each case
    judged with reveal=False. Returns the number of cases judged; raises the first
    CheckFailed."""
    entry = judge.load()[check_name]
    request = plain.dumps({"cases": cases, "hidden": True, "options": {}})
    reply = plain.loads(Entry.observe(check_name, lambda: tuple(args), request))
    assert len(reply["cases"]) <= len(cases)
    for index, (case, answer) in enumerate(zip(cases, reply["cases"])):
        case = plain.roundtrip(case)
        judge.judge_observation(entry, case, answer, entry.context(index, case, True,
                                                                   reveal=False), {})
    return len(reply["cases"])


def graded_failure(check_name, args, cases, mistake, *words, secrets=()) -> CheckFailed:
    """``grade`` must fail with ``mistake`` and ``words``, and show none of ``secrets``."""
    with pytest.raises(CheckFailed) as info:
        grade(check_name, args, cases)
    text = flat(info.value)
    assert info.value.mistake == mistake, text
    for word in words:
        assert word in text, text
    for secret in secrets:
        assert secret not in text, text
    return info.value


def predicts(check, *values):
    """``check(*values)`` as fails_with expects a one-argument check."""
    return lambda _: check(*values)


# ---------------------------------------------------------------- predictions

def test_right_predictions_pass(capsys):
    pitfalls.check_predict_eager(2, 1)
    pitfalls.check_predict_buggy_add(2, 11.0)
    pitfalls.check_predict_log(1)
    pitfalls.check_predict_iterator([1, 1, 1])
    pitfalls.check_predict_counter(3, 5)
    pitfalls.check_predict_traces(4)
    pitfalls.check_predict_gradients(3.0, 9, None)
    pitfalls.check_predict_xla([True, False, False])
    assert capsys.readouterr().out.count("1 case passed") == 8


@pytest.mark.parametrize("check,values,mistake,words", [
    # A print on every call, or the graph taken to be thrown away by the switch (call 4
    # tracing again): 2 lines off.
    (pitfalls.check_predict_eager, (2, 2), "M08", ["runs the graph call 1 traced",
                                                   "did not throw it away"]),
    # The switch taken to act when a function traces: a graph traced already ignores it.
    (pitfalls.check_predict_eager, (0, 1), None, ["read on every call", "although call 1"]),
    (pitfalls.check_predict_eager, (2, 0), None, ["call 1 traces and prints"]),
    (pitfalls.check_predict_buggy_add, (11, 11), "M22", ["does not retrace"]),
    (pitfalls.check_predict_buggy_add, (2, 2), None, ["new input type"]),
    (pitfalls.check_predict_log, (2,), "M23", ["once for two calls"]),
    (pitfalls.check_predict_log, (8,), "M23", ["traced once, not run once per iteration"]),
    (pitfalls.check_predict_iterator, ([1, 2, 3],), "M24", ["once, while tracing"]),
    (pitfalls.check_predict_counter, (5, 5), "M25", ["while TensorFlow traces"]),
    (pitfalls.check_predict_counter, (3, 1), None, ["op of the graph"]),
    (pitfalls.check_predict_counter, (1, 5), None, ["one per input signature"]),
    (pitfalls.check_predict_traces, (5,), "M26", ["traced by value", "not Python numbers"]),
    (pitfalls.check_predict_traces, (7,), "M26", ["np.float64 included"]),
    (pitfalls.check_predict_traces, (3,), None, ["share a float64 one"]),
    (pitfalls.check_predict_gradients, (6.0, 9.0, None), None, ["a constant to the tape"]),
    (pitfalls.check_predict_gradients, (3.0, 27.0, None), None, ["stopped recording"]),
    (pitfalls.check_predict_gradients, (3.0, 9.0, 0.0), None, ["UnconnectedGradients.ZERO"]),
    (pitfalls.check_predict_xla, ([True, True, True],), "M18", ["no XLA kernel"]),
])
def test_wrong_predictions_name_the_misconception(check, values, mistake, words):
    error = fails_with(predicts(check, *values), None, mistake, *words)
    assert "you predicted" in flat(error)


def test_a_prediction_is_a_plain_value_written_down_not_a_tensor():
    error = fails_with(predicts(pitfalls.check_predict_traces, tf.constant(3)), None, "M71",
                       "should be a whole number", "written down")
    assert error.code == "prediction_type"
    fails_with(predicts(pitfalls.check_predict_eager, 2.0, 1), None, "M71", "whole number")
    fails_with(predicts(pitfalls.check_predict_iterator, "1, 1, 1"), None, "M71", "a list")


def test_grading_a_prediction_of_the_wrong_type_names_it():
    error = graded_failure("check_predict_counter", (1.0, 5), [None], "M71", "whole number",
                           secrets=["1.0"])
    assert error.code == "prediction_type"


def test_a_reveal_cell_waits_for_the_prediction(capsys):
    with pytest.raises(CheckFailed, match="waits for your prediction"):
        pitfalls.show_prediction({}, "predicted_traces")
    pitfalls.show_prediction({"predicted_traces": 3}, "predicted_traces")
    assert capsys.readouterr().out == "you predicted: predicted_traces = 3\n"


def test_grading_a_prediction_shows_neither_the_answer_nor_the_guess():
    assert grade("check_predict_traces", (4,), [None]) == 1
    error = graded_failure("check_predict_traces", (7,), [None], "M26", "traced by value",
                           secrets=["you predicted", "7"])
    assert error.code == "wrong_prediction"


# ---------------------------------------------------------------- run_eagerly

def run_eagerly(fn, *args):
    previous = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        return fn(*args)
    finally:
        tf.config.run_functions_eagerly(previous)


def run_eagerly_context(fn, *args):  # correct, another spelling: a context manager
    @contextlib.contextmanager
    def eagerly():
        previous = tf.config.functions_run_eagerly()
        tf.config.run_functions_eagerly(True)
        try:
            yield
        finally:
            tf.config.run_functions_eagerly(previous)

    with eagerly():
        return fn(*args)


def run_eagerly_except(fn, *args):  # correct, another spelling: restored on both paths
    was_on = bool(tf.config.functions_run_eagerly())
    tf.config.run_functions_eagerly(True)
    try:
        result = fn(*args)
    except Exception:
        tf.config.run_functions_eagerly(was_on)
        raise
    tf.config.run_functions_eagerly(was_on)
    return result


def run_eagerly_broken(fn, *args):  # the switch stays on
    tf.config.run_functions_eagerly(True)
    return fn(*args)


def run_eagerly_no_finally(fn, *args):
    previous = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    result = fn(*args)
    tf.config.run_functions_eagerly(previous)
    return result


def run_eagerly_always_off(fn, *args):  # the notebook's draft: always put back off
    tf.config.run_functions_eagerly(True)
    try:
        return fn(*args)
    finally:
        tf.config.run_functions_eagerly(False)


def run_eagerly_draft(fn, *args):  # the notebook's draft: the outer body eagerly, nested graphs
    """Run one call of fn as plain Python, for print and pdb; the switch is not touched."""
    return fn.python_function(*args)


def run_eagerly_python_function(fn, *args):  # the switch on, restored, but nested graphs stay
    previous = tf.config.functions_run_eagerly()
    try:
        return fn.python_function(*args)
    finally:
        tf.config.run_functions_eagerly(previous)


def run_eagerly_as_graph(fn, *args):
    return fn(*args)


def test_run_eagerly_passes_the_solution(capsys):
    pitfalls.check_run_eagerly(run_eagerly)
    assert "3 cases passed" in capsys.readouterr().out


def test_run_eagerly_passes_two_other_spellings(capsys):
    pitfalls.check_run_eagerly(run_eagerly_context)
    pitfalls.check_run_eagerly(run_eagerly_except)
    assert capsys.readouterr().out.count("3 cases passed") == 2


def test_run_eagerly_names_a_switch_left_on():
    fails_with(pitfalls.check_run_eagerly, run_eagerly_broken, "M19", "still on after the call")
    fails_with(pitfalls.check_run_eagerly, run_eagerly_no_finally, "M19", "when fn raised",
               "finally")


def test_run_eagerly_restores_the_previous_state_not_always_off():
    error = fails_with(pitfalls.check_run_eagerly, run_eagerly_always_off, "M69",
                       "switch on before", "on before the call and is off after it",
                       "(tf.config.functions_run_eagerly) before switching it on")
    assert error.code == "not_restored"


def test_run_eagerly_names_the_drafts_python_function():
    error = fails_with(pitfalls.check_run_eagerly, run_eagerly_draft, "M80",
                       "still ran as a graph", "fn.python_function",
                       "switch every tf.function to eager execution")
    assert error.code == "outer_only"


def test_the_run_eagerly_draft_shows_its_symptom_only_through_a_nested_tf_function():
    @tf.function
    def inner(x):
        return tf.constant(float(x.numpy()))  # a value: only while running eagerly

    @tf.function
    def outer(x):
        return 2.0 * inner(x)

    with pytest.raises(AttributeError):  # the nested tf.function traced: a symbolic tensor
        run_eagerly_draft(outer, tf.constant(1.5))
    assert float(run_eagerly(outer, tf.constant(1.5))) == 3.0


def test_run_eagerly_rejects_the_right_value_without_eager_execution():
    fails_with(pitfalls.check_run_eagerly, run_eagerly_as_graph, "M21", "ran as a graph")
    fails_with(pitfalls.check_run_eagerly, run_eagerly_python_function, "M80",
               "still ran as a graph", "fn.python_function")


def run_eagerly_patched_call(fn, *args):  # right values, every body eager, the switch untouched
    cls = type(fn)
    original = cls.__call__
    cls.__call__ = lambda self, *a, **k: self.python_function(*a, **k)
    try:
        return fn(*args)
    finally:
        cls.__call__ = original


def test_run_eagerly_rejects_a_patched_call_that_runs_bodies_without_the_switch():
    # Issue 28: the evidence is the switch as TensorFlow reads it (captured before student code),
    # not only whether the bodies ran eagerly.
    error = fails_with(pitfalls.check_run_eagerly, run_eagerly_patched_call, "M21",
                       "the switch was not on")
    assert error.code == "not_eager"


def test_grading_run_eagerly():
    cases = [{"x": 0.5, "before": True, "raises": True}, {"x": -4.0, "before": False,
                                                         "raises": False},
             {"x": 2.5, "before": False, "raises": True}]
    assert grade("check_run_eagerly", (run_eagerly,), cases) == 3
    graded_failure("check_run_eagerly", (run_eagerly_no_finally,), cases, "M19",
                   "hidden case 3", secrets=["0.5", "-4.0", "2.5", "when fn raised"])
    graded_failure("check_run_eagerly", (run_eagerly_python_function,), cases[1:], "M80",
                   "hidden case 1", secrets=["-4.0", "33"])
    graded_failure("check_run_eagerly", (run_eagerly_draft,), cases[1:], "M80",
                   "hidden case 1", secrets=["-4.0", "33"])
    graded_failure("check_run_eagerly", (run_eagerly_always_off,), cases, "M69",
                   "hidden case 1", "not always off", secrets=["0.5", "-4.0", "2.5"])


# ---------------------------------------------------------------- make_scaler

def make_scaler(initial):
    scale = tf.Variable(float(initial), shape=tf.TensorShape(None))

    def set_scale(value):
        scale.assign(value)

    @tf.function
    def scaled(x):
        return x * scale

    return set_scale, scaled


class ScaleModule(tf.Module):  # correct, another spelling: a module that owns the variable
    def __init__(self, initial):
        super().__init__()
        self.scale = tf.Variable(initial, dtype=tf.float32, shape=tf.TensorShape(None))

    def set_scale(self, value):
        self.scale.assign(tf.constant(value, tf.float32))

    @tf.function
    def scaled(self, x):
        return tf.multiply(x, self.scale)


def make_scaler_module(initial):
    module = ScaleModule(initial)
    return module.set_scale, module.scaled


def make_scaler_vector(initial):  # correct, another design: always a vector of open length
    scale = tf.Variable(tf.reshape(float(initial), [1]), shape=[None])

    def set_scale(value):
        scale.assign(tf.reshape(tf.constant(value, tf.float32), [-1]))

    @tf.function
    def scaled(x):
        return x * scale

    return set_scale, scaled


def make_scaler_fixed_shape(initial):  # the draft's first fix only: assign, but a scalar variable
    scale = tf.Variable(float(initial))

    def set_scale(value):
        scale.assign(value)

    @tf.function
    def scaled(x):
        return x * scale

    return set_scale, scaled


def make_scaler_draft(initial):  # the notebook's draft: a new tf.Variable bound to the name
    scale = tf.Variable(initial)

    def set_scale(value):
        nonlocal scale
        scale = tf.Variable(value)

    @tf.function
    def scaled(x):
        return x * scale

    return set_scale, scaled


def make_scaler_broken(initial):  # the first draft: a free variable read at trace time
    scale = initial

    def set_scale(value):
        nonlocal scale
        scale = value

    @tf.function
    def scaled(x):
        return x * scale

    return set_scale, scaled


def make_scaler_eager(initial):  # right numbers, no graph
    scale = [initial]

    def set_scale(value):
        scale[0] = value

    return set_scale, lambda x: x * scale[0]


def make_scaler_py_function(initial):  # right numbers, Python run from the graph
    scale = [initial]

    def set_scale(value):
        scale[0] = value

    @tf.function
    def scaled(x):
        return x * tf.py_function(lambda: tf.constant(scale[0], tf.float32), [], tf.float32)

    return set_scale, scaled


def make_scaler_nested(initial):  # the scale passed on as a Python float, inside a graph
    state = {"scale": float(initial)}

    @tf.function
    def by(x, scale):
        return x * scale

    def set_scale(value):
        state["scale"] = value

    scaled = tf.function(lambda x: by(x, state["scale"]))
    return set_scale, scaled


def test_make_scaler_passes_the_solution_and_a_module(capsys):
    pitfalls.check_make_scaler(make_scaler)
    pitfalls.check_make_scaler(make_scaler_module)
    pitfalls.check_make_scaler(make_scaler_vector)
    assert capsys.readouterr().out.count("2 cases passed") == 3


def test_make_scaler_names_a_variable_whose_shape_is_fixed():
    # assign fixes the draft's scalar scales, and refuses the first scale per feature
    fails_with(pitfalls.check_make_scaler, make_scaler_fixed_shape, "M103", "another shape",
               "[4.0, -1.0]", "shape TensorFlow leaves open")
    graded_failure("check_make_scaler", (make_scaler_fixed_shape,),
                   [{"initial": 0.5, "x": [[1.0, 2.0], [3.0, 4.0]], "scales": [-2.0, [0.0, 1.5]]}],
                   "M103", "hidden case 1", secrets=["1.5", "0.5"])


def test_make_scaler_names_a_variable_replaced_instead_of_assigned():
    error = fails_with(pitfalls.check_make_scaler, make_scaler_draft, "M70",
                       "reads a tf.Variable", "still multiplies by the first scale 2.0",
                       "captured", "change its value in place in set_scale")
    assert "becomes a constant" not in flat(error)


def test_make_scaler_names_a_free_variable_read_at_trace_time():
    fails_with(pitfalls.check_make_scaler, make_scaler_nested, "M22", "becomes a constant")
    fails_with(pitfalls.check_make_scaler, make_scaler_broken, "M22", "still multiplies by the "
               "first scale 2.0", "becomes a constant of the graph", "tf.Variable")


def test_make_scaler_rejects_the_right_numbers_without_a_variable_read_by_the_graph():
    error = fails_with(pitfalls.check_make_scaler, make_scaler_eager, "M21",
                       "not a tf.function", "graph mode")
    assert error.code == "not_tf_function"
    fails_with(pitfalls.check_make_scaler, make_scaler_py_function, "M21", "runs Python from "
               "the graph")


def test_grading_make_scaler():
    cases = [{"initial": 0.5, "x": [[1.0, 2.0], [3.0, 4.0]], "scales": [-2.0, [0.0, 1.5], 7.5]}]
    assert grade("check_make_scaler", (make_scaler,), cases) == 1
    graded_failure("check_make_scaler", (make_scaler_broken,), cases, "M22", "hidden case 1",
                   "tf.Variable", secrets=["0.5", "7.5", "-2.0"])
    graded_failure("check_make_scaler", (make_scaler_draft,), cases, "M70", "hidden case 1",
                   "captured", secrets=["0.5", "7.5", "-2.0"])
    error = graded_failure("check_make_scaler", (make_scaler_eager,), cases, "M21",
                           "hidden case 1", "not a tf.function", secrets=["0.5"])
    assert error.code == "not_tf_function"


# ---------------------------------------------------------------- Recorder

class Recorder(tf.Module):
    def __init__(self):
        super().__init__()
        self.log = []

    @tf.function
    def _square_sum(self, x):
        return tf.reduce_sum(x * x)

    def record(self, x):
        y = self._square_sum(x)
        self.log.append(y)
        return y


class RecorderFunction(tf.Module):  # correct, another spelling: a tf.function made in __init__
    def __init__(self):
        super().__init__()
        self.log = []
        self._graph = tf.function(lambda x: tf.reduce_sum(tf.square(x)))

    def record(self, x):
        value = self._graph(x)
        self.log.append(float(value))
        return value


class RecorderDraft(tf.Module):  # the notebook's draft: .numpy() inside the graph
    def __init__(self):
        super().__init__()
        self.log = []

    @tf.function
    def record(self, x):
        y = tf.reduce_sum(x * x)
        self.log.append(y.numpy())
        return y


class RecorderBroken(tf.Module):  # square_and_log's pitfall: append inside the graph
    def __init__(self):
        super().__init__()
        self.log = []

    @tf.function
    def record(self, x):
        y = tf.reduce_sum(x * x)
        self.log.append(y)
        return y


class RecorderEager(tf.Module):  # right log, no graph
    def __init__(self):
        super().__init__()
        self.log = []

    def record(self, x):
        y = tf.reduce_sum(x * x)
        self.log.append(float(y))
        return y


class RecorderPyFunction(tf.Module):  # right log, appended by Python run from the graph
    def __init__(self):
        super().__init__()
        self.log = []

    @tf.function
    def record(self, x):
        y = tf.reduce_sum(x * x)

        def append(value):
            self.log.append(float(value))
            return value

        return tf.py_function(append, [y], tf.float32)


def test_recorder_passes_the_solution_and_another_spelling(capsys):
    pitfalls.check_recorder(Recorder)
    pitfalls.check_recorder(RecorderFunction)
    assert capsys.readouterr().out.count("2 cases passed") == 2


def test_recorder_names_numpy_inside_the_graph():
    fails_with(pitfalls.check_recorder, RecorderDraft, "M16", "symbolic", "outside it")


def test_recorder_names_a_list_appended_inside_the_graph():
    fails_with(pitfalls.check_recorder, RecorderBroken, "M23", "(1 entry for 3 calls)",
               "once per trace", "graph tensor")


def test_recorder_rejects_the_right_log_without_a_graph():
    fails_with(pitfalls.check_recorder, RecorderEager, "M21", "ran no tf.function")
    fails_with(pitfalls.check_recorder, RecorderPyFunction, "M21", "runs Python from the graph")


def test_grading_recorder():
    cases = [{"inputs": [[[1.0, 2.0], [3.0, 4.0]], [[0.5]], [[-2.0, 0.25]]]}]
    assert grade("check_recorder", (Recorder,), cases) == 1
    graded_failure("check_recorder", (RecorderBroken,), cases, "M23", "hidden case 1",
                   secrets=["entries for", "30.0", "0.25"])
    graded_failure("check_recorder", (RecorderDraft,), cases, "M16", "hidden case 1",
                   secrets=["30.0", "0.25"])


# ---------------------------------------------------------------- make_next_value

def make_next_value(values):
    iterator = iter(tf.data.Dataset.from_tensor_slices(tf.constant(values, tf.float32)))

    @tf.function
    def next_value():
        return next(iterator)

    return next_value


def make_next_value_broken(values):  # the notebook's: a Python iterator
    iterator = iter(values)

    @tf.function
    def next_value():
        return tf.constant(next(iterator), tf.float32)

    return next_value


def make_next_value_iterator_inside(values):  # the notebook's: a new iterator on every call
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(values, tf.float32))

    @tf.function
    def next_value():
        return next(iter(dataset))

    return next_value


def make_next_value_eager(values):
    iterator = iter(values)
    return lambda: tf.constant(next(iterator), tf.float32)


def make_next_value_py_function(values):
    iterator = iter(values)

    @tf.function
    def next_value():
        return tf.py_function(lambda: tf.constant(next(iterator), tf.float32), [], tf.float32)

    return next_value


def test_make_next_value_passes_the_solution_and_a_variable_index(capsys):
    pitfalls.check_make_next_value(make_next_value)

    def with_index(values):
        data, index = tf.constant(values, tf.float32), tf.Variable(0)

        @tf.function
        def next_value():
            value = data[index]
            index.assign_add(1)
            return value
        return next_value

    pitfalls.check_make_next_value(with_index)
    assert capsys.readouterr().out.count("2 cases passed") == 2


def test_make_next_value_names_a_python_iterator_consumed_at_trace_time():
    fails_with(pitfalls.check_make_next_value, make_next_value_broken, "M24",
               "returns the first element", "tf.data.Dataset")


def test_make_next_value_names_an_iterator_made_inside_the_graph():
    error = fails_with(pitfalls.check_make_next_value, make_next_value_iterator_inside, "M40",
                       "returns the first element", "makes its iterator itself",
                       "once, outside the tf.function")
    assert "Python iterator" not in flat(error)


def test_make_next_value_passes_a_dataset_iterator_made_from_a_python_list(capsys):
    def from_list(values):  # another spelling: get_next on an iterator of a mapped dataset
        iterator = iter(tf.data.Dataset.from_tensor_slices(values).map(
            lambda v: tf.cast(v, tf.float32)))
        return tf.function(lambda: iterator.get_next())

    pitfalls.check_make_next_value(from_list)
    assert "2 cases passed" in capsys.readouterr().out


def test_make_next_value_rejects_the_right_values_without_graph_state():
    fails_with(pitfalls.check_make_next_value, make_next_value_eager, "M21", "not a tf.function")
    fails_with(pitfalls.check_make_next_value, make_next_value_py_function, "M21",
               "runs Python from the graph")


def test_grading_make_next_value():
    cases = [{"values": [0.5, -1.0, 2.0, 8.0, -3.5]}]
    assert grade("check_make_next_value", (make_next_value,), cases) == 1
    graded_failure("check_make_next_value", (make_next_value_broken,), cases, "M24",
                   "hidden case 1", secrets=["0.5", "-3.5", "call 2"])
    graded_failure("check_make_next_value", (make_next_value_iterator_inside,), cases, "M40",
                   "hidden case 1", "makes its iterator itself", secrets=["0.5", "-3.5"])


# ---------------------------------------------------------------- WarmupSchedule

class WarmupSchedule(tf.Module):
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.step = tf.Variable(0)

    @tf.function
    def next_lr(self):
        self.step.assign_add(1)
        if self.step <= self.warmup_steps:
            return self.base_lr * tf.cast(self.step, tf.float32) / self.warmup_steps
        return tf.constant(self.base_lr)


class WarmupScheduleMinimum(tf.Module):  # correct, another spelling: tf.minimum, no if
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.step = tf.Variable(0)

    @tf.function
    def next_lr(self):
        self.step.assign_add(1)
        k = tf.minimum(tf.cast(self.step, tf.float32), float(self.warmup_steps))
        return self.base_lr * k / self.warmup_steps


class WarmupScheduleWhere(tf.Module):  # correct, another spelling: tf.where, tensors in __init__
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = tf.constant(base_lr, tf.float32)
        self.warmup_steps = tf.constant(warmup_steps, tf.int32)
        self.step = tf.Variable(0)

    @tf.function
    def next_lr(self):
        k = self.step.assign_add(1)
        ramp = self.base_lr * tf.cast(k, tf.float32) / tf.cast(self.warmup_steps, tf.float32)
        return tf.where(k < self.warmup_steps, ramp, self.base_lr)


class WarmupScheduleDraft(tf.Module):  # the notebook's draft: Python's min() of the step
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.step = tf.Variable(0)

    @tf.function
    def next_lr(self):
        self.step.assign_add(1)
        k = min(int(self.step), self.warmup_steps)
        return tf.constant(self.base_lr * k / self.warmup_steps)


class WarmupScheduleNumpy(WarmupScheduleDraft):  # the draft "fixed" with .numpy(): eager only
    @tf.function
    def next_lr(self):
        self.step.assign_add(1)
        k = min(int(self.step.numpy()), self.warmup_steps)
        return tf.constant(self.base_lr * k / self.warmup_steps)


class WarmupSchedulePyFunction(WarmupScheduleDraft):  # right rates, Python run from the graph
    @tf.function
    def next_lr(self):
        self.step.assign_add(1)
        rate = lambda k: np.float32(self.base_lr * min(int(k), self.warmup_steps)  # noqa: E731
                                    / self.warmup_steps)
        return tf.numpy_function(rate, [self.step.read_value()], tf.float32)


class WarmupScheduleBroken(tf.Module):  # section 5's pitfall: a Python counter
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.step = 0

    @tf.function
    def next_lr(self):
        self.step += 1
        if self.step <= self.warmup_steps:
            return tf.constant(self.base_lr * self.step / self.warmup_steps)
        return tf.constant(self.base_lr)


class WarmupScheduleEager(tf.Module):  # right rates, computed in Python outside any graph
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr, self.warmup_steps = base_lr, warmup_steps
        self.step = tf.Variable(0)

    def next_lr(self):
        self.step.assign_add(1)
        k = int(self.step.numpy())
        return tf.constant(self.base_lr * min(k, self.warmup_steps) / self.warmup_steps)


class WarmupScheduleShared(WarmupSchedule):  # one counter for every schedule
    shared = None

    def __init__(self, base_lr, warmup_steps):
        super().__init__(base_lr, warmup_steps)
        if WarmupScheduleShared.shared is None:
            WarmupScheduleShared.shared = self.step
        self.step = WarmupScheduleShared.shared


def test_warmup_schedule_passes_the_solution(capsys):
    pitfalls.check_warmup_schedule(WarmupSchedule)
    pitfalls.check_warmup_schedule(WarmupSchedule, cases=[
        {"base_lr": 0.5, "warmup_steps": 1, "calls": 3},
        {"base_lr": 0.02, "warmup_steps": 4, "calls": 7}], hidden=True)
    assert "2 cases passed" in capsys.readouterr().out


def test_warmup_schedule_passes_two_other_spellings(capsys):
    for cls in (WarmupScheduleMinimum, WarmupScheduleWhere):
        pitfalls.check_warmup_schedule(cls)
    assert capsys.readouterr().out.count("2 cases passed") == 2


def test_warmup_schedule_names_the_drafts_python_min_of_the_step():
    tf.config.run_functions_eagerly(True)  # eagerly, the draft's rates are right
    try:
        schedule = WarmupScheduleDraft(0.1, 3)
        rates = [float(schedule.next_lr()) for _ in range(5)]
    finally:
        tf.config.run_functions_eagerly(False)
    assert rates == pytest.approx([0.1 / 3, 0.2 / 3, 0.1, 0.1, 0.1])
    error = fails_with(pitfalls.check_warmup_schedule, WarmupScheduleDraft, "M09",
                       "OperatorNotAllowedInGraphError", "min()", "cast to float32")
    assert error.code == "python_bool"


def test_warmup_schedule_rejects_the_draft_fixed_outside_the_graph():
    fails_with(pitfalls.check_warmup_schedule, WarmupScheduleNumpy, "M16", ".numpy()")
    error = fails_with(pitfalls.check_warmup_schedule, WarmupSchedulePyFunction, "M21",
                       "runs Python from the graph")
    assert error.code == "py_function"


def test_warmup_schedule_names_a_python_counter():
    fails_with(pitfalls.check_warmup_schedule, WarmupScheduleBroken, "M25",
               "same rate on every call", "make the counter a tf.Variable in __init__")


def test_warmup_schedule_rejects_the_right_rates_without_the_graph_counter():
    error = fails_with(pitfalls.check_warmup_schedule, WarmupScheduleEager, "M21",
                       "WarmupSchedule.next_lr is not a tf.function")
    assert error.code == "not_tf_function"
    error = fails_with(pitfalls.check_warmup_schedule, WarmupScheduleShared, None,
                       "does not start from the first step")
    assert error.code == "shared"


class PosingFunction(tf.types.experimental.PolymorphicFunction):
    """Issue 28: an object that answers isinstance for a tf.function and reports one trace and
    the graph of a real one, while its rates come from Python."""

    def __init__(self, python, graph):
        self.python, self.graph = python, graph

    def __call__(self, *args, **kwargs):
        return self.python(*args, **kwargs)

    def experimental_get_tracing_count(self):
        return 1

    function_type = None

    def get_concrete_function(self, *args, **kwargs):
        return self.graph.get_concrete_function(*args, **kwargs)


class WarmupSchedulePosing(WarmupScheduleEager):  # right rates, a graph of another schedule's
    def __init__(self, base_lr, warmup_steps):
        super().__init__(base_lr, warmup_steps)
        eager_next_lr = self.next_lr
        self.next_lr = PosingFunction(eager_next_lr, WarmupSchedule(base_lr, warmup_steps).next_lr)


def test_warmup_schedule_rejects_an_object_posing_as_a_tf_function():
    # Issue 28: isinstance is not the evidence; the check reads traces and graphs only through
    # TensorFlow's own Function type, captured before any student code ran (M87).
    error = fails_with(pitfalls.check_warmup_schedule, WarmupSchedulePosing, "M87",
                       "not the Function that tf.function makes")
    assert error.code == "posing_function"


def test_warmup_schedule_ignores_a_tracing_count_patched_on_the_function_type():
    # Issue 28: a method replaced on TensorFlow's class after the checks were imported is not
    # the one the check calls: the Python counter still retraces on every call (M25).
    cls = type(tf.function(lambda: None))
    original = cls.experimental_get_tracing_count
    cls.experimental_get_tracing_count = lambda self: 1
    try:
        fails_with(pitfalls.check_warmup_schedule, WarmupScheduleBroken, "M25")
    finally:
        cls.experimental_get_tracing_count = original


class WarmupScheduleTable(tf.Module):  # right rates, looked up in a table made in __init__
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.step = tf.Variable(0)
        self.table = tf.constant([base_lr * min(k, warmup_steps) / warmup_steps
                                  for k in range(1000)], tf.float32)

    @tf.function
    def next_lr(self):
        return tf.gather(self.table, self.step.assign_add(1))


def test_warmup_schedule_rejects_a_lookup_table_of_precomputed_rates():
    # Issue 28: the right rates for every step the check could ask, but read from a table.
    error = fails_with(pitfalls.check_warmup_schedule, WarmupScheduleTable, "M21",
                       "table of values worked out in advance")
    assert error.code == "lookup_table"


class WarmupScheduleSmallTable(tf.Module):  # a table as long as the warm-up: 4 entries or fewer
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.step, self.warmup_steps = tf.Variable(0), warmup_steps
        self.table = tf.constant([base_lr * k / warmup_steps for k in range(warmup_steps + 1)])

    @tf.function
    def next_lr(self):
        return tf.gather(self.table, tf.minimum(self.step.assign_add(1), self.warmup_steps))


class WarmupScheduleBranches(tf.Module):  # a scalar constant per step, one branch each
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.step = tf.Variable(0)
        self.rates = [base_lr * min(k, warmup_steps) / warmup_steps for k in range(8)]

    @tf.function
    def next_lr(self):
        k = tf.minimum(self.step.assign_add(1), len(self.rates) - 1)
        return tf.switch_case(k, [lambda r=r: tf.constant(r) for r in self.rates])


class WarmupScheduleShortOnly(WarmupSchedule):  # refuses a warm-up longer than its table
    def __init__(self, base_lr, warmup_steps):
        if warmup_steps > 64:
            raise ValueError("warm-up too long")
        super().__init__(base_lr, warmup_steps)


def test_warmup_schedule_rejects_tables_no_longer_than_the_cases_need():
    # Issue 28: a table of warmup_steps + 1 entries, or scalar constants in a branch per step,
    # hold no constant of more than 4 entries: the probe's 10,000 warm-up steps show them.
    for cls in (WarmupScheduleSmallTable, WarmupScheduleBranches):
        schedule = cls(0.1, 3)
        assert [round(float(schedule.next_lr()), 6) for _ in range(5)] == \
            [0.033333, 0.066667, 0.1, 0.1, 0.1]
    error = fails_with(pitfalls.check_warmup_schedule, WarmupScheduleSmallTable, "M21",
                       "constant numbers, about one per step", "table of rates worked out in advance")
    assert error.code == "lookup_table"
    error = fails_with(pitfalls.check_warmup_schedule, WarmupScheduleBranches, "M21",
                       "step was set to 4320", "right only for the steps the cases reach")
    assert error.code == "lookup_table"
    error = fails_with(pitfalls.check_warmup_schedule, WarmupScheduleShortOnly, "M21",
                       "WarmupSchedule(0.5, 10000)", "raised an error")
    assert error.code == "lookup_table"


def test_grading_warmup_schedule():
    cases = [{"base_lr": 0.02, "warmup_steps": 4, "calls": 7}]
    assert grade("check_warmup_schedule", (WarmupSchedule,), cases) == 1
    graded_failure("check_warmup_schedule", (WarmupScheduleBroken,), cases, "M25",
                   "hidden case 1", secrets=["0.02", "0.005", "call 2"])
    graded_failure("check_warmup_schedule", (WarmupScheduleDraft,), cases, "M09",
                   "OperatorNotAllowedInGraphError", secrets=["0.02", "0.005", "call 2"])


# ---------------------------------------------------------------- descend

@tf.function
def sgd_update(w, grad, lr):
    w.assign_sub(lr * grad)


def descend(w, grads, lrs):
    for grad, lr in zip(grads, lrs):
        sgd_update(w, grad, tf.constant(lr, dtype=tf.float32))
    return w


def descend_one_function_inside(w, grads, lrs):  # correct: made once per descend, tensors in
    step = tf.function(lambda grad, lr: w.assign_sub(lr * grad))
    for grad, lr in zip(grads, lrs):
        step(grad, tf.convert_to_tensor(lr, tf.float32))
    return w


def descend_variable_rate(w, grads, lrs):  # correct: the rate in a tf.Variable
    rate = tf.Variable(0.0)
    for grad, lr in zip(grads, lrs):
        rate.assign(lr)
        sgd_update(w, grad, rate)
    return w


def descend_broken(w, grads, lrs):  # the notebook's: a tf.function created inside the loop
    for grad, lr in zip(grads, lrs):
        @tf.function
        def sgd_step():
            w.assign_sub(lr * grad)
        sgd_step()
    return w


def descend_python_floats(w, grads, lrs):  # one function, but Python floats retrace
    for grad, lr in zip(grads, lrs):
        sgd_update(w, grad, lr)
    return w


def descend_eager(w, grads, lrs):  # right weights, no graph
    for grad, lr in zip(grads, lrs):
        w.assign_sub(lr * grad)
    return w


def descend_decoy(w, grads, lrs):  # right weights by hand, beside graph calls on a copy
    scratch = tf.Variable(tf.zeros_like(w))
    for grad, lr in zip(grads, lrs):
        sgd_update(scratch, grad, tf.constant(lr))
        w.assign_sub(lr * grad)
    return w


def descend_half_by_hand(w, grads, lrs):  # the graph makes every other update
    for k, (grad, lr) in enumerate(zip(grads, lrs)):
        if k % 2:
            w.assign_sub(lr * grad)
        else:
            sgd_update(w, grad, tf.constant(lr))
    return w


def test_descend_passes_the_solution_and_two_other_spellings(capsys):
    pitfalls.check_descend(descend)
    pitfalls.check_descend(descend_one_function_inside)
    pitfalls.check_descend(descend_variable_rate)
    assert capsys.readouterr().out.count("1 case passed") == 3


def test_descend_names_a_tf_function_created_inside_the_loop():
    error = fails_with(pitfalls.check_descend, descend_broken, "M41", "(6 traces for 6 steps)",
                       "inside the loop", "create the tf.function once, before the loop")
    assert "M26" not in flat(error)


def test_descend_names_a_retrace_per_python_float():
    fails_with(pitfalls.check_descend, descend_python_floats, "M26", "(6 traces for 6 steps)",
               "pass the learning rate as a float32 tensor")


def test_descend_finds_the_retrace_also_when_its_floats_were_traced_before():
    # the notebook (or a check run before) may have traced sgd_update for these floats
    for _ in range(2):
        fails_with(pitfalls.check_descend, descend_python_floats, "M26", "(6 traces for 6 steps)")


def test_descend_rejects_the_right_weights_without_a_graph():
    fails_with(pitfalls.check_descend, descend_eager, "M21", "did not run as a graph")


def test_descend_rejects_updates_by_hand_beside_graph_calls():
    error = fails_with(pitfalls.check_descend, descend_decoy, "M21", "no tf.function changed w")
    assert error.code == "no_graph"
    error = fails_with(pitfalls.check_descend, descend_half_by_hand, "M21",
                       "w changed outside the tf.function calls")
    assert error.code == "by_hand"


def test_grading_descend():
    cases = [{"w": [2.0, 0.0, -2.0], "grads": [[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0],
                                               [0.5, 0.5, 0.5]],
              "lrs": [0.0911, 0.0733, 0.0587]}]
    assert grade("check_descend", (descend,), cases) == 1
    graded_failure("check_descend", (descend_broken,), cases, "M41", "hidden case 1",
                   secrets=["0.0911", "traces for"])
    graded_failure("check_descend", (descend_python_floats,), cases, "M26", "hidden case 1",
                   secrets=["0.0911", "traces for"])
    graded_failure("check_descend", (descend_half_by_hand,), cases, "M21", "outside",
                   secrets=["0.0911"])


# ---------------------------------------------------------------- td_update

@tf.function
def td_update(w, s, r, s_next, done, gamma, lr):
    with tf.GradientTape() as tape:
        if done:
            target = r
        else:
            target = r + gamma * tf.tensordot(w, s_next, 1)
        target = tf.stop_gradient(target)
        delta = target - tf.tensordot(w, s, 1)
        loss = 0.5 * delta ** 2
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss


@tf.function
def td_update_stop_recording(w, s, r, s_next, done, gamma, lr):
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            target = tf.where(done, r, r + gamma * tf.reduce_sum(w * s_next))
        loss = 0.5 * tf.square(target - tf.reduce_sum(w * s))
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss


@tf.function
def td_update_draft(w, s, r, s_next, done, gamma, lr):  # the notebook's: s_next held, not v(s')
    with tf.GradientTape() as tape:
        if done:
            target = r
        else:
            target = r + gamma * tf.reduce_sum(w * tf.stop_gradient(s_next))
        delta = target - tf.reduce_sum(w * s)
        loss = 0.5 * delta ** 2
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss


@tf.function
def td_update_broken(w, s, r, s_next, done, gamma, lr):  # no stop_gradient: the target moves
    with tf.GradientTape() as tape:
        if done:
            target = r
        else:
            target = r + gamma * tf.tensordot(w, s_next, 1)
        delta = target - tf.tensordot(w, s, 1)
        loss = 0.5 * delta ** 2
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss


@tf.function
def td_update_by_hand(w, s, r, s_next, done, gamma, lr):  # the semi-gradient as a formula
    target = r + gamma * (1.0 - tf.cast(done, tf.float32)) * tf.tensordot(w, s_next, 1)
    delta = target - tf.tensordot(w, s, 1)
    w.assign_add(lr * delta * s)
    return 0.5 * delta ** 2


@tf.function
def td_update_decoy(w, s, r, s_next, done, gamma, lr):  # an unused tape beside a step by hand
    with tf.GradientTape() as tape:
        target = r + gamma * (1.0 - tf.cast(done, tf.float32)) * tf.tensordot(w, s_next, 1)
        delta = target - tf.tensordot(w, s, 1)
        loss = 0.5 * delta ** 2
    tape.gradient(loss, w)  # the full gradient, computed and thrown away
    w.assign_add(lr * tf.stop_gradient(delta) * s)
    return loss


@tf.function
def td_update_decoy_scaled(w, s, r, s_next, done, gamma, lr):  # the tape's result times 0, and
    with tf.GradientTape() as tape:                            # the semi-gradient by hand
        target = tf.stop_gradient(r + gamma * (1.0 - tf.cast(done, tf.float32))
                                  * tf.tensordot(w, s_next, 1))
        loss = 0.5 * (target - tf.tensordot(w, s, 1)) ** 2
    grad = tape.gradient(loss, w)
    w.assign_sub(lr * grad * 0.0 + lr * (tf.tensordot(w, s, 1) - target) * s)
    return loss


def test_td_update_rejects_a_step_by_hand_beside_an_unused_tape():
    error = fails_with(pitfalls.check_td_update, td_update_decoy, "M44",
                       "not what tape.gradient returned", "the learning rate times the gradient the tape returns")
    assert error.code is None


def test_td_update_rejects_a_step_by_hand_that_agrees_with_the_tape():
    # Issue 28: the step by hand equals the tape's semi-gradient here (the tape's result is
    # added times 0.0); every applied update must be the tape's result, so the eager run hands
    # each result back shifted by a constant and the step must move with it.
    error = fails_with(pitfalls.check_td_update, td_update_decoy_scaled, "M44",
                       "not what tape.gradient returned", "the learning rate times the gradient the tape returns")
    assert error.code is None


@tf.function
def td_update_assign_of_a_difference(w, s, r, s_next, done, gamma, lr):
    target = tf.stop_gradient(r + gamma * (1.0 - tf.cast(done, tf.float32))
                              * tf.tensordot(w, s_next, 1))
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = 0.5 * tf.square(target - tf.reduce_sum(w * s))
    (grad,) = tape.gradient(loss, [w])
    w.assign(w - grad * lr)
    return loss


@tf.function
def td_update_by_an_sgd_rule(w, s, r, s_next, done, gamma, lr):
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            target = r + gamma * tf.where(done, 0.0, tf.tensordot(w, s_next, 1))
        loss = 0.5 * (target - tf.tensordot(w, s, 1)) ** 2
    w.assign_sub(tf.multiply(lr, tape.gradient(loss, w)))
    return loss


def test_td_update_passes_the_tape_result_however_it_is_spelled(capsys):
    pitfalls.check_td_update(td_update_assign_of_a_difference)
    pitfalls.check_td_update(td_update_by_an_sgd_rule)
    assert capsys.readouterr().out.count("1 case passed") == 2


def test_td_update_passes_stop_gradient_and_stop_recording(capsys):
    pitfalls.check_td_update(td_update)
    pitfalls.check_td_update(td_update_stop_recording)
    assert capsys.readouterr().out.count("1 case passed") == 2


def test_td_update_names_a_target_that_is_not_held_fixed():
    fails_with(pitfalls.check_td_update, td_update_broken, "M27", "full gradient",
               "wrap the target alone in tf.stop_gradient")
    fails_with(pitfalls.check_td_update, td_update_draft, "M27", "full gradient",
               "wrap the target alone in tf.stop_gradient")


def test_td_update_rejects_the_semi_gradient_by_hand():
    fails_with(pitfalls.check_td_update, td_update_by_hand, "M21", "no tape computed")
    error = fails_with(pitfalls.check_td_update, td_update_by_hand.python_function, "M21",
                       "td_update is not a tf.function")
    assert error.code == "not_tf_function"


def test_grading_td_update():
    cases = [{"w": [1.5, 1.5], "gamma": 0.99, "lr": 0.05,
              "steps": [{"s": [2.0, -1.0], "r": 0.25, "s_next": [1.0, 3.0], "done": False},
                        {"s": [1.0, 3.0], "r": 1.0, "s_next": [0.0, 0.0], "done": True}]}]
    assert grade("check_td_update", (td_update,), cases) == 1
    graded_failure("check_td_update", (td_update_broken,), cases, "M27", "hidden case 1",
                   secrets=["0.99", "step 1", "1.5"])
    graded_failure("check_td_update", (td_update_draft,), cases, "M27", "hidden case 1",
                   secrets=["0.99", "step 1", "1.5"])
    graded_failure("check_td_update", (td_update_by_hand,), cases, "M21", "no tape",
                   secrets=["0.99"])
    graded_failure("check_td_update", (td_update_decoy,), cases, "M44", "by hand",
                   secrets=["0.99", "1.5"])


@tf.function
def td_update_all_stopped(w, s, r, s_next, done, gamma, lr):  # the whole TD error held fixed
    with tf.GradientTape() as tape:
        if done:
            target = r
        else:
            target = r + gamma * tf.reduce_sum(w * s_next)
        delta = tf.stop_gradient(target - tf.reduce_sum(w * s))
        loss = 0.5 * delta ** 2
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss


def test_td_update_names_stop_gradient_around_the_whole_td_error():
    # tape.gradient gives None, and lr * None raises a bare ValueError inside TensorFlow: the
    # check finds the StopGradient by experiment and says to hold only the target.
    error = fails_with(pitfalls.check_td_update, td_update_all_stopped, "M13",
                       "tf.stop_gradient holds the whole TD error", "only the target",
                       "tf.stop_gradient around the target alone")
    assert error.code == "stop_gradient_all" and "None values" not in flat(error)


def test_grading_td_update_words_the_whole_td_error_stopped():
    cases = [{"w": [1.5, 1.5], "gamma": 0.99, "lr": 0.05,
              "steps": [{"s": [2.0, -1.0], "r": 0.25, "s_next": [1.0, 3.0], "done": False}]}]
    error = graded_failure("check_td_update", (td_update_all_stopped,), cases, "M13",
                           "hidden case 1", "whole TD error", "tf.stop_gradient around the target alone",
                           secrets=["0.99", "1.5", "None values", "ValueError"])
    assert error.code == "stop_gradient_all"


# ---------------------------------------------------------------- rms_normalize

@tf.function(jit_compile=True)
def normalize_compiled(x):
    rms = tf.sqrt(tf.reduce_mean(tf.square(x)) + 1e-6)
    return x / rms, rms


@tf.function
def rms_normalize(x):
    normalized, rms = normalize_compiled(x)
    tf.print("rms:", rms)
    return normalized


@tf.function
def rms_normalize_rms_first(x):  # another spelling: XLA computes the rms only
    rms = tf.function(lambda t: tf.sqrt(tf.reduce_mean(t * t) + 1e-6), jit_compile=True)(x)
    tf.print("root mean square", rms, "of", tf.size(x), "values")
    return x / rms


@tf.function(jit_compile=True)
def rms_normalize_broken(x):  # the notebook's: tf.print in an XLA function
    rms = tf.sqrt(tf.reduce_mean(tf.square(x)) + 1e-6)
    tf.print("rms:", rms)
    return x / rms


@tf.function(jit_compile=True)
def rms_normalize_silent(x):  # right values, the log deleted
    return x / tf.sqrt(tf.reduce_mean(tf.square(x)) + 1e-6)


@tf.function
def rms_normalize_no_xla(x):  # right values and log, jit_compile deleted
    rms = tf.sqrt(tf.reduce_mean(tf.square(x)) + 1e-6)
    tf.print("rms:", rms)
    return x / rms


@tf.function
def rms_normalize_python_print(x):  # XLA kept, but a Python print: once, while tracing
    normalized, rms = normalize_compiled(x)
    print("rms:", rms)
    return normalized


def test_rms_normalize_passes_the_solution_and_another_split(capsys):
    pitfalls.check_rms_normalize(rms_normalize)
    pitfalls.check_rms_normalize(rms_normalize_rms_first)
    assert capsys.readouterr().out.count("2 cases passed") == 2


def test_rms_normalize_names_what_xla_cannot_compile():
    error = fails_with(pitfalls.check_rms_normalize, rms_normalize_broken, "M18",
                       "no kernel for tf.print", "a tf.function of its own compiled with XLA",
                       "a plain tf.function that keeps the tf.print")
    assert error.code == "xla_print" and "remove jit_compile" not in flat(error)


def test_rms_normalize_rejects_the_right_values_without_the_log_or_without_xla():
    error = fails_with(pitfalls.check_rms_normalize, rms_normalize_silent, "M21",
                       "no longer logs the root mean square")
    assert error.code == "no_log"
    error = fails_with(pitfalls.check_rms_normalize, rms_normalize_no_xla, "M21",
                       "nothing in it is compiled by XLA")
    assert error.code == "no_xla"
    fails_with(pitfalls.check_rms_normalize, rms_normalize_python_print, "M08",
               "one line is printed for two calls")


def test_grading_rms_normalize_words_the_fix_of_this_exercise():
    assert grade("check_rms_normalize", (rms_normalize,), [[0.5, -2.0, 1.0, 0.0]]) == 1
    error = graded_failure("check_rms_normalize", (rms_normalize_broken,), [[0.5, -2.0]],
                           "M18", "hidden case 1", "keeps the tf.print",
                           secrets=["0.5", "-2.0", "StringFormat"])
    assert "remove jit_compile" not in flat(error)
    graded_failure("check_rms_normalize", (rms_normalize_silent,), [[0.5, -2.0]], "M21",
                   "no longer logs", secrets=["0.5", "-2.0"])


@tf.function(jit_compile=True)
def noisy_square_xla(x):  # 03's exercise compiled by XLA: there the print must stay
    tf.print("square of", x)
    return x * x


def test_the_catalogued_m18_fix_fits_both_exercises_that_meet_it():
    # 07 keeps XLA for the arithmetic and the print in a plain tf.function around it; 03
    # (noisy_square) must print, so XLA goes. A kernel finding M18 without this exercise's code
    # is worded by the catalogue.
    fix = flat(mistakes.CATALOGUE["M18"][2])
    assert "remove jit_compile=True from that function" not in fix
    error = graded_failure("check_noisy_square", (noisy_square_xla,), [[2.5, 2]], "M18",
                           "hidden case 1", "take tf.print", "out of the function",
                           "leave jit_compile=True off it", secrets=["2.5", "StringFormat"])
    assert error.code is None
    error = graded_failure("check_rms_normalize", (rms_normalize_broken,), [[0.5, -2.0]],
                           "M18", "a tf.function of its own compiled with XLA")
    assert error.code == "xla_print"


# ---------------------------------------------------------------- hinge_total

@tf.function
def hinge_total(scores):
    total = 0.0
    for s in scores:
        loss = 0.0
        if s < 1.0:
            loss = 1.0 - s
        total += loss
    return total


@tf.function
def hinge_total_vectorised(scores):  # another spelling: no loop at all
    return tf.reduce_sum(tf.maximum(0.0, 1.0 - scores))


@tf.function
def hinge_total_else(scores):  # another spelling: an else branch, a float32 constant
    total = tf.constant(0.0)
    for s in scores:
        if s < 1.0:
            loss = 1.0 - s
        else:
            loss = tf.constant(0.0)
        total += loss
    return total


@tf.function
def hinge_total_range(scores):  # another spelling: a loop over tf.range, run in the graph
    total = tf.zeros([])
    for i in tf.range(tf.size(scores)):
        total += tf.nn.relu(1.0 - scores[i])
    return total


@tf.function
def hinge_total_draft(scores):  # the escape the notebook warns of: a Python range over the static length
    total = 0.0
    for i in range(len(scores)):  # a Python loop: AutoGraph's rules do not apply
        if scores[i] < 1.0:
            total += 1.0 - scores[i]
    return total


@tf.function
def hinge_total_shape_range(scores):  # the draft with shape[0]: None for unknown length
    total = 0.0
    for i in range(scores.shape[0]):
        total += tf.maximum(0.0, 1.0 - scores[i])
    return total


@tf.function
def hinge_total_broken(scores):  # the notebook's draft: both rules broken
    total = 0
    for s in scores:
        if s < 1.0:
            loss = 1.0 - s
        total += loss
    return total


@tf.function
def hinge_total_int_total(scores):  # the else branch fixed, total still a Python int
    total = 0
    for s in scores:
        loss = 0.0
        if s < 1.0:
            loss = 1.0 - s
        total += loss
    return total


def hinge_total_eager(scores):  # right numbers, no graph
    return tf.reduce_sum(tf.maximum(0.0, 1.0 - scores))


@tf.function
def hinge_total_py_function(scores):  # right numbers, Python run from the graph
    return tf.py_function(lambda t: float(sum(max(0.0, 1.0 - v) for v in t.numpy())),
                          [scores], tf.float32)


def test_hinge_total_passes_four_spellings(capsys):
    for fn in (hinge_total, hinge_total_vectorised, hinge_total_else, hinge_total_range):
        pitfalls.check_hinge_total(fn)
    assert capsys.readouterr().out.count("1 case passed") == 4


def test_hinge_total_names_the_drafts_python_range_over_the_static_length():
    assert float(hinge_total_draft(tf.constant([0.5, 2.0, -1.0]))) == 2.5  # right values
    error = fails_with(pitfalls.check_hinge_total, hinge_total_draft, "M57",
                       "grows with the number of scores", "copies the body once per score",
                       "nodes for 3 scores")
    assert error.code == "unrolled"
    error = fails_with(pitfalls.check_hinge_total, hinge_total_shape_range, "M57",
                       "of unknown length, raised TypeError", "shape[0] is None")
    assert error.code == "static_length"


def test_hinge_total_reads_the_graph_for_the_cases_own_length():
    obs = pitfalls.collect_hinge_total(hinge_total_draft, [[0.5], [], [1.0, 2.0, 3.0]],
                                       judge.load()["check_hinge_total"].context(
                                           0, None, False, reveal=True))
    assert [item[0] for item in obs["nodes"]] == [1, 0, 3]
    assert all(short < longer for _, short, longer in obs["nodes"])
    obs = pitfalls.collect_hinge_total(hinge_total, [[0.5], [], [1.0, 2.0, 3.0]],
                                       judge.load()["check_hinge_total"].context(
                                           0, None, False, reveal=True))
    assert all(short == longer for _, short, longer in obs["nodes"])


def test_hinge_total_names_each_autograph_rule():
    error = fails_with(pitfalls.check_hinge_total, hinge_total_broken, "M36", "must both give every variable",
                       "a value on every path, before the if or in an else branch")
    assert error.code == "else_branch"
    error = fails_with(pitfalls.check_hinge_total, hinge_total_int_total, "M37",
                       "keep one dtype", "start it as a float")
    assert error.code == "loop_dtype"


def test_hinge_total_rejects_the_right_numbers_without_a_graph():
    fails_with(pitfalls.check_hinge_total, hinge_total_eager, "M21", "not a tf.function")
    fails_with(pitfalls.check_hinge_total, hinge_total_py_function, "M21",
               "runs Python from the graph")


def test_grading_hinge_total():
    cases = [[[1.0, 1.5, 0.999], [], [-2.0, -3.0, 0.0, 5.0]]]
    assert grade("check_hinge_total", (hinge_total,), cases) == 1
    for fn, mistake, words in ((hinge_total_broken, "M36", "else branch"),
                               (hinge_total_int_total, "M37", "int32"),
                               (hinge_total_draft, "M57", "grows with the number"),
                               (hinge_total_shape_range, "M57", "shape[0]")):
        error = graded_failure("check_hinge_total", (fn,), cases, mistake, "hidden case 1",
                               words, secrets=["0.999", "-3.0"])
        assert error.code in ("else_branch", "loop_dtype", "unrolled", "static_length")
        assert "nodes for" not in flat(error)


# ---------------------------------------------------------------- count_ops

def count_ops(concrete):
    graph_def = concrete.graph.as_graph_def()
    return len(graph_def.node) + sum(len(f.node_def) for f in graph_def.library.function)


COLLATZ = {"name": "collatz", "shape": [], "dtype": "int32", "source": """def collatz(n):
    steps = tf.constant(0)
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
"""}
CLIPPED = {"name": "clipped", "shape": [None], "dtype": "float32", "source": """def clipped(x):
    if tf.reduce_max(x) > 1.0:
        x = x / tf.reduce_max(x)
    return tf.reduce_sum(x * x)
"""}


def count_ops_walk(concrete):  # another spelling: a walk over the GraphDef's functions
    graph_def = concrete.graph.as_graph_def()
    total = len(graph_def.node)
    for function in graph_def.library.function:
        total += len(function.node_def)
    return total


def test_count_ops_passes_the_solution_on_functions_never_seen(capsys):
    pitfalls.check_count_ops(count_ops)
    pitfalls.check_count_ops(count_ops, cases=[COLLATZ, CLIPPED], hidden=True)
    pitfalls.check_count_ops(count_ops_walk, cases=[COLLATZ], hidden=True)
    assert capsys.readouterr().out.count("cases passed") == 2


def test_count_ops_hidden_functions_do_not_ship_in_the_package():
    assert set(pitfalls.COUNT_FUNCTIONS) == {"digit_sum", "affine"}
    assert not hasattr(pitfalls, "_collatz") and not hasattr(pitfalls, "_clipped")


def test_count_ops_names_a_count_of_the_top_level_graph_only():
    fails_with(pitfalls.check_count_ops, lambda c: len(c.graph.get_operations()), "M28",
               "counts only the top-level graph", "library")


def notebook_count_ops_draft():
    """count_ops_draft as 07's release defines it (its cell up to the first blank line)."""
    import json
    from pathlib import Path

    notebook = (Path(__file__).resolve().parents[1] / "notebooks" / "07_graph_pitfalls_debugging"
                / "07_graph_pitfalls_debugging.ipynb")
    cells = ["".join(c["source"]) for c in json.loads(notebook.read_text())["cells"]]
    drafts = [c for c in cells if "def count_ops_draft(" in c]
    assert len(drafts) == 1
    namespace = {}
    exec(drafts[0].split("\n\n")[0], namespace)
    return namespace["count_ops_draft"]


def test_count_ops_names_the_drafts_count_of_functions():
    # The draft counts graph_def.library.function (one per loop condition, body or branch).
    draft = notebook_count_ops_draft()
    fails_with(pitfalls.check_count_ops, draft, "M102", "counts the library's functions",
               "not the ops inside them")
    graded_failure("check_count_ops", (draft,), [COLLATZ], "M102", "hidden case 1",
                   secrets=["collatz"])


def test_count_ops_rejects_a_number_copied_from_the_notebook():
    # 63: fizzbuzz's count in 04; no visible case of 07 has that many.
    error = fails_with(pitfalls.check_count_ops, lambda c: 63, None, "function digit_sum",
                       ", got 63")
    assert error.code == "value"


def test_grading_count_ops():
    assert grade("check_count_ops", (count_ops,), [COLLATZ, CLIPPED]) == 2
    graded_failure("check_count_ops", (lambda c: len(c.graph.get_operations()),),
                   [COLLATZ], "M28", "hidden case 1", secrets=["collatz"])


# ---------------------------------------------------------------- the contract

def test_every_exercise_of_07_names_its_idea_and_its_kernel_half():
    entries = {name: entry for name, entry in judge.load().items()
               if entry.module == "autograder.checks.pitfalls"}
    assert len(entries) == 18
    for name, entry in entries.items():
        check = getattr(pitfalls, name)
        assert entry.idea in check.__doc__
        assert entry.judge.__module__ == "autograder.checks.judge.pitfalls"


# An empty vector's graph (static length 0) is a few nodes smaller than a longer one's for
# tf.foldl and tf.map_fn although neither unrolls anything: the node counts compare two
# nonzero lengths. A loop unrolled to a fixed count keeps its size and is caught by a long
# vector instead.

@tf.function
def hinge_total_foldl(scores):  # another spelling: tf.foldl
    return tf.foldl(lambda acc, s: acc + tf.nn.relu(1.0 - s), scores,
                    initializer=tf.constant(0.0))


@tf.function
def hinge_total_map_fn(scores):  # another spelling: tf.map_fn, then a sum
    return tf.reduce_sum(tf.map_fn(lambda s: tf.maximum(0.0, 1.0 - s), scores))


@tf.function
def hinge_total_padded(scores):  # a Python range over a fixed count, on a padded copy
    padded = tf.concat([scores, tf.ones([16], tf.float32)], 0)[:16]  # pad with 1.0: no loss
    total = 0.0
    for i in range(16):
        if padded[i] < 1.0:
            total += 1.0 - padded[i]
    return total


@tf.function
def hinge_total_fixed_conds(scores):  # a tf.cond per index, for a fixed count of indices
    n = tf.size(scores)
    total = tf.constant(0.0)
    for i in range(16):
        total += tf.cond(i < n, lambda i=i: tf.nn.relu(1.0 - scores[tf.minimum(i, n - 1)]),
                         lambda: 0.0)
    return total


@tf.function
def hinge_total_try_draft(scores):  # the draft when the length is known, a vector op otherwise
    try:
        n = len(scores)
    except TypeError:
        return tf.reduce_sum(tf.nn.relu(1.0 - scores))
    total = 0.0
    for i in range(n):
        if scores[i] < 1.0:
            total += 1.0 - scores[i]
    return total


def test_hinge_total_passes_foldl_and_map_fn_on_an_empty_vector_too(capsys):
    cases = [[[1.0, 1.5, 0.999], [], [-2.0, -3.0, 0.0, 5.0]], [[2.0]]]
    for fn in (hinge_total_foldl, hinge_total_map_fn):
        pitfalls.check_hinge_total(fn)
        pitfalls.check_hinge_total(fn, cases=cases, hidden=True)
        assert grade("check_hinge_total", (fn,), cases) == 2
    assert capsys.readouterr().out.count("2 cases passed") == 2


def test_hinge_total_rejects_a_loop_unrolled_to_a_fixed_length():
    for fn in (hinge_total_padded, hinge_total_fixed_conds):
        assert float(fn(tf.constant([0.5, 2.0, -1.0]))) == 2.5  # right for short vectors
        error = fails_with(pitfalls.check_hinge_total, fn, "M77", "600 scores",
                           "fixed number of scores")
        assert error.code == "fixed_length"
        error = graded_failure("check_hinge_total", (fn,), [[[1.0, 1.5, 0.999], []]], "M77",
                               "hidden case 1", "600 scores", secrets=["0.999"])
        assert error.code == "fixed_length"


def test_hinge_total_still_names_an_unrolled_range_beside_a_vector_fallback():
    error = fails_with(pitfalls.check_hinge_total, hinge_total_try_draft, "M57",
                       "grows with the number of scores", "nodes for 3 scores")
    assert error.code == "unrolled"
    error = graded_failure("check_hinge_total", (hinge_total_try_draft,),
                           [[[1.0, 1.5, 0.999], []]], "M57", "hidden case 1",
                           "grows with the number", secrets=["0.999"])
    assert error.code == "unrolled"
