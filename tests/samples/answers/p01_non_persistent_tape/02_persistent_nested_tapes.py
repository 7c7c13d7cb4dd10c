# based on: ada_full
# p01_non_persistent_tape: the answers below replace ada_full's; every other answer cell is ada_full's.
# Its product_grads is right, but its prediction has a default tape watch a tf.constant.

# %% grads_from_one_tape
predicted_dz_dx = None
predicted_dy_dx = None


def grads_from_one_tape(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    dz_dx = tape.gradient(z, x)
    dy_dx = tape.gradient(y, x)
    return dz_dx, dy_dx

# %% second_derivative
def second_derivative(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
        dy_dx = tape.gradient(y, x)
    d2y_dx2 = tape.gradient(dy_dx, x)
    return dy_dx, d2y_dx2

# %% product_grads
predicted_none = [[False, False], [False, True], [True, True], [False, False]]


def product_grads(a, b):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        tape.watch(b)
        y = a * b
    return tape.gradient(y, [a, b])
