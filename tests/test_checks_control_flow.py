"""The checks of 04 (control flow): correct implementations pass, known-wrong ones fail with the id of
the course catalogue (autograder/checks/mistakes.py) and a message that names the cause. Real
TensorFlow, graph mode."""
import re
import sys

import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import control_flow as checks
from autograder.checks import judge, plain
from autograder.checks.compare import CheckFailed
from autograder.checks.judge.control_flow import tanh_reference
from autograder.checks.kernel_entry import Entry
from tests.expect import fails_with, flat


# ------------------------------------------------------------------ predict_draft

def test_predict_draft_accepts_the_behaviour_written_two_ways(capsys):
    checks.check_predict_draft([False, True, False])
    checks.check_predict_draft(list((0 > 1, 2 > 1, 0 > 0)))
    assert capsys.readouterr().out.count("1 case passed") == 2


def test_predict_draft_rejects_a_graph_that_takes_one_branch_as_python_does():
    # The misconception: the graph call with 2.0 takes the positive branch and works.
    fails_with(checks.check_predict_draft, [True, True, False], "M36", "traces both",
               "even classify_draft(tf.constant(2.0)) raises")


def test_predict_draft_rejects_an_eager_call_that_never_reaches_the_word():
    fails_with(checks.check_predict_draft, [False, True, True], None, "UnboundLocalError")


def test_predict_draft_rejects_a_prediction_measured_by_running_the_code():
    # The right values without the thinking: tensors the cell computed, not a prediction.
    measured = [tf.constant(False), tf.constant(True), tf.constant(False)]
    error = fails_with(checks.check_predict_draft, measured, "M71", "written in the prediction")
    assert error.code == "prediction_type"


def test_grading_predict_draft_hides_the_answer():
    _graded("check_predict_draft", [False, True, False], [None])
    with pytest.raises(CheckFailed) as info:
        _graded("check_predict_draft", [True, True, False], [None])
    message = flat(info.value)
    assert info.value.mistake == "M36" and "you predicted" not in message, message


# ------------------------------------------------------------------ classify
# check_classify grades make_classifier(rules, default). A bare number case is the notebook's
# sign table; most tests below hand in a classifier of the sign rules alone, as a factory that
# ignores its table (sign_only), and test one kind of graph code on those cases.

def sign_only(classify):
    """A make_classifier that returns ``classify`` whatever table it is given: the notebook's
    comparisons written out (right on the sign table only, M104 on any other)."""
    return lambda rules, default: classify

@tf.function
def classify_draft(x):
    if x > 0:
        word = "positive"
    elif x < 0:
        word = "negative"
    return word


def test_classify_rejects_the_draft_with_a_name_set_on_two_paths():
    error = fails_with(checks.check_classify, sign_only(classify_draft), "M36", "every branch",
                       "else:")
    assert error.code == "one_branch"


def test_classify_accepts_the_word_set_before_the_if(capsys):
    @tf.function
    def classify(x):
        word = "zero"
        if x > 0:
            word = "positive"
        elif x < 0:
            word = "negative"
        return word
    checks.check_classify(sign_only(classify), cases=[0.5, -0.25, 0.0], hidden=True)
    assert "3 cases passed" in capsys.readouterr().out


def _classify(x):
    if x > 0:
        return "positive"
    elif x < 0:
        return "negative"
    else:
        return "zero"


def test_classify_accepts_plain_if_elif_else(capsys):
    checks.check_classify(sign_only(tf.function(_classify)), cases=[0.5, -0.25, 0.0, 100.0, -7.0],
                          hidden=True)
    assert "5 cases passed" in capsys.readouterr().out


def test_classify_rejects_if_without_autograph():
    fails_with(checks.check_classify, sign_only(tf.function(_classify, autograph=False)), "M09",
               "OperatorNotAllowedInGraphError")


def test_classify_rejects_missing_zero_branch():
    fails_with(checks.check_classify, sign_only(tf.function(_sign_two_way)), None, "b'zero'")


def _sign_two_way(x):
    if x > 0:
        return "positive"
    return "negative"


def test_classify_rejects_tf_where_instead_of_if():
    # Issue 18: the right words without a branch the graph takes (M21): tf.where computes
    # every word and picks one.
    fn = tf.function(lambda x: tf.where(x > 0, "positive", tf.where(x < 0, "negative", "zero")))
    error = fails_with(checks.check_classify, sign_only(fn), "M21", "no If op", "tf.where")
    assert error.code == "no_cond"


def test_classify_rejects_an_if_on_a_python_value_around_tf_where():
    # to_code shows ag__.if_stmt, but the `if` tests a Python value: no branch in the graph.
    @tf.function
    def classify(x):
        if True:
            return tf.where(x > 0, "positive", tf.where(x < 0, "negative", "zero"))
    fails_with(checks.check_classify, sign_only(classify), "M21", "no If op",
               "let the condition be a comparison of the tensor itself")


def test_classify_rejects_undecorated_function():
    fails_with(checks.check_classify, sign_only(_classify), None, "not a tf.function")


# ------------------------------------------------------------------ tanh_loop
# tanh_loop returns the history of x, shape (steps + 1, n): the draft's growing loop variable
# fixed (a TensorArray, or set_loop_options), its Python print made a tf.print.

@tf.function
def tanh_loop(x):
    history = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    history = history.write(0, x)
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
        tf.print(x, output_stream=sys.stdout)
        history = history.write(history.size(), x)
    return history.stack()


@tf.function
def tanh_loop_draft(x):
    history = x[tf.newaxis]
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
        print(x)
        history = tf.concat([history, x[tf.newaxis]], axis=0)
    return history


@tf.function
def tanh_loop_python_print(x):  # the shape fixed, the print not
    history = x[tf.newaxis]
    while tf.reduce_sum(x) > 1:
        tf.autograph.experimental.set_loop_options(
            shape_invariants=[(history, tf.TensorShape([None, None]))])
        x = tf.tanh(x)
        print(x)
        history = tf.concat([history, x[tf.newaxis]], axis=0)
    return history


