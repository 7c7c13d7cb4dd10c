"""The grader's verdict from plain data (autograder.grading.preprocessors.verdict, autograder.checks.plain,
autograder.checks.judge): graded cells parsed from the instructor's source, the kernel's answer
read as hostile input, references and words that are the grader's own. The end-to-end routes
(a real kernel forging a reply, reading a check's frame) are in tests/test_grading_tamper.py."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from autograder.checks import judge, plain
from autograder.grading.preprocessors import verdict

SQUARE = "checks.check_square_grad(square_grad)\n### BEGIN HIDDEN TESTS\n" \
         "checks.check_square_grad(square_grad, cases=[0.5, -4, 7, 10.25], hidden=True)\n" \
         "### END HIDDEN TESTS\n"


# A door's addresses, as its pin request read them (tests/test_door.py makes real ones).
PIN = {"door": 11, "observe": (1, 2, 3, 4, 5, 6), "probe": (7, 8, 9)}


def _ok(value, addresses=PIN["observe"]) -> dict:
    """A user_expressions result as a kernel's door sends it: its addresses, and ``value`` as
    plain data."""
    return _door_text((addresses, plain.dumps(value)))


def _door_text(answer) -> dict:
    return {"status": "ok", "data": {"text/plain": repr(answer)}, "metadata": {}}


def _cases(values, from_tape=True):
    """Observations of square_grad on the hidden cases (x = v / 2): results v, made by a tape
    whose target was x * x."""
    return {"eager": False, "cases": [{"obs": {"result": np.float32(v), "from_tape": from_tape,
                                               "targets": [np.float32((v / 2) ** 2)]}}
                                      for v in values]}


def test_the_grader_half_imports_without_tensorflow():
    code = ("import sys; from autograder.checks import judge; judge.load(); "
            "import autograder.grading.preprocessors.verdict; "
            "print('tensorflow' in sys.modules, sorted(judge.EXERCISES)[:1])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.startswith("False"), out.stdout + out.stderr


def test_graded_cell_is_parsed_into_check_calls_with_cases_evaluated_here():
    visible, hidden = verdict.parse_graded_cell(SQUARE)
    assert (visible.check, visible.args, visible.cases, visible.hidden) == \
        ("check_square_grad", ("square_grad",), None, False)
    assert hidden.cases == [0.5, -4, 7, 10.25] and hidden.hidden
    [call] = verdict.parse_graded_cell(
        "checks.check_sum_squared_grad(sum_squared_grad, hidden=True, cases=[np.arange(6.0)"
        ".reshape(2, 3) / 4])")
    assert np.allclose(call.cases[0], np.arange(6.0).reshape(2, 3) / 4)


@pytest.mark.parametrize("source", [
    "assert add(1, 2) == 3",
    "checks.check_square_grad(square_grad)\nprint('done')",
    "checks.check_nothing(square_grad)",
    "checks.check_square_grad(*args)",
    "checks.check_square_grad(square_grad, cases=open('/etc/passwd').read())",
    "def f(:",
    "",
])
def test_a_cell_of_another_form_is_left_to_the_kernel(source):
    with pytest.raises(verdict.NotChecks):
        verdict.parse_graded_cell(source)


def test_the_request_carries_the_cases_and_no_reference():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    expression = verdict.request_arguments(hidden)
    assert expression.startswith("'check_square_grad', lambda: (square_grad, )")
    assert "10.25" in expression and "20.5" not in expression  # 2 * 10.25 is the grader's


def test_right_values_pass_and_wrong_ones_fail_without_showing_any_value():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    assert verdict.decide(hidden, _ok(_cases([1.0, -8.0, 14.0, 20.5])), PIN).passed
    found = verdict.decide(hidden, _ok(_cases([1.0, -8.0, 14.0, 20.0])), PIN)
    message = str(found.error)
    assert not found.passed and "hidden case 4" in message
    for value in ("20", "10.25", "20.5"):
        assert value not in message


def test_right_values_without_a_tape_fail_with_the_idea_named():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    found = verdict.decide(hidden, _ok(_cases([1.0, -8.0, 14.0, 20.5], from_tape=False)), PIN)
    assert found.error.mistake == "M21" and "no automatic differentiation" in str(found.error)


def test_a_finding_is_worded_by_the_grader_whatever_the_kernel_sends():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    answer = {"eager": True, "cases": [{"finding": {"mistake": "M01", "code": "\x1b[2J=evil",
                                                    "type": "Value\nError \x1b[31m"}}]}
    found = verdict.decide(hidden, _ok(answer), PIN)
    message = str(found.error)
    assert found.error.mistake == "M01" and "\x1b" not in message and "evil" not in message
    assert "tell the tape to watch the constant (read GradientTape.watch), inside the with block" \
        in " ".join(message.split())  # the catalogue's words
    assert "M19" in message  # eager left on: the grader's own note
    raised = verdict.decide(hidden, _ok({"cases": [{"finding": {"code": "raised",
                                                                "type": "Bad\nName"}}]}), PIN)
    assert f"raised {judge.HIDDEN_TYPE}." in " ".join(str(raised.error).split())


@pytest.mark.parametrize("reply", [
    None,
    {"status": "ok", "data": {"text/plain": "12"}},
    {"status": "ok", "data": {"text/plain": repr(plain.dumps({"cases": []}))}},  # no addresses
    _door_text((PIN["observe"], "[" * 100_000 + "]" * 100_000)),
    _door_text((PIN["observe"], "x" * (plain.MAX_BYTES + 1))),
    _door_text((PIN["observe"], json.dumps({"cases": "all passed"}))),
    _door_text((PIN["observe"], '{"t": "pickle", "data": "gASV"}')),
    _door_text((PIN["observe"], '{"cases": [1e999999]}')),
    _door_text((PIN["observe"], {"cases": []})),  # not text
    {"status": "ok", "data": {"text/plain": "((" + "(" * 50_000}},
    {"status": "ok", "data": {"text/plain": "((1, 2, 3, 4, 5, 6), __import__('os'))"}},
    {"status": "ok", "data": []},
])
def test_an_answer_of_any_other_form_fails_closed_and_is_flagged(reply):
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    found = verdict.decide(hidden, reply, PIN)
    assert not found.passed and found.review, found


@pytest.mark.parametrize("addresses,changed", [
    ((1, 2, 3, 4, 50, 6), "the entry function's code"),
    ((10, 2, 3, 4, 5, 6), "the door's function to the checks"),
    ((1, 2, 30, 4, 5, 60), "that function's default arguments; the entry function's default arguments"),
    ((1, 2, 3), "another form"),
])
def test_an_answer_through_an_altered_door_scores_nothing_and_names_what_changed(addresses, changed):
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    found = verdict.decide(hidden, _ok(_cases([1.0, -8.0, 14.0, 20.5]), addresses), PIN)
    assert not found.passed and found.error.code == "door_altered"
    assert changed in found.review[0] and "no answer read through it was graded" in found.review[0]
    assert "was not graded" in str(found.error) and "20.5" not in str(found.error)


def test_observations_of_the_wrong_form_fail_closed_and_are_flagged():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    for obs in ({"result": "twenty"}, {}, {"result": [1.0, 2.0], "from_tape": True}):
        found = verdict.decide(hidden, _ok({"cases": [{"obs": obs}] * 4}), PIN)
        assert not found.passed, obs
    found = verdict.decide(hidden, _ok({"cases": [{"obs": {"from_tape": True}}] * 4}), PIN)
    assert found.error.code == "none" or found.review


def test_fewer_answers_than_cases_fail():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    assert not verdict.decide(hidden, _ok(_cases([1.0])), PIN).passed


def test_timeouts_and_a_missing_entry_say_so():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    assert "timed out after 120 s" in str(verdict.decide(hidden, None, PIN, timed_out_s=120).error)
    found = verdict.decide(hidden, {"status": "error", "ename": "IndexError", "evalue": "x"}, PIN)
    assert "checks are not loaded" in " ".join(str(found.error).split()) and found.review


def test_outputs_are_the_graders_error_or_a_line_per_call():
    calls = verdict.parse_graded_cell(SQUARE)
    good = [verdict.decide(calls[0], _ok(_cases([6.0, -3.0, 4.0])), PIN)]
    assert [o.text for o in verdict.outputs(good)] == ["\u2714 square_grad: 3 cases passed\n"]
    bad = verdict.decide(calls[1], _ok(_cases([0.0] * 4)), PIN)
    [output] = verdict.outputs([bad])
    assert output.output_type == "error" and output.ename == "CheckFailed"


def test_plain_data_round_trips_arrays_bytes_and_objects():
    value = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": [b"Fizz", 1, None, True],
             "c": np.array([b"1", b"Fizz"], dtype=object), "n": np.float64("nan"),
             "o": object()}
    back = plain.roundtrip(value)
    assert back["a"].dtype == np.float32 and back["a"].shape == (2, 3)
    assert back["b"] == [b"Fizz", 1, None, True] and list(back["c"]) == [b"1", b"Fizz"]
    assert np.isnan(back["n"]) and back["o"] == plain.PlainObject("object")


@pytest.mark.parametrize("text", [
    '{"t": "array", "dtype": "object", "shape": [1], "data": [1]}',
    '{"t": "array", "dtype": "float32", "shape": [3], "data": [1, 2]}',
    '{"t": "array", "dtype": "float32", "shape": [2], "data": [[1], 2]}',
    '{"t": "dict", "items": {"\\u001b[2J": 1}}',
    '{"t": "object", "type": "a\\nb"}',
    '{"t": "bytes", "b64": "!!!"}',
    'NaN',
])
def test_plain_data_of_another_form_is_refused(text):
    with pytest.raises(plain.Malformed):
        plain.loads(text)


def test_every_exercise_says_the_idea_it_grades():
    for entry in judge.load().values():
        assert entry.idea and entry.cases, entry.name


@pytest.mark.parametrize("kind,shown", [
    ("ValueError", "ValueError"), ("InvalidArgumentError", "InvalidArgumentError"),
    ("4000", judge.OWN_CLASS), ("1025", judge.OWN_CLASS), ("V\u0430lueError", judge.OWN_CLASS),
    ("ValueError" * 1000, judge.OWN_CLASS), ("input_10_25", judge.OWN_CLASS), (None, judge.OWN_CLASS),
    (4000, judge.OWN_CLASS), (["ValueError"], judge.OWN_CLASS),
])
def test_an_exception_type_is_named_only_from_the_graders_list(kind, shown):
    visible, hidden = verdict.parse_graded_cell(SQUARE)
    answer = _ok({"cases": [{"finding": {"code": "raised", "type": kind}}]})
    assert f"raised {shown}." in " ".join(str(verdict.decide(visible, answer, PIN).error).split())
    assert judge.error_name(kind) == shown
    # On a hidden case no type is named: which known type was raised is the student's choice.
    assert f"raised {judge.HIDDEN_TYPE}." in " ".join(str(verdict.decide(hidden, answer, PIN).error).split())


def test_an_error_from_the_door_itself_scores_nothing_and_is_flagged():
    """The course's entry never raises: an error reply is the door's (altered, or gone)."""
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    found = verdict.decide(hidden, {"status": "error", "ename": "TypeError", "evalue": "x"}, PIN)
    assert not found.passed and found.review == [
        "check_square_grad: the kernel could not answer the grader (TypeError in its door)"]
