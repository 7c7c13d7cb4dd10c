# based on: solutions
# alt1_variables: correct answers written differently from the solution (lambdas in tf.cond, a
# tf.Variable of its own, a decorator with input_signature, assign); full marks expected.

# %% square_if_positive
@tf.function(autograph=False)
def square_if_positive(x):
    return tf.cond(x > 0, lambda: tf.square(x), lambda: x)

# %% grad_through
def grad_through(f, x):
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = f(v)
    return tape.gradient(y, v)

# %% make_celsius_to_fahrenheit
def fahrenheit(c):
    return c * 1.8 + 32.0


def make_celsius_to_fahrenheit():
    @tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])
    def to_fahrenheit(c):
        return fahrenheit(c)

    return to_fahrenheit

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