def test_tanh_loop_counts_one_tf_print_per_iteration(capfd):
    checks.check_tanh_loop(tanh_loop, cases=[[0.5, 0.2], [3.0], [1.0, 1.0, 1.0, 1.0]], hidden=True)
    assert capfd.readouterr().err == ""


def test_tanh_loop_accepts_the_draft_fixed_with_shape_invariants(capfd):
    @tf.function
    def invariants(x):
        history = tf.expand_dims(x, 0)
        while tf.reduce_sum(x) > 1:
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(history, tf.TensorShape([None, None]))])
            x = tf.tanh(x)
            tf.print(x, output_stream=sys.stdout)
            history = tf.concat([history, [x]], axis=0)
        return history
    checks.check_tanh_loop(invariants, cases=[[0.5, 0.2], [3.0], [2.0, 0.5]], hidden=True)
    assert "3 cases passed" in capfd.readouterr().out


def test_tanh_loop_accepts_a_hand_written_while_loop():
    @tf.function
    def tanh_loop_while(x):
        def step(x, rows):
            x = tf.tanh(x)
            tf.print(x, output_stream=sys.stdout)
            return x, rows.write(rows.size(), x)
        rows = tf.TensorArray(tf.float32, size=1, dynamic_size=True).write(0, x)
        return tf.while_loop(lambda x, rows: tf.reduce_sum(x) > 1, step, (x, rows))[1].stack()
    checks.check_tanh_loop(tanh_loop_while, cases=[[3.0], [2.0, 0.5]], hidden=True)


def test_tanh_loop_rejects_the_draft_with_a_growing_loop_variable():
    error = fails_with(checks.check_tanh_loop, tanh_loop_draft, "M37", "shape changes",
                       "tf.TensorArray", "set_loop_options")
    assert error.code == "loop_shape"


def test_tanh_loop_rejects_python_print():
    fails_with(checks.check_tanh_loop, tanh_loop_python_print, "M08", "tf.print")


