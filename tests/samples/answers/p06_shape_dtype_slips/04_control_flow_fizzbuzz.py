# based on: ada_full
# p06_shape_dtype_slips: the answers below replace ada_full's; every other answer cell is ada_full's.
# Both drafts handed in as they were: the rules table returning from its Python loop (M76),
# the history grown as a plain loop variable (M37).

# %% classify
def make_classifier(rules, default):
    @tf.function
    def classify(x):
        for word, holds in rules:  # the first rule that holds gives the word
            if holds(x):
                return word
        return default
    return classify

# %% tanh_loop
@tf.function
def tanh_loop(x):
    """Apply tanh to x until its sum is at most 1, printing x after each step."""
    history = x[tf.newaxis]
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
        tf.print(x, output_stream=sys.stdout)
        history = tf.concat([history, x[tf.newaxis]], axis=0)
    return history
