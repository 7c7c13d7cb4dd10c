# based on: solutions
# alt2_tf_math: correct answers written differently from the solution (the prediction as a
# tuple made a list, a flag for the first rule that holds, a hand-written tf.while_loop carrying a TensorArray,
# vectorized tf.where, NumPy on the bytes); full marks expected.

# %% predict_draft
predicted_runs = list((False, True, False))

# %% classify
def make_classifier(rules, default):
    @tf.function
    def classify(x):  # a rule sets the word only where no earlier rule held
        word, found = tf.constant(default), tf.constant(False)
        for rule_word, holds in rules:
            if tf.math.logical_and(tf.math.logical_not(found), holds(x)):
                word, found = tf.constant(rule_word), tf.constant(True)
        return word
    return classify

# %% tanh_loop
@tf.function
def tanh_loop(x):
    def keep_going(x, rows):
        return tf.reduce_sum(x) > 1

    def step(x, rows):
        x = tf.tanh(x)
        tf.print(x, output_stream=sys.stdout)
        return x, rows.write(rows.size(), x)

    rows = tf.TensorArray(tf.float32, size=1, dynamic_size=True).write(0, x)
    return tf.while_loop(keep_going, step, (x, rows))[1].stack()

# %% fizzbuzz
@tf.function
def fizzbuzz(n):
    i = tf.range(1, n + 1)
    numbers = tf.strings.as_string(i)
    return tf.where(i % 15 == 0, "FizzBuzz",
                    tf.where(i % 3 == 0, "Fizz", tf.where(i % 5 == 0, "Buzz", numbers)))

# %% count_word
def count_word(labels, word):
    return int(np.count_nonzero(labels.numpy() == word.encode("utf-8")))

# %% sum_even
@tf.function
def sum_even(items):
    def body(i, total):
        item = items[i]
        return i + 1, total + tf.where(item % 2 == 0, item, 0)

    _, total = tf.while_loop(lambda i, total: i < tf.size(items), body,
                             (tf.constant(0), tf.constant(0)))
    return total