def test_tanh_loop_rejects_the_last_x_instead_of_the_history():
    @tf.function
    def last_x(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
            tf.print(x, output_stream=sys.stdout)
        return x
    fails_with(checks.check_tanh_loop, last_x, None, "should have shape (6, 2)")


def test_tanh_loop_rejects_unrolled_python_loop_counted_by_hand():
    # Right for [1.0, 2.0] (5 iterations, worked out by hand), but no loop in the graph.
    @tf.function
    def by_hand(x):
        rows = [x]
        for _ in range(5):
            x = tf.tanh(x)
            tf.print(x, output_stream=sys.stdout)
            rows.append(x)
        return tf.stack(rows)
    error = fails_with(checks.check_tanh_loop, by_hand, None, "for the input",
                       "should have shape")
    assert "[2.0, 3.0]" in flat(error)  # the probe, shown in a visible check


BY_HAND = tanh_reference([1.0, 2.0])[0].astype(np.float32)  # the 6 rows, worked out before


def test_tanh_loop_rejects_hand_computed_constant_result():
    @tf.function
    def constant(x):
        y = x
        while tf.reduce_sum(y) > 1:
            y = tf.tanh(y)
            tf.print(y, output_stream=sys.stdout)
        return tf.constant(BY_HAND) + 0 * y
    fails_with(checks.check_tanh_loop, constant, "M21", "same value", cases=[[1.0, 2.0]])


def _numpy_history(x):
    rows = [x.numpy()]
    while rows[-1].sum() > 1:
        rows.append(np.tanh(rows[-1]))
        print(rows[-1])
    return np.stack(rows)


def test_tanh_loop_rejects_python_loop_in_a_py_function():
    @tf.function
    def py_loop(x):  # prints once per iteration, from Python
        return tf.reshape(tf.py_function(_numpy_history, [x], tf.float32), [-1, tf.size(x)])
    error = fails_with(checks.check_tanh_loop, py_loop, "M21", "no While op")
    assert "a condition on the tensor" in str(error)


def test_tanh_loop_rejects_loop_that_stops_early():
    @tf.function
    def once(x):
        history = x[tf.newaxis]
        if tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
            tf.print(x)
            history = tf.stack([history[0], x])
        return history
    fails_with(checks.check_tanh_loop, once, None, "should have shape")


# ------------------------------------------------------------------ fizzbuzz

def _fizzbuzz(n, keep_write=True):
    ta = tf.TensorArray(tf.string, size=n)
    for i in tf.range(1, n + 1):
        if i % 15 == 0:
            s = tf.constant("FizzBuzz")
        elif i % 3 == 0:
            s = tf.constant("Fizz")
        elif i % 5 == 0:
            s = tf.constant("Buzz")
        else:
            s = tf.strings.as_string(i)
        if keep_write:
            ta = ta.write(i - 1, s)
        else:
            ta.write(i - 1, s)  # the mistake: the new TensorArray is dropped
    return ta.stack()


def test_fizzbuzz_accepts_tensor_array_loop():
    fn = tf.function(_fizzbuzz)
    checks.check_fizzbuzz(fn, cases=[1, 7, 31], hidden=True)
    assert fn.experimental_get_tracing_count() == 1


def test_fizzbuzz_rejects_dropped_write_result():
    fn = tf.function(lambda n: _fizzbuzz(n, keep_write=False))
    fails_with(checks.check_fizzbuzz, fn, "M11", "keep what it returns")


def test_fizzbuzz_accepts_vectorised_tf_where_and_a_table_of_one_period():
    def vectorised(n):
        i = tf.range(1, n + 1)
        return tf.where(i % 15 == 0, "FizzBuzz", tf.where(
            i % 3 == 0, "Fizz", tf.where(i % 5 == 0, "Buzz", tf.strings.as_string(i))))

    period = tf.constant(["FizzBuzz", "", "", "Fizz", "", "Buzz", "Fizz", "", "", "Fizz",
                          "Buzz", "", "Fizz", "", ""])

    def cyclic(n):
        i = tf.range(1, n + 1)
        word = tf.gather(period, i % 15)
        return tf.where(word == "", tf.strings.as_string(i), word)

    for fn in (vectorised, cyclic):
        checks.check_fizzbuzz(tf.function(fn), cases=[1, 7, 31, 45], hidden=True)


PRECOMPUTED = checks.fizzbuzz_reference(100)


def test_fizzbuzz_rejects_words_written_in_advance():
    inside = tf.function(lambda n: tf.constant(PRECOMPUTED)[:n])
    fails_with(checks.check_fizzbuzz, inside, "M21", "written in advance", "tf.strings.as_string")
    table = tf.constant(PRECOMPUTED)
    captured = tf.function(lambda n: tf.gather(table, tf.range(n)))
    fails_with(checks.check_fizzbuzz, captured, "M21", "written in advance")


LONG_TEXT = " ".join(checks.fizzbuzz_reference(2000))


def test_fizzbuzz_rejects_words_written_in_advance_as_one_long_string():
    # One element, 9940 bytes: counted in characters, not elements.
    split = tf.function(lambda n: tf.strings.split(tf.constant(LONG_TEXT))[:n])
    error = fails_with(checks.check_fizzbuzz, split, "M21", "as text", "in bytes",
                       "tf.strings.as_string")
    assert error.code == "text"
    # The text in an op's attribute (a tf.strings.format template), not a constant.
    template = tf.function(lambda n: tf.strings.split(tf.strings.format(LONG_TEXT, []))[:n])
    assert fails_with(checks.check_fizzbuzz, template, "M21", "as text").code == "text"
    # Short enough for one period's bytes, but the numbers are written out in it.
    short = " ".join(checks.fizzbuzz_reference(16))
    few = tf.function(lambda n: tf.strings.split(tf.constant(short))[:n])
    assert fails_with(checks.check_fizzbuzz, few, "M21", "numbers written out").code == "text"


def test_fizzbuzz_written_text_counts_bytes_of_the_solution():
    fn = tf.function(_fizzbuzz)
    text = checks.written_text(fn, tf.TensorSpec([], tf.int32))
    assert text == {"text_bytes": 16, "text_numbers": 0}  # "FizzBuzz", "Fizz", "Buzz"


def test_fizzbuzz_rejects_words_computed_by_python():
    def python_words(n):
        return tf.constant(checks.fizzbuzz_reference(int(n)))

    fn = tf.function(lambda n: tf.reshape(tf.py_function(python_words, [n], tf.string), [n]))
    fails_with(checks.check_fizzbuzz, fn, "M21", "tf.py_function", "not the graph")


def test_fizzbuzz_rejects_swapped_words():
    fn = tf.function(lambda n: tf.strings.regex_replace(_fizzbuzz(n), "^Fizz$", "Buzz"))
    fails_with(checks.check_fizzbuzz, fn, None, "b'Fizz'")


# ------------------------------------------------------------------ count_word

def count_word(labels, word):
    return sum(1 for s in labels.numpy() if s.decode() == word)


def count_word_str_compare(labels, word):
    return sum(1 for s in labels.numpy() if s == word)


def test_count_word_accepts_decoded_comparison():
    checks.check_count_word(count_word, cases=[(checks.fizzbuzz_reference(30), "Buzz"),
                                               (["a", "b"], "c")], hidden=True)


def test_count_word_accepts_tensor_result():
    checks.check_count_word(lambda labels, word: tf.reduce_sum(tf.cast(labels == word, tf.int32)))


def test_count_word_rejects_a_count_worked_out_by_hand():
    fails_with(checks.check_count_word, lambda labels, word: 4, "M21", "same count",
               "does not follow the labels")


def test_count_word_rejects_substring_count():
    # str(...).count counts "Fizz" inside "FizzBuzz" too: a wrong count, not M21.
    fails_with(checks.check_count_word, lambda labels, word: str(labels.numpy()).count(word),
               None, "expected 4, got 5")


def test_count_word_accepts_other_decodings_and_byte_comparisons():
    spellings = (lambda labels, word: sum(1 for s in labels.numpy() if str(s, "utf-8") == word),
                 lambda labels, word: int(np.count_nonzero(labels.numpy() == word.encode())),
                 lambda labels, word: int(tf.reduce_sum(tf.cast(tf.equal(labels, word),
                                                                tf.int32))),
                 lambda labels, word: int(tf.math.count_nonzero(
                     tf.strings.regex_full_match(labels, re.escape(word)))))
    for fn in spellings:
        checks.check_count_word(fn, cases=[(checks.fizzbuzz_reference(30), "Buzz"),
                                           (["7", "11"], "7")], hidden=True)


def test_count_word_rejects_bytes_read_through_str_or_repr():
    # Right for ASCII words: str(b"Fizz") == "b'Fizz'", repr(b"Fizz")[2:-1] == "Fizz".
    through_str = lambda labels, word: sum(1 for s in labels.numpy()  # noqa: E731
                                           if str(s) == f"b'{word}'")
    through_repr = lambda labels, word: sum(1 for s in labels.numpy()  # noqa: E731
                                            if repr(s)[2:-1] == word)
    as_latin1 = lambda labels, word: sum(1 for s in labels.numpy()  # noqa: E731
                                         if s.decode("latin-1") == word)
    for fn in (through_str, through_repr, as_latin1):
        fails_with(checks.check_count_word, fn, "M35", "accent", "escapes", "decode")


def test_count_word_rejects_bytes_decoded_as_ascii():
    as_ascii = lambda labels, word: int(  # noqa: E731
        (labels.numpy().astype(str) == word).sum())
    error = fails_with(checks.check_count_word, as_ascii, "M35", "UnicodeDecodeError", "UTF-8")
    assert error.code == "not_utf8"


def test_grading_count_word_words_m35_without_the_word():
    cases = [[checks.fizzbuzz_reference(30), "Buzz"]]
    with pytest.raises(CheckFailed) as info:
        _graded("check_count_word", lambda labels, word: sum(
            1 for s in labels.numpy() if str(s) == f"b'{word}'"), cases)
    message = flat(info.value)
    assert info.value.mistake == "M35" and "Buzz" not in message and "got" not in message


def test_count_word_rejects_bytes_compared_with_str():
    fails_with(checks.check_count_word, count_word_str_compare, "M10", "b'Fizz'", "decode")


# ------------------------------------------------------------------ sum_even

@tf.function
def sum_even(items):
    total = tf.constant(0)
    for item in items:
        if item % 2 != 0:
            continue
        total += item
    return total


def test_sum_even_accepts_loop_with_continue():
    checks.check_sum_even(sum_even, cases=[[7, 8, -2, 5, 10], [1, 3, 5], []], hidden=True)


def test_sum_even_rejects_vectorised_sum_without_loop():
    # Issue 18: the right sums without the loop in the graph (M21; message as before).
    fn = tf.function(lambda items: tf.reduce_sum(tf.boolean_mask(items, items % 2 == 0)))
    fails_with(checks.check_sum_even, fn, "M21", "While", "loop over the tensor itself")


def test_sum_even_rejects_loop_around_a_hand_computed_sum():
    @tf.function
    def by_hand(items):
        for item in items:
            if item % 2 != 0:
                continue
        return tf.constant(6)
    fails_with(checks.check_sum_even, by_hand, "M21", "same value", cases=[[1, 2, 3, 4]])


def test_sum_even_accepts_hand_written_while_loop():
    @tf.function
    def sum_even_while(items):
        def body(i, total):
            item = items[i]
            return i + 1, total + tf.where(item % 2 == 0, item, 0)
        return tf.while_loop(lambda i, total: i < tf.size(items), body,
                             (tf.constant(0), tf.constant(0)))[1]
    checks.check_sum_even(sum_even_while, cases=[[7, 8, -2, 5, 10], [1, 3, 5], []], hidden=True)


def test_sum_even_rejects_sum_of_odd_items():
    @tf.function
    def sum_odd(items):
        total = tf.constant(0)
        for item in items:
            if item % 2 == 0:
                continue
            total += item
        return total
    fails_with(checks.check_sum_even, sum_odd, None, "expected")


def test_count_word_reports_unwritten_exercise():
    def blank(labels, word):
        raise NotImplementedError()

    fails_with(checks.check_count_word, blank, None, "not written yet")


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


def test_grading_fizzbuzz_passes_the_solution_and_hides_inputs_and_words():
    fn = tf.function(_fizzbuzz)
    reply = _graded("check_fizzbuzz", fn, [1, 7, 31, 45, 1000])
    assert fn.experimental_get_tracing_count() == 1
    assert reply["cases"][0]["obs"]["numeral_strings"] == 0
    for wrong, mistake in ((tf.function(lambda n: _fizzbuzz(n, keep_write=False)), "M11"),
                           (tf.function(lambda n: tf.constant(PRECOMPUTED)[:n]), "M21"),
                           (tf.function(lambda n: tf.strings.split(tf.constant(LONG_TEXT))[:n]),
                            "M21"),
                           (tf.function(lambda n: tf.strings.regex_replace(
                               _fizzbuzz(n), "^Fizz$", "Buzz")), None)):
        with pytest.raises(CheckFailed) as info:
            _graded("check_fizzbuzz", wrong, [31, 45])
        message = flat(info.value)
        assert info.value.mistake == mistake and "hidden case 1" in message, message
        for value in ("31", "45", "32", "Fizz'", "b'Buzz'", "entry 1", "number 3"):
            assert value not in message, message


def test_grading_tanh_loop_judges_line_counts_on_the_grader(capfd):
    reply = _graded("check_tanh_loop", tanh_loop, [[0.5, 0.2], [3.0], [1.0, 1.0, 1.0, 1.0]])
    assert reply["cases"][2]["obs"]["lines"][1] > 0  # counts, never the printed text
    with pytest.raises(CheckFailed) as info:
        _graded("check_tanh_loop", tanh_loop_python_print, [[2.0, 0.5]])
    message = flat(info.value)
    assert info.value.mistake == "M08" and "iterations but" not in message
    assert "2.0" not in message and "0.5" not in message
    with pytest.raises(CheckFailed) as info:
        _graded("check_tanh_loop", tanh_loop_draft, [[2.0, 0.5]])
    assert info.value.mistake == "M37" and "2.0" not in flat(info.value)
    assert capfd.readouterr().err == ""


def test_grading_classify_and_sum_even():
    _graded("check_classify", sign_only(tf.function(_classify)), [0.5, -0.25, 0.0, 1e6, -7.0])
    with pytest.raises(CheckFailed) as info:
        _graded("check_classify", sign_only(tf.function(_sign_two_way)), [0.5, 0.0])
    message = flat(info.value)
    assert "hidden case 2" in message and "zero" not in message and "negative" not in message
    with pytest.raises(CheckFailed) as info:
        _graded("check_classify", sign_only(classify_draft), [0.5])
    assert info.value.mistake == "M36" and "0.5" not in flat(info.value)
    _graded("check_sum_even", sum_even, [[7, 8, -2, 5, 10], [1, 3, 5], [], [0, 100, -100, 9]])
    with pytest.raises(CheckFailed) as info:
        _graded("check_sum_even", tf.function(
            lambda items: tf.reduce_sum(tf.boolean_mask(items, items % 2 == 0))), [[7, 8, -2]])
    assert info.value.mistake == "M21" and "6" not in str(info.value)


def test_grading_count_word_words_m10_without_the_word():
    cases = [[checks.fizzbuzz_reference(30), "Buzz"], [["7", "11"], "7"]]
    _graded("check_count_word", count_word, cases)
    with pytest.raises(CheckFailed) as info:
        _graded("check_count_word", count_word_str_compare, cases)
    message = flat(info.value)
    assert info.value.mistake == "M10" and "Buzz" not in message and "decode" in message


# ------------------------------------------------------------------ round 2: decoys beside the answer
# The red team's answers (rt_a, 04): the right values computed another way, with a loop or a
# branch of the graph beside them, a NumPy loop inside tf.py_function, or a lookup table.

@tf.function
def classify_where_beside_a_decoy_if(x):
    word = tf.where(x > 0, "positive", tf.where(x < 0, "negative", "zero"))
    flag = tf.constant(0)
    if x > 0:
        flag = flag + 1
    return word


def test_classify_rejects_tf_where_beside_a_decoy_if():
    error = fails_with(checks.check_classify, sign_only(classify_where_beside_a_decoy_if), "M21",
                       "If op", "not computed from it")
    assert error.code == "cond_beside"


@tf.function
def tanh_loop_numpy_beside_a_decoy_while(x):
    out = tf.py_function(_numpy_history, [x], tf.float32)
    out.set_shape([None, x.shape[0]])
    i = tf.constant(0)
    while i < 1:
        i += 1
    return out


def test_tanh_loop_rejects_a_numpy_loop_in_py_function_beside_a_decoy_while(capfd):
    error = fails_with(checks.check_tanh_loop, tanh_loop_numpy_beside_a_decoy_while, "M21",
                       "tf.py_function", "Python")
    assert error.code == "py_function"


@tf.function
def tanh_loop_unrolled_beside_a_decoy_while(x):
    # 60 iterations unrolled in Python (each one kept only while the sum is above 1, printing
    # then), a decoy graph loop beside them.
    rows, kept = [x], [tf.constant(True)]
    for _ in range(60):
        going = tf.reduce_sum(x) > 1
        x = tf.where(going, tf.tanh(x), x)
        if going:
            tf.print(x, output_stream=sys.stdout)
        rows.append(x)
        kept.append(going)
    i = tf.constant(0)
    while i < 1:
        i += 1
    return tf.boolean_mask(tf.stack(rows), tf.stack(kept))


def test_tanh_loop_rejects_a_decoy_while_beside_the_computed_x(capfd):
    error = fails_with(checks.check_tanh_loop, tanh_loop_unrolled_beside_a_decoy_while, "M21",
                       "While loop", "not computed from it")
    assert error.code == "loop_beside"


_KEYS = list(range(1, 5001))
_TABLE = tf.lookup.StaticHashTable(
    tf.lookup.KeyValueTensorInitializer(tf.constant(_KEYS, tf.int32),
                                        tf.constant(checks.fizzbuzz_reference(5000))),
    default_value="")


@tf.function
def fizzbuzz_lookup_table(n):
    return _TABLE.lookup(tf.range(1, n + 1))


def test_fizzbuzz_rejects_a_lookup_table_of_words():
    error = fails_with(checks.check_fizzbuzz, fizzbuzz_lookup_table, "M21", "written in advance",
                       "lookup table")
    assert error.code == "table"


@tf.function
def sum_even_vectorised_beside_a_decoy_for(items):
    total = tf.reduce_sum(tf.boolean_mask(items, items % 2 == 0))
    for _ in tf.range(0):
        pass
    return total


def test_sum_even_rejects_a_vectorised_sum_beside_a_decoy_for():
    error = fails_with(checks.check_sum_even, sum_even_vectorised_beside_a_decoy_for, "M21",
                       "While loop", "not computed from it")
    assert error.code == "loop_beside"


def test_grading_rejects_decoys_without_values_in_the_message():
    for check, fn, cases, code in (
            ("check_classify", sign_only(classify_where_beside_a_decoy_if), [4.5, -0.5], "cond_beside"),
            ("check_sum_even", sum_even_vectorised_beside_a_decoy_for, [[3, 8, 6]],
             "loop_beside"),
            ("check_fizzbuzz", fizzbuzz_lookup_table, [31], "table")):
        with pytest.raises(CheckFailed) as info:
            _graded(check, fn, cases)
        message = flat(info.value)
        assert info.value.mistake == "M21" and "hidden case 1" in message, message
        for value in ("4.5", "14", "31", "Select", "LookupTable"):
            assert value not in message, message


# ------------------------------------------------------------------ the drafts to fix (issue 27)
# Each draft the notebook shows above an answer cell, handed in unchanged, fails with its
# mistake id; an answer with the right numbers and without the idea fails; two correct answers
# written differently pass.

@tf.function
def classify_attempt(x):  # a third comparison, no else
    if x > 0:
        word = "positive"
    elif x < 0:
        word = "negative"
    elif x == 0:
        word = "zero"
    return word


def test_classify_rejects_the_attempt_with_a_third_comparison_and_no_else():
    error = fails_with(checks.check_classify, sign_only(classify_attempt), "M36", "every branch",
                       "no comparison holds")
    assert error.code == "one_branch"


def test_classify_accepts_the_attempt_with_its_last_elif_made_an_else(capsys):
    @tf.function
    def classify(x):
        if x > 0:
            word = "positive"
        elif x < 0:
            word = "negative"
        elif x == 0:
            word = "zero"
        else:  # NaN
            word = "zero"
        return word
    checks.check_classify(sign_only(classify), cases=[0.5, -0.25, 0.0], hidden=True)
    assert "3 cases passed" in capsys.readouterr().out


RULES = [("positive", lambda x: x > 0), ("negative", lambda x: x < 0)]


def make_classifier_draft(rules, default):  # the notebook's draft: a return inside the loop
    @tf.function
    def classify(x):
        for word, holds in rules:
            if holds(x):
                return word
        return default
    return classify


classify_rules_draft = make_classifier_draft(RULES, "zero")


def test_classify_rejects_the_rules_draft_returning_from_the_python_loop():
    error = fails_with(checks.check_classify, make_classifier_draft, "M76", "Python loop",
                       "unrolled", "return once, after the loop")
    assert error.code == "loop_exit"


def test_classify_rejects_the_rules_draft_with_a_break_instead_of_a_return():
    def make_classifier(rules, default):
        @tf.function
        def classify(x):
            word = default
            for rule_word, holds in rules:
                if holds(x):
                    word = rule_word
                    break
            return word
        return classify
    error = fails_with(checks.check_classify, make_classifier, "M76", "Python loop")
    assert error.code == "loop_exit"


def make_classifier_last_wins(rules, default):
    """The draft's return taken out, the loop left in the table's order: every rule that holds
    overwrites the word, so the last one wins where rules overlap."""
    @tf.function
    def classify(x):
        word = default
        for rule_word, holds in rules:
            if holds(x):
                word = rule_word
        return word
    return classify


def make_classifier_written_out(rules, default):
    """The right words on the notebook's table, with the table ignored: its two comparisons
    written out as an if/elif/else chain."""
    return tf.function(_classify)


def test_classify_rejects_the_loop_where_the_last_rule_that_holds_wins_m105():
    # Right on the sign table (its rules never overlap); the check's table of temperatures
    # (-4 is "freezing", "cold" and "warm") tells.
    error = fails_with(checks.check_classify, make_classifier_last_wins, "M105",
                       "last rule that holds", "not of the first", "b'freezing'")
    assert error.code == "last_rule_wins"


def test_classify_rejects_the_notebooks_comparisons_written_out_m104():
    error = fails_with(checks.check_classify, make_classifier_written_out, "M104",
                       "sign rules", "not of the rules it was given",
                       "b'negative'")
    assert error.code == "rules_ignored"


def test_grading_classify_names_m104_and_m105_without_the_tables_words():
    # -4 is "freezing" (first), "warm" (last that holds) and "negative" (the sign table's).
    table = [[["freezing", "<=", 0.0], ["cold", "<", 10.0], ["warm", "<", 25.0]], "hot", -4.0]
    for make, mistake in ((make_classifier_written_out, "M104"),
                          (make_classifier_last_wins, "M105")):
        with pytest.raises(CheckFailed) as info:
            _graded("check_classify", make, [0.5, table])
        message = flat(info.value)
        assert info.value.mistake == mistake and "hidden case 2" in message, message
        for secret in ("freezing", "warm", "hot", "-4", "'negative'"):
            assert secret not in message, message


def test_classify_accepts_a_rule_that_sets_the_word_only_where_no_earlier_one_held(capsys):
    def make_classifier(rules, default):
        @tf.function
        def classify(x):
            word, found = default, tf.constant(False)
            for rule_word, holds in rules:
                if tf.logical_and(tf.logical_not(found), holds(x)):
                    word, found = rule_word, tf.constant(True)
            return word
        return classify
    checks.check_classify(make_classifier)
    assert "6 cases passed" in capsys.readouterr().out


def test_classify_rejects_returns_on_some_paths_of_a_tensor_if_as_m36():
    # No loop: AutoGraph's "must also have a return statement" is a path without a word.
    @tf.function
    def classify(x):
        if x > 0:
            return "positive"
        elif x < 0:
            return "negative"
    error = fails_with(checks.check_classify, sign_only(classify), "M36", "returns on some of its paths")
    assert error.code == "one_return"


def make_classifier(rules, default):  # the notebook's solution
    @tf.function
    def classify(x):  # every rule a tf.cond, the first that holds applied last
        word = default
        for rule_word, holds in reversed(rules):
            if holds(x):
                word = rule_word
        return word
    return classify


def test_classify_accepts_the_rules_applied_in_reverse_without_a_return_in_the_loop(capsys):
    checks.check_classify(make_classifier)
    checks.check_classify(make_classifier, cases=[
        0.5, -0.25, 0.0, 1e6, -7.0, [[["high", ">=", 1.0], ["low", "<=", -1.0]], "middle", 1.0],
        [[["small", "<", 1.0], ["negative", "<", 0.0]], "large", -3.0]], hidden=True)
    out = capsys.readouterr().out
    assert "6 cases passed" in out and "7 cases passed" in out


def test_classify_accepts_tf_case_built_from_the_rules_and_tf_switch_case(capsys):
    def make_classifier_case(rules, default):
        @tf.function
        def classify(x):  # exclusive=False: the first predicate that holds wins
            pairs = [(holds(x), lambda word=word: tf.constant(word)) for word, holds in rules]
            return tf.case(pairs, default=lambda: tf.constant(default), exclusive=False)
        return classify

    @tf.function
    def classify_by_index(x):  # tf.switch_case: a Case op, one branch run (sign table only)
        index = tf.cast(tf.sign(x), tf.int32) + 1
        return tf.switch_case(index, [lambda: tf.constant("negative"),
                                      lambda: tf.constant("zero"),
                                      lambda: tf.constant("positive")])
    checks.check_classify(make_classifier_case)
    checks.check_classify(sign_only(classify_by_index), cases=[0.5, -0.25, 0.0, -7.0],
                          hidden=True)
    out = capsys.readouterr().out
    assert "6 cases passed" in out and "4 cases passed" in out


def test_classify_rejects_tf_where_or_tf_gather_inside_a_cond_that_decides_nothing():
    # Issue 28: an If op the word comes from, but its branches are the same, or its predicate
    # is not x's: tf.where (or tf.gather of the three words) does the picking (M21).
    @tf.function
    def identity_cond(x):
        word = tf.where(x > 0, "positive", tf.where(x < 0, "negative", "zero"))
        return tf.cond(x > 0, lambda: tf.identity(word), lambda: tf.identity(word))

    @tf.function
    def gather_in_cond(x):
        words = tf.constant(["negative", "zero", "positive"])
        index = tf.cast(tf.sign(x), tf.int32) + 1
        return tf.cond(tf.constant(True), lambda: tf.gather(words, index),
                       lambda: tf.constant("zero"))

    for fn in (identity_cond, gather_in_cond):
        error = fails_with(checks.check_classify, sign_only(fn), "M21", "tf.where or tf.gather")
        assert error.code == "picked_inside"


def test_classify_rejects_the_draft_run_in_python_from_the_graph():
    # The right words without the idea: the draft's loop run by Python on each call.
    @tf.function
    def classify(x):
        return tf.py_function(lambda v: classify_rules_draft.python_function(v), [x],
                              tf.string)
    fails_with(checks.check_classify, sign_only(classify), "M21")


def test_grading_classify_names_the_rules_draft_m76_without_values():
    with pytest.raises(CheckFailed) as info:
        _graded("check_classify", make_classifier_draft, [0.5, -2.5])
    message = flat(info.value)
    assert info.value.mistake == "M76" and "0.5" not in message and "Python loop" in message


@tf.function
def fizzbuzz_draft(n):  # the notebook's draft: a Python list and str(i)
    words = []
    for i in tf.range(1, n + 1):
        if i % 15 == 0:
            word = "FizzBuzz"
        elif i % 3 == 0:
            word = "Fizz"
        elif i % 5 == 0:
            word = "Buzz"
        else:
            word = str(i)
        words.append(word)
    return tf.stack(words)


@tf.function
def fizzbuzz_str(n):  # the list fixed, str(i) kept
    ta = tf.TensorArray(tf.string, size=n)
    for i in tf.range(1, n + 1):
        if i % 15 == 0:
            word = "FizzBuzz"
        elif i % 3 == 0:
            word = "Fizz"
        elif i % 5 == 0:
            word = "Buzz"
        else:
            word = str(i)
        ta = ta.write(i - 1, word)
    return ta.stack()


def test_fizzbuzz_rejects_the_draft_with_a_python_list():
    fails_with(checks.check_fizzbuzz, fizzbuzz_draft, "M15", "InaccessibleTensorError",
               "TensorArray")


def test_fizzbuzz_rejects_str_of_the_loop_tensor():
    fails_with(checks.check_fizzbuzz, fizzbuzz_str, "M56", "symbolic tensor", "as_string")


def test_grading_fizzbuzz_words_m56_without_values():
    with pytest.raises(CheckFailed) as info:
        _graded("check_fizzbuzz", fizzbuzz_str, [7])
    message = flat(info.value)
    assert info.value.mistake == "M56" and "Placeholder" not in message and "got" not in message


def test_fizzbuzz_accepts_the_draft_fixed_with_a_dynamic_tensor_array_and_format():
    @tf.function
    def fizzbuzz(n):
        words = tf.TensorArray(tf.string, size=0, dynamic_size=True)
        for i in tf.range(1, n + 1):
            if i % 15 == 0:
                word = "FizzBuzz"
            elif i % 3 == 0:
                word = "Fizz"
            elif i % 5 == 0:
                word = "Buzz"
            else:
                word = tf.strings.format("{}", i)
            words = words.write(words.size(), word)
        return words.stack()
    checks.check_fizzbuzz(fizzbuzz, cases=[1, 7, 31], hidden=True)


def count_word_draft(labels, word):  # the notebook's draft: Latin-1 never raises
    return sum(1 for label in labels.numpy() if label.decode("latin-1") == word)


def test_count_word_rejects_the_draft_decoding_as_latin1():
    # Right for FizzBuzz's words; no error on an accent, and the wrong count (M35).
    fails_with(checks.check_count_word, count_word_draft, "M35", "accent",
               "a decoding other than UTF-8 garbles")


def test_count_word_accepts_the_draft_fixed_two_ways():
    spellings = (lambda labels, word: int(np.sum(np.char.decode(labels.numpy().astype(bytes),
                                                                "utf-8") == word)),
                 lambda labels, word: int(np.sum(labels.numpy() == word.encode("utf-8"))))
    for fn in spellings:
        checks.check_count_word(fn, cases=[(checks.fizzbuzz_reference(30), "Buzz"),
                                           (["7", "11"], "7")], hidden=True)


@tf.function
def sum_even_draft(items):  # the notebook's draft: a Python range over the static length
    total = 0
    for i in range(items.shape[0]):
        if items[i] % 2 != 0:
            continue
        total += items[i]
    return total


def test_sum_even_rejects_the_draft_ranging_over_the_static_length():
    error = fails_with(checks.check_sum_even, sum_even_draft, "M57", "TypeError",
                       "iterate the tensor itself")
    assert error.code == "static_length"


def test_sum_even_rejects_range_of_len_unrolled_for_a_known_length():
    # Right sums, and a While op for unknown length (len becomes tf.shape there); unrolled for
    # the length of every call.
    @tf.function
    def by_len(items):
        total = tf.constant(0)
        for i in range(len(items)):
            if items[i] % 2 == 0:
                total += items[i]
        return total
    fails_with(checks.check_sum_even, by_len, "M57", "known length", "a tf.range over its dynamic size")


def test_grading_sum_even_words_m57():
    with pytest.raises(CheckFailed) as info:
        _graded("check_sum_even", sum_even_draft, [[1, 2, 3, 4]])
    assert info.value.mistake == "M57" and "unknown length" in flat(info.value)


def test_sum_even_accepts_the_draft_fixed_two_ways():
    @tf.function
    def over_items(items):
        total = 0
        for item in items:
            if item % 2 != 0:
                continue
            total += item
        return total

    @tf.function
    def over_tf_range(items):
        total = tf.constant(0)
        for i in tf.range(tf.size(items)):
            if items[i] % 2 == 0:
                total += items[i]
        return total
    for fn in (over_items, over_tf_range):
        checks.check_sum_even(fn, cases=[[7, 8, -2, 5, 10], [1, 3, 5], []], hidden=True)


# ------------------------------------------------------------ a loop that does nothing (#28)
# The value computed before the loop (vectorised, or a Python loop unrolled while tracing), then
# passed through a tf.while_loop that never changes it: the While op is on the value's path.

@tf.function
def sum_even_vectorised_through_an_idle_loop(items):
    total = tf.reduce_sum(tf.boolean_mask(items, items % 2 == 0))
    _, total = tf.while_loop(lambda i, t: i < 0, lambda i, t: (i + 1, t), [0, total])
    return total


@tf.function
def tanh_loop_unrolled_through_an_idle_loop(x):
    rows, done, steps = [x], tf.reduce_sum(x) <= 1, tf.constant(0)
    for _ in range(60):  # a Python loop: unrolled while tracing
        go = tf.logical_not(done)
        nxt = tf.tanh(rows[-1])
        tf.cond(go, lambda: tf.print(nxt, output_stream=sys.stdout), lambda: tf.no_op())
        rows.append(tf.where(go, nxt, rows[-1]))
        steps += tf.cast(go, tf.int32)
        done = tf.logical_or(done, tf.reduce_sum(nxt) <= 1)
    history = tf.stack(rows)[: steps + 1]
    _, history = tf.while_loop(lambda i, h: i < 0, lambda i, h: (i + 1, h), [0, history],
                               shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, None])])
    return history


