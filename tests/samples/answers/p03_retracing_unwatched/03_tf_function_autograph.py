# based on: ada_full
# p03_retracing_unwatched: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% grad_through
def grad_through(f, x):
    """Derivative df/dx at x of a tf.function f."""
    with tf.GradientTape() as tape:
        y = f(x)
    return tape.gradient(y, x)

# %% make_celsius_to_fahrenheit
def fahrenheit(c):
    """Fahrenheit temperature of a Celsius one, c * 9 / 5 + 32 (c: float32 tensor, any shape)."""
    return c * 9.0 / 5.0 + 32.0


def make_celsius_to_fahrenheit():
    """fahrenheit as a tf.function."""
    return tf.function(fahrenheit, reduce_retracing=True)
