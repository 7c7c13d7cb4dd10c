# based on: ada_full
# p01_variable_inside: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% predict_prints
predicted_python_prints, predicted_tf_prints = 4, 4

# %% noisy_square
@tf.function
def noisy_square(x):
    """x * x, printing "square of <x>" every time it is called."""
    print("square of", x)
    return x * x

# %% Accumulator
class Accumulator(tf.Module):
    """A running sum held in a tf.Variable."""

    def __init__(self):
        super().__init__()
        self.total = None

    @tf.function
    def add(self, x):
        """Add x to total; return the new total."""
        self.total = tf.Variable(0.0)
        self.total.assign_add(x)
        return self.total.read_value()
