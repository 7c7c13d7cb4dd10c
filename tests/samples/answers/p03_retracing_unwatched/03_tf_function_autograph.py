# based on: ada_full
# p03_retracing_unwatched: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% log_cosh
@tf.function
def log_cosh(x):
    """log(cosh(x)), computed by NumPy: the value is right, the gradient is lost."""
    return tf.numpy_function(lambda v: np.log(np.cosh(v)), [x], tf.float32)

# %% predict_retraces
predicted_draft_traces = 2  # believes reduce_retracing stops retracing on Python floats

# %% make_celsius_to_fahrenheit
def make_celsius_to_fahrenheit():
    """fahrenheit as a tf.function."""
    return tf.function(fahrenheit, reduce_retracing=True)
