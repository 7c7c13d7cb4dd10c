# based on: solutions
# alt2_tf_math: correct answers written differently from the solution (named tf.cond arguments,
# forward-mode differentiation, tf.math ops, assign_add's return value); full marks expected.

# %% square_if_positive
@tf.function(autograph=False)
def square_if_positive(x):
    return tf.cond(pred=tf.math.greater(x, 0.0), true_fn=lambda: x * x,
                   false_fn=lambda: tf.identity(x))

# %% grad_through
def grad_through(f, x):
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=tf.ones_like(x)) as accumulator:
        y = f(x)
    return accumulator.jvp(y)

# %% make_celsius_to_fahrenheit
def fahrenheit(c):
    return tf.math.add(tf.math.multiply(c, 9.0 / 5.0), 32.0)


def make_celsius_to_fahrenheit():
    return tf.function(fahrenheit, input_signature=(tf.TensorSpec(shape=None, dtype=tf.float32),),
                       reduce_retracing=True)

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
