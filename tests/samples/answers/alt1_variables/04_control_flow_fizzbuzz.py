# based on: solutions
# alt1_variables: correct answers written differently from the solution (the prediction from
# comparisons, tf.case built from the rules table, the draft's concat kept with a shape invariant, a
# while loop with a dynamic TensorArray, TensorFlow comparison of strings); full marks expected.

# %% predict_draft
predicted_runs = [2.0 < 0.0, 2.0 > 0.0, 0.0 != 0.0]

# %% classify
def make_classifier(rules, default):
    @tf.function
    def classify(x):  # exclusive=False: the first predicate that holds wins
        pairs = [(holds(x), lambda word=word: tf.constant(word)) for word, holds in rules]
        return tf.case(pairs, default=lambda: tf.constant(default), exclusive=False)
    return classify

# %% tanh_loop
@tf.function
def tanh_loop(x):
    history = x[tf.newaxis]
    while tf.math.reduce_sum(x) > 1.0:
        tf.autograph.experimental.set_loop_options(
            shape_invariants=[(history, tf.TensorShape([None, None]))])
        x = tf.math.tanh(x)
        tf.print(x, output_stream=sys.stdout)
        history = tf.concat([history, x[tf.newaxis]], axis=0)
    return history

# %% fizzbuzz
@tf.function
def fizzbuzz(n):
    words = tf.TensorArray(tf.string, size=0, dynamic_size=True)
    i = tf.constant(1)
    while i <= n:
        if i % 3 == 0 and i % 5 == 0:
            word = tf.constant("FizzBuzz")
        elif i % 3 == 0:
            word = tf.constant("Fizz")
        elif i % 5 == 0:
            word = tf.constant("Buzz")
        else:
            word = tf.strings.as_string(i)
        words = words.write(i - 1, word)
        i += 1
    return words.stack()

# %% count_word
def count_word(labels, word):
    return int(tf.reduce_sum(tf.cast(tf.equal(labels, word), tf.int32)))

# %% sum_even
@tf.function
def sum_even(items):
    total = tf.constant(0, dtype=tf.int32)
    for item in items:
        if tf.math.floormod(item, 2) == 1:
            continue
        total = total + item
    return total
