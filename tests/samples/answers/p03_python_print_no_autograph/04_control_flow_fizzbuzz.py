# based on: ada_full
# p03_python_print_no_autograph: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% classify
def make_classifier(rules, default):
    @tf.function(autograph=False)
    def classify(x):
        """The word of the first rule that holds."""
        for word, holds in rules:
            if holds(x):
                return word
        return default
    return classify

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