@tf.function
def sum_even_with_foldl(items):
    return tf.foldl(lambda total, x: total + tf.where(x % 2 == 0, x, 0), items, initializer=0)


def test_a_loop_that_hands_the_value_on_unchanged_fails_with_the_idea_named(capfd):
    for check, fn in [(checks.check_sum_even, sum_even_vectorised_through_an_idle_loop),
                      (checks.check_tanh_loop, tanh_loop_unrolled_through_an_idle_loop)]:
        with pytest.raises(CheckFailed) as info:
            check(fn)
        assert (info.value.mistake, info.value.code) == ("M21", "loop_does_nothing"), str(info.value)
        assert "hands it on unchanged" in " ".join(str(info.value).split())
    checks.check_sum_even(sum_even_with_foldl)  # a loop whose body adds: passes
    assert "passed" in capfd.readouterr().out


# ------------------------------------------------------------------ the eager switch mid-check
# Student code that turns run_functions_eagerly on while the check runs would have every later
# call run as Python, out of sight of the graph the check reads (a red team's answer: the
# switch turned on in make_classifier, a decoy branch in the graph). Every call the harness
# makes fails then, with M19, and the switch is put back off.

def make_classifier_switch_on(rules, default):
    tf.config.run_functions_eagerly(True)

    @tf.function
    def classify(x):
        if tf.executing_eagerly():  # the check's calls, run as Python: the first rule wins
            for word, holds in rules:
                if bool(holds(x)):
                    return tf.constant(word)
            return tf.constant(default)
        return tf.cond(x > 0, lambda: tf.constant(default), lambda: tf.constant(default))
    return classify


