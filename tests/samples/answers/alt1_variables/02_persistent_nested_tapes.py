# based on: solutions
# alt1_variables: correct answers written differently from the solution (tf.Variable instead of
# watch, tf.square, tuples, a prediction of tuples); full marks expected.

# %% grads_from_one_tape
predicted_dz_dx, predicted_dy_dx = None, None


def grads_from_one_tape(x):
    x = tf.Variable(x, dtype=tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.square(x)
        z = tf.square(y)
    dz_dx, dy_dx = tape.gradient(z, x), tape.gradient(y, x)
    del tape
    return dz_dx, dy_dx

# %% second_derivative
def second_derivative(f, x):
    v = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = f(v)
        dy_dx = inner.gradient(y, v)
    return dy_dx, outer.gradient(dy_dx, v)

# %% product_grads
predicted_none = [(False, False), (False, True), (True, True), (True, False)]


def product_grads(a, b):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([a, b])
        y = tf.multiply(a, b)
    dy_da, dy_db = tape.gradient(y, [a, b])
    return [dy_da, dy_db]

# %% hessian
def hessian(f, x):
    v = tf.Variable(x)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = f(v)
        grad = inner.gradient(y, v)
    return outer.jacobian(grad, v)

# %% hvp
predicted_hessian_mb = 4
predicted_hvp_mb = 4e-3
predicted_hvps_per_hessian = 1000


def hvp(f, x, v):
    accumulator = tf.autodiff.ForwardAccumulator(primals=x, tangents=v)
    with accumulator:
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = f(x)
        gradient = tape.jacobian(value, x)  # of a scalar: the gradient
    return accumulator.jvp(gradient)
