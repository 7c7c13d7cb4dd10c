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


def _ok(value) -> dict:
    """A user_expressions result as a kernel sends it, holding ``value`` as plain data."""
    return {"status": "ok", "data": {"text/plain": repr(plain.dumps(value))}, "metadata": {}}


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
    expression = verdict.request_expression(hidden)
    assert expression.startswith(verdict.ENTRY) and "lambda: (square_grad, )" in expression
    assert "10.25" in expression and "20.5" not in expression  # 2 * 10.25 is the grader's


def test_right_values_pass_and_wrong_ones_fail_without_showing_any_value():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    assert verdict.decide(hidden, _ok(_cases([1.0, -8.0, 14.0, 20.5]))).passed
    found = verdict.decide(hidden, _ok(_cases([1.0, -8.0, 14.0, 20.0])))
    message = str(found.error)
    assert not found.passed and "hidden case 4" in message
    for value in ("20", "10.25", "20.5"):
        assert value not in message


def test_right_values_without_a_tape_fail_with_the_idea_named():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    found = verdict.decide(hidden, _ok(_cases([1.0, -8.0, 14.0, 20.5], from_tape=False)))
    assert found.error.mistake == "M21" and "no tape computed them" in str(found.error)


def test_a_finding_is_worded_by_the_grader_whatever_the_kernel_sends():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    answer = {"eager": True, "cases": [{"finding": {"mistake": "M01", "code": "\x1b[2J=evil",
                                                    "type": "Value\nError \x1b[31m"}}]}
    found = verdict.decide(hidden, _ok(answer))
    message = str(found.error)
    assert found.error.mistake == "M01" and "\x1b" not in message and "evil" not in message
    assert "tape.watch(x) inside the with block" in message  # the catalogue's words
    assert "M19" in message  # eager left on: the grader's own note
    raised = verdict.decide(hidden, _ok({"cases": [{"finding": {"code": "raised",
                                                                "type": "Bad\nName"}}]}))
    assert "raised an exception." in str(raised.error)


@pytest.mark.parametrize("reply", [
    None,
    {"status": "ok", "data": {"text/plain": "12"}},
    {"status": "ok", "data": {"text/plain": repr("[" * 100_000 + "]" * 100_000)}},
    {"status": "ok", "data": {"text/plain": repr("x" * (plain.MAX_BYTES + 1))}},
    {"status": "ok", "data": {"text/plain": repr(json.dumps({"cases": "all passed"}))}},
    {"status": "ok", "data": {"text/plain": repr('{"t": "pickle", "data": "gASV"}')}},
    {"status": "ok", "data": {"text/plain": repr('{"cases": [1e999999]}')}},
    {"status": "ok", "data": {"text/plain": "'" + "(" * 50_000 + "'"}},
    {"status": "ok", "data": []},
])
def test_an_answer_of_any_other_form_fails_closed_and_is_flagged(reply):
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    found = verdict.decide(hidden, reply)
    assert not found.passed and found.review, found


def test_observations_of_the_wrong_form_fail_closed_and_are_flagged():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    for obs in ({"result": "twenty"}, {}, {"result": [1.0, 2.0], "from_tape": True}):
        found = verdict.decide(hidden, _ok({"cases": [{"obs": obs}] * 4}))
        assert not found.passed, obs
    found = verdict.decide(hidden, _ok({"cases": [{"obs": {"from_tape": True}}] * 4}))
    assert found.error.code == "none" or found.review


def test_fewer_answers_than_cases_fail():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    assert not verdict.decide(hidden, _ok(_cases([1.0]))).passed


def test_timeouts_and_a_missing_entry_say_so():
    [_, hidden] = verdict.parse_graded_cell(SQUARE)
    assert "timed out after 120 s" in str(verdict.decide(hidden, None, timed_out_s=120).error)
    found = verdict.decide(hidden, {"status": "error", "ename": "IndexError", "evalue": "x"})
    assert "checks are not loaded" in " ".join(str(found.error).split()) and found.review


def test_outputs_are_the_graders_error_or_a_line_per_call():
    calls = verdict.parse_graded_cell(SQUARE)
    good = [verdict.decide(calls[0], _ok(_cases([6.0, -3.0, 4.0])))]
    assert [o.text for o in verdict.outputs(good)] == ["\u2714 square_grad: 3 cases passed\n"]
    bad = verdict.decide(calls[1], _ok(_cases([0.0] * 4)))
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
