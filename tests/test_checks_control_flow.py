"""The checks of 04 (control flow): correct implementations pass, known-wrong ones fail with the id of
the course catalogue (autograder/checks/mistakes.py) and a message that names the cause. Real
TensorFlow, graph mode."""
import sys

import tensorflow as tf

from autograder.checks import control_flow as checks
from tests.expect import fails_with


# ------------------------------------------------------------------ classify

def _classify(x):
    if x > 0:
        return "positive"
    elif x < 0:
        return "negative"
    else:
        return "zero"


def test_classify_accepts_plain_if_elif_else(capsys):
    checks.check_classify(tf.function(_classify), cases=[0.5, -0.25, 0.0, 100.0, -7.0], hidden=True)
    assert "5 cases passed" in capsys.readouterr().out


def test_classify_rejects_if_without_autograph():
    fails_with(checks.check_classify, tf.function(_classify, autograph=False), "M09",
               "OperatorNotAllowedInGraphError")


def test_classify_rejects_missing_zero_branch():
    fails_with(checks.check_classify, tf.function(_sign_two_way), None, "b'zero'")


def _sign_two_way(x):
    if x > 0:
        return "positive"
    return "negative"


def test_classify_rejects_tf_where_instead_of_if():
    fn = tf.function(lambda x: tf.where(x > 0, "positive", tf.where(x < 0, "negative", "zero")))
    fails_with(checks.check_classify, fn, None, "ag__.if_stmt")


def test_classify_rejects_undecorated_function():
    fails_with(checks.check_classify, _classify, None, "not a tf.function")


# ------------------------------------------------------------------ tanh_loop

@tf.function
def tanh_loop(x):
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
        tf.print(x, output_stream=sys.stdout)
    return x


@tf.function
def tanh_loop_python_print(x):
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
        print(x)
    return x


def test_tanh_loop_counts_one_tf_print_per_iteration(capfd):
    checks.check_tanh_loop(tanh_loop, cases=[[0.5, 0.2], [3.0], [1.0, 1.0, 1.0, 1.0]], hidden=True)
    assert capfd.readouterr().err == ""


def test_tanh_loop_rejects_python_print():
    fails_with(checks.check_tanh_loop, tanh_loop_python_print, "M08", "tf.print")


def test_tanh_loop_rejects_loop_that_stops_early():
    @tf.function
    def once(x):
        if tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
            tf.print(x)
        return x
    fails_with(checks.check_tanh_loop, once, None, "expected")


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
    fails_with(checks.check_fizzbuzz, fn, "M11", "ta = ta.write(i, s)")


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
    fn = tf.function(lambda items: tf.reduce_sum(tf.boolean_mask(items, items % 2 == 0)))
    fails_with(checks.check_sum_even, fn, None, "While")


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