def test_a_call_that_turns_the_eager_switch_on_fails_m19_and_leaves_it_off():
    error = fails_with(checks.check_classify, make_classifier_switch_on, "M19",
                       "turned tf.config.run_functions_eagerly on and left it on")
    assert error.code == "switch_turned_on"
    assert not tf.config.functions_run_eagerly()
    with pytest.raises(CheckFailed) as info:
        _graded("check_classify", make_classifier_switch_on, [0.5])
    assert info.value.mistake == "M19" and "runs as plain Python" in flat(info.value)
    assert not tf.config.functions_run_eagerly()


# ------------------------------------------------------------------ words picked, a branch beside
# A red team's answers to make_classifier: every word computed, one taken by an index or by
# cutting strings, and a cond that only passes the result on (M21); and two correct answers that
# reach the word through nested branches whose predicates travel as bool data (tf.case, a graph
# loop over the rules), which must pass.

def make_classifier_sliced(rules, default):
    words = tf.constant([w for w, _ in rules] + [default])

    @tf.function
    def classify(x):
        mask = tf.stack([tf.cast(h(x), tf.int32) for _, h in rules] + [tf.constant(1)])
        word = words[tf.argmax(mask, output_type=tf.int32)]  # a StridedSlice, no gather
        return tf.cond(x == x, lambda: word, lambda: word)
    return classify


