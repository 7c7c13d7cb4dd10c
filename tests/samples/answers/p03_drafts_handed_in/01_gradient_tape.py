# based on: ada_full
# p03_drafts_handed_in: the answers below replace ada_full's; every other answer cell is ada_full's.
# The notebook's drafts of sum_squared_grad and fit_line handed in as the fixes, unchanged but
# for their names (sum_squared_grad's prediction is right): the sum taken with np.sum, outside
# TensorFlow (M14); new variables at every step (the loss never falls) and b updated
# with w's gradient.

# %% sum_squared_grad
predicted_dz_dx = [[20.0, 20.0], [20.0, 20.0]]


def sum_squared_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(x)
        z = y ** 2
    return tape.gradient(z, x)

# %% fit_line
def fit_line(x, y, lr, steps):
    losses = []
    for _ in range(steps):
        w = tf.Variable(0.0)
        b = tf.Variable(0.0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * dw)
        losses.append(float(loss))
    return w, b, losses
