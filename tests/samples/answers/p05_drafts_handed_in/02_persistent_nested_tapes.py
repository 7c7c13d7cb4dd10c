# based on: ada_full
# p05_drafts_handed_in: the answers below replace ada_full's; every other answer cell is ada_full's.
# The four find-and-fix exercises handed in as the notebook's drafts, only renamed: a default tape
# asked twice (M04), the outer tape differentiating y again (M99), the Hessian's rows from
# entries of the gradient sliced after the outer block (M05), and H v from the whole Hessian
# (M45).

# %% grads_from_one_tape
predicted_dz_dx = 108.0  # the draft run with a persistent tape: the numbers, wrongly
predicted_dy_dx = 6.0


def grads_from_one_tape(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        y = x * x
        z = y * y
    dz_dx = tape.gradient(z, x)
    dy_dx = tape.gradient(y, x)
    return dz_dx, dy_dx

# %% second_derivative
def second_derivative(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        with outer.stop_recording():  # "the outer tape need not keep this"
            dy_dx = inner.gradient(y, x)
    d2y_dx2 = outer.gradient(y, x)
    return dy_dx, d2y_dx2

# %% hessian
def hessian(f, x):
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        grad = inner.gradient(y, x)
    rows = [outer.gradient(grad[i], x) for i in range(x.shape[0])]
    del outer
    return tf.stack(rows)

# %% hvp
predicted_hessian_mb = 4.0
predicted_hvp_mb = 0.004
predicted_hvps_per_hessian = 1000


def hvp(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    H = outer.jacobian(g, x)  # (n, n)
    return tf.linalg.matvec(H, v)
