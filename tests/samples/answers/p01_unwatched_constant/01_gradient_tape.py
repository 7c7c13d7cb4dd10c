# based on: ada_full
# p01_unwatched_constant: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% square_grad
predicted_float = 6.0
predicted_int = None

def square_grad(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        y = x * x
    return tape.gradient(y, x)

# %% sum_squared_grad
predicted_dz_dx = [[20.0, 20.0], [20.0, 20.0]]


def sum_squared_grad(x):
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x)
        z = y ** 2
    return tape.gradient(z, x)
