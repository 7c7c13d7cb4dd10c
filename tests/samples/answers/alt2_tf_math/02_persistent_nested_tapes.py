# based on: solutions
# alt2_tf_math: correct answers written differently from the solution (tape.jacobian, tf.pow, a
# persistent outer tape, a dict of sources, watch in a loop, a prediction as a NumPy array);
# full marks expected.

# %% grads_from_one_tape
predicted_dy_dx = predicted_dz_dx = None  # the constant is never watched


def grads_from_one_tape(x):
    x = tf.convert_to_tensor(x, dtype=tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.pow(x, 2)
        z = tf.pow(y, 2)
    dz_dx = tape.jacobian(z, x)
    dy_dx = tape.jacobian(y, x)
    del tape
    return dz_dx, dy_dx

# %% second_derivative
def second_derivative(f, x):
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy_dx = inner.gradient(y, x)
    d2y_dx2 = outer.gradient(dy_dx, x)
    del outer
    return dy_dx, d2y_dx2

# %% product_grads
predicted_none = np.array([[0, 0], [0, 1], [1, 1], [1, 0]], dtype=bool)


def product_grads(a, b):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        for variable in (a, b):
            tape.watch(variable)
        y = a * b
    grads = tape.gradient(y, {"a": a, "b": b})
    return grads["a"], grads["b"]

# %% hessian
def hessian(f, x):
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        entries = tf.unstack(inner.gradient(y, x))
    hessian_rows = [outer.gradient(entry, x) for entry in entries]
    del outer
    return tf.stack(hessian_rows)

# %% hvp
predicted_hessian_mb, predicted_hvp_mb = 1000 * 1000 * 4 / 1e6, 1000 * 4 / 1e6
predicted_hvps_per_hessian = 1000


def hvp(f, x, v):
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(x)
            y = tf.math.multiply(f(x), 1.0)
        [g] = tape.gradient(y, [x])
    return tf.identity(acc.jvp(g))
