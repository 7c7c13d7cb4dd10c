# based on: ada_full
# p04_int_has_gradient: the answers below replace ada_full's; every other answer cell is ada_full's.
# square_grad is fixed (a float32 constant), but the prediction says the draft's integer input
# has a gradient (4.0): M02 in the prediction.

# %% square_grad
predicted_float = 6.0
predicted_int = 4.0


def square_grad(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)
