# based on: ada_full
# p01_dropped_write: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% fizzbuzz
@tf.function
def fizzbuzz(n):
    """FizzBuzz of 1..n as a string tensor."""
    ta = tf.TensorArray(tf.string, size=n)
    for i in tf.range(1, n + 1):
        if i % 15 == 0:
            word = tf.constant("FizzBuzz")
        elif i % 3 == 0:
            word = tf.constant("Fizz")
        elif i % 5 == 0:
            word = tf.constant("Buzz")
        else:
            word = tf.strings.as_string(i)
        ta.write(i - 1, word)
    return ta.stack()
