# based on: solutions
# alt2_tf_math: correct answers written differently from the solution (a dotted class name and
# the base class's name as predictions, named tf.cond arguments and a float32 constant, cosh in
# float64, tf.math ops, a signature tuple of a TensorShape, assign_add's return value); full
# marks expected.

# %% predict_if_error
predicted_if_error = "tf.errors.OperatorNotAllowedInGraphError"

# %% square_if_positive
@tf.function(autograph=False)
def square_if_positive(x):
    return tf.cond(pred=tf.math.greater(x, 0.0), true_fn=lambda: x * x,
                   false_fn=lambda: tf.constant(0.0))

# %% log_cosh
@tf.function
def log_cosh(x):
    # float64 keeps cosh(x) finite up to |x| of about 710: the errors of a loss stay far below
    return tf.cast(tf.math.log(tf.math.cosh(tf.cast(x, tf.float64))), tf.float32)

# %% predict_retraces
predicted_draft_traces = int("4")

# %% make_celsius_to_fahrenheit
def make_celsius_to_fahrenheit():
    return tf.function(lambda c: tf.math.add(tf.math.multiply(c, 9.0 / 5.0), 32.0),
                       input_signature=(tf.TensorSpec(shape=tf.TensorShape([None]),
                                                     dtype=tf.float32),),
                       reduce_retracing=True)

# %% predict_prints
predicted_python_prints, predicted_tf_prints = [2, 4]

# %% noisy_square
@tf.function
def noisy_square(x):
    y = tf.math.multiply(x, x)
    tf.print(x, "squared is", y, output_stream=sys.stdout)
    return y

# %% Accumulator
class Accumulator(tf.Module):
    def __init__(self):
        super().__init__()
        self.total = tf.Variable(tf.zeros([]))

    @tf.function
    def add(self, x):
        return self.total.assign_add(x)
