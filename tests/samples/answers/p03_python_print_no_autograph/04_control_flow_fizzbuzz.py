# based on: ada_full
# p03_python_print_no_autograph: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% classify
@tf.function(autograph=False)
def classify(x):
    """The sign of x as a word."""
    if x > 0:
        return "positive"
    elif x < 0:
        return "negative"
    return "zero"

# %% tanh_loop
@tf.function
def tanh_loop(x):
    """Apply tanh to x until its sum is at most 1, printing x after each step."""
    history = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    history = history.write(0, x)
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
        print(x)
        history = history.write(history.size(), x)
    return history.stack()