def make_classifier_cut_and_joined(rules, default):
    @tf.function
    def classify(x):
        none_before, parts = tf.constant(1), []
        for w, h in list(rules) + [(default, lambda x: tf.constant(True))]:
            take = none_before * tf.cast(h(x), tf.int32)
            parts.append(tf.strings.substr(tf.constant(w), 0, take * len(w.encode())))
            none_before = none_before * (1 - tf.cast(h(x), tf.int32))
        word = tf.strings.reduce_join(tf.stack(parts))
        return tf.cond(x > -1e30, lambda: word, lambda: tf.constant(""))
    return classify


def make_classifier_graph_loop(rules, default):
    n = len(rules)

    @tf.function
    def classify(x):
        i = tf.constant(0)
        while i < n and not tf.switch_case(i, [lambda h=h: h(x) for _, h in rules]):
            i += 1
        return tf.switch_case(i, [lambda w=w: tf.constant(w) for w, _ in rules]
                              + [lambda: tf.constant(default)])
    return classify


def test_classify_rejects_words_picked_outside_the_branches_or_cut_from_strings():
    error = fails_with(checks.check_classify, make_classifier_sliced, "M21",
                       "outside the branches", "ArgMax")
    assert error.code == "picked_outside"
    error = fails_with(checks.check_classify, make_classifier_cut_and_joined, "M21",
                       "cut and joined by string ops")
    assert error.code == "picked_inside"
    with pytest.raises(CheckFailed) as info:
        _graded("check_classify", make_classifier_sliced, [0.5])
    assert info.value.code == "picked_outside" and "ArgMax" not in flat(info.value)


def test_classify_accepts_a_graph_loop_over_the_rules_with_switch_case(capsys):
    checks.check_classify(make_classifier_graph_loop)
    assert "6 cases passed" in capsys.readouterr().out
