# based on: ada_full
# p06_shape_dtype_slips: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% graph_backward_numpy
def graph_backward_numpy(x, y, z):
    c = np.sum(x * y + z)
    return c, y, x, 1.0

# %% two_layer_numpy
def two_layer_numpy(x, y, w1, w2):
    h_pre = x @ w1
    h = np.maximum(h_pre, 0)
    y_pred = h @ w2
    loss = np.mean(np.sum((y_pred - y) ** 2, axis=1))
    grad_y_pred = 2.0 * (y_pred - y)
    grad_w2 = h.T @ grad_y_pred
    grad_h = grad_y_pred @ w2.T
    grad_h[h_pre < 0] = 0
    grad_w1 = x.T @ grad_h
    return loss, grad_w1, grad_w2

# %% graph_backward_tape
def graph_backward_tape(x, y, z):
    with tf.GradientTape() as tape:
        tape.watch([x, y, z])
        a = x * y
        b = a + z
        c = np.sum(b)
    grad_x, grad_y, grad_z = tape.gradient(c, [x, y, z])
    return c, grad_x, grad_y, grad_z
