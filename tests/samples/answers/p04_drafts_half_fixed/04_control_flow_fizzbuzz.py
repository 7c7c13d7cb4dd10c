# based on: ada_full
# p04_drafts_half_fixed: three drafts fixed halfway: classify's rules loop with its return
# taken out of the loop but no word set before it (M36), FizzBuzz with its list made a TensorArray but str(i) kept (M56), sum_even still
# looping over range(items.shape[0]) with its total made a tensor (M57); every other answer
# cell is ada_full's.

# %% classify
def make_classifier(rules, default):
    @tf.function
    def classify(x):
        """The word of the first rule that holds."""
        for rule_word, holds in reversed(rules):  # the return taken out, no word before it
            if holds(x):
                word = rule_word
        return word
    return classify

# %% fizzbuzz
@tf.function
def fizzbuzz(n):
    """FizzBuzz of 1..n as a string tensor."""
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

# %% sum_even
@tf.function
def sum_even(items):
    """Sum of the even entries of items."""
    total = tf.constant(0)
    for i in range(items.shape[0]):
        if items[i] % 2 != 0:
            continue
        total += items[i]
    return total
