# based on: ada_full
# p04_drafts_half_fixed: the right numbers without the idea in five drafts: tf.where for the
# branch (M21), the naive float32 log(cosh(x)) (M33), a signature of any shape where a vector is
# asked (M74), an f-string in tf.print (M31), one module-level variable for every Accumulator
# (M32); every other answer cell is ada_full's.

# %% square_if_positive
@tf.function(autograph=False)
def square_if_positive(x):
    """x * x if x > 0, else 0.0: the same numbers, both sides computed."""
    return tf.where(x > 0, x * x, tf.zeros_like(x))

# %% log_cosh
@tf.function
def log_cosh(x):
    """log(cosh(x)) with TensorFlow ops: a gradient, but cosh overflows past |x| of 89."""
    return tf.math.log(tf.math.cosh(x))

# %% make_celsius_to_fahrenheit
def make_celsius_to_fahrenheit():
    """fahrenheit as a tf.function: one trace, but any shape is answered."""
    return tf.function(fahrenheit, input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])

# %% noisy_square
@tf.function
def noisy_square(x):
    """x * x, printing its input as an f-string."""
    tf.print(f"square of {x}", output_stream=sys.stdout)
    return x * x

# %% Accumulator
TOTAL_FOR_ALL = tf.Variable(0.0)


class Accumulator(tf.Module):
    """A running sum: the variable made once, outside the graph, and shared."""

    def __init__(self):
        super().__init__()
        self.total = TOTAL_FOR_ALL

    @tf.function
    def add(self, x):
        self.total.assign_add(x)
        return self.total.read_value()
