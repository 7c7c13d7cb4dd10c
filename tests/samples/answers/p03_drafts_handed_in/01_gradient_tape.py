# based on: ada_full
# p03_drafts_handed_in: the answers below replace ada_full's; every other answer cell is ada_full's.
# The notebook's draft of fit_line handed in as the fix, unchanged but for its name: new
# variables at every step (the loss never falls) and b updated with w's gradient.

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
