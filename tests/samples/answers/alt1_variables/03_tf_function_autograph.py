# based on: solutions
# alt1_variables: correct answers written differently from the solution (the exception class
# itself, sums and separate lines for predictions, lambdas in tf.cond with a zero made from x,
# the numerically stable log-cosh, a decorator with a vector input_signature, assign); full
# marks expected.

# %% predict_if_error
predicted_if_error = tf.errors.OperatorNotAllowedInGraphError

# %% square_if_positive
@tf.function(autograph=False)
def square_if_positive(x):
    return tf.cond(x > 0, lambda: tf.square(x), lambda: tf.zeros_like(x))

# %% log_cosh
@tf.function
def log_cosh(x):
    a = tf.abs(x)
    return a + tf.math.log1p(tf.exp(-2.0 * a)) - tf.math.log(2.0)

# %% predict_retraces
predicted_draft_traces = 2 + 1 + 1  # two Python floats, a scalar tensor, a relaxed vector

# %% make_celsius_to_fahrenheit
def make_celsius_to_fahrenheit():
    @tf.function(input_signature=[tf.TensorSpec(shape=(None,), dtype=tf.float32)])
    def to_fahrenheit(c):
        return c * 1.8 + 32.0

    return to_fahrenheit

# %% predict_prints
predicted_python_prints = 2
predicted_tf_prints = 4

# %% noisy_square
@tf.function
def noisy_square(x):
    tf.print("x is", x, output_stream=sys.stdout)
    return tf.square(x)

# %% Accumulator
class Accumulator(tf.Module):
    def __init__(self):
        super().__init__()
        self.total = tf.Variable(0.0, dtype=tf.float32, trainable=False)

    @tf.function
    def add(self, x):
        self.total.assign(self.total + x)
        return tf.identity(self.total)
