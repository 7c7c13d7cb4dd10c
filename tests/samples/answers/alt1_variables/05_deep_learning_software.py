# based on: solutions
# alt1_variables: correct answers written differently from the solution (array methods, a ReLU
# mask product, tf.Variable copies of the inputs and of the weights, assign, an eager loop,
# tf.where, log_softmax, tf.math.sigmoid); full marks expected.

# %% graph_backward_numpy
def graph_backward_numpy(x, y, z):
    c = (x * y + z).sum()
    return c, y.copy(), x.copy(), np.ones(z.shape)

# %% graph_backward_tape
def graph_backward_tape(x, y, z):
    xv, yv, zv = tf.Variable(x), tf.Variable(y), tf.Variable(z)
    with tf.GradientTape() as tape:
        c = tf.reduce_sum(xv * yv + zv)
    grad_x, grad_y, grad_z = tape.gradient(c, [xv, yv, zv])
    return c, grad_x, grad_y, grad_z

# %% two_layer_numpy
def two_layer_numpy(x, y, w1, w2):
    h_pre = x @ w1
    h = np.maximum(h_pre, 0)
    error = h @ w2 - y
    loss = (error ** 2).sum(axis=1).mean()
    grad_y_pred = 2.0 * error / x.shape[0]
    grad_w2 = h.T @ grad_y_pred
    grad_w1 = x.T @ ((grad_y_pred @ w2.T) * (h_pre > 0))
    return loss, grad_w1, grad_w2

# %% step_report
predicted_loss_drop = 0          # the same loss at every call: nothing is assigned
predicted_weights_change = False


def step_report(step, x, y, w1, w2, lr, calls):
    before = [tf.Variable(w1), tf.Variable(w2)]   # new variables: copies of the values
    losses = []
    for _ in range(calls):
        losses.append(float(step(x, y, w1, w2, lr)))
    changed = any(bool(tf.reduce_any(a != b)) for a, b in zip(before, [w1, w2]))
    return losses, changed

# %% sgd_step
@tf.function
def sgd_step(x, y, w1, w2, lr):
    with tf.GradientTape() as tape:
        y_pred = tf.maximum(x @ w1, 0.0) @ w2
        loss = tf.reduce_mean(tf.reduce_sum(tf.square(y_pred - y), axis=1))
    for w, g in zip((w1, w2), tape.gradient(loss, [w1, w2])):
        w.assign(w - lr * g)
    return loss

# %% train_with_optimizer
def train_with_optimizer(optimizer, x, y, w1, w2, steps):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.reduce_sum(tf.square(tf.nn.relu(x @ w1) @ w2 - y), axis=1))
        grads = tape.gradient(loss, [w1, w2])
        optimizer.apply_gradients(zip(grads, [w1, w2]))
        losses.append(float(loss))
    return losses

# %% cross_entropy
def cross_entropy(logits, labels):
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    picked = tf.gather(log_probs, labels, batch_dims=1)
    return -tf.reduce_mean(picked)

# %% log1pexp
@tf.custom_gradient
def log1pexp(x):
    def grad(upstream):
        return upstream * tf.math.sigmoid(x)

    return tf.nn.softplus(x), grad
