# based on: solutions
# alt2_tf_math: correct answers written differently from the solution (np.multiply and
# np.full_like, a dict of sources, np.einsum, tf.identity snapshots and a while loop, tf.math
# ops, optimizer.apply in a tf.function, tf.where in the forward pass, a max-shifted
# log-sum-exp, 1 - 1 / (1 + e^x)); full marks expected.

# %% graph_backward_numpy
def graph_backward_numpy(x, y, z):
    b = np.add(np.multiply(x, y), z)
    return float(np.sum(b)), np.multiply(1.0, y), np.multiply(1.0, x), np.full_like(z, 1.0)

# %% graph_backward_tape
def graph_backward_tape(x, y, z):
    with tf.GradientTape() as tape:
        tape.watch([x, y, z])
        c = tf.reduce_sum(tf.add(tf.multiply(x, y), z))
    grads = tape.gradient(c, {"x": x, "y": y, "z": z})
    return c, grads["x"], grads["y"], grads["z"]

# %% two_layer_numpy
def two_layer_numpy(x, y, w1, w2):
    n = len(x)
    h_pre = np.einsum("nd,dh->nh", x, w1)
    h = np.where(h_pre > 0, h_pre, 0.0)
    diff = np.einsum("nh,hd->nd", h, w2) - y
    loss = np.einsum("nd,nd->", diff, diff) / n
    grad_y_pred = 2.0 * diff / n
    grad_w2 = np.einsum("nh,nd->hd", h, grad_y_pred)
    grad_h = np.where(h_pre > 0, np.einsum("nd,hd->nh", grad_y_pred, w2), 0.0)
    grad_w1 = np.einsum("nd,nh->dh", x, grad_h)
    return loss, grad_w1, grad_w2

# %% step_report
predicted_weights_change = False   # w1 = w1 - ... only rebinds a name
predicted_loss_drop = 0.0 * 5e7


def step_report(step, x, y, w1, w2, lr, calls):
    start = [tf.identity(w) for w in (w1, w2)]
    losses = []
    while len(losses) < calls:
        losses.append(step(x, y, w1, w2, lr).numpy().item())
    same = all(np.array_equal(s.numpy(), w.numpy()) for s, w in zip(start, (w1, w2)))
    return losses, not same

# %% sgd_step
@tf.function
def sgd_step(x, y, w1, w2, lr):
    with tf.GradientTape() as tape:
        y_pred = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
        loss = tf.math.reduce_mean(tf.math.reduce_sum(tf.math.squared_difference(y_pred, y), axis=1))
    grad_w1, grad_w2 = tape.gradient(loss, [w1, w2])
    w1.assign_sub(lr * grad_w1)
    w2.assign_sub(lr * grad_w2)
    return loss

# %% train_with_optimizer
def train_with_optimizer(optimizer, x, y, w1, w2, steps):
    weights = [w1, w2]

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.reduce_sum(tf.square(tf.nn.relu(x @ w1) @ w2 - y), axis=1))
        optimizer.apply(tape.gradient(loss, weights), weights)
        return loss

    losses = []
    while len(losses) < steps:
        losses.append(step().numpy().item())
    return losses

# %% cross_entropy
def cross_entropy(logits, labels):
    top = tf.reduce_max(logits, axis=1, keepdims=True)
    shifted = logits - tf.stop_gradient(top)
    lse = tf.math.log(tf.reduce_sum(tf.exp(shifted), axis=1))
    true = tf.reduce_sum(shifted * tf.one_hot(labels, tf.shape(logits)[1]), axis=1)
    return tf.reduce_mean(lse - true)

# %% log1pexp
@tf.custom_gradient
def log1pexp(x):
    y = tf.where(x > 0, x + tf.math.log1p(tf.exp(-x)), tf.math.log1p(tf.exp(x)))

    def backward(upstream):
        return upstream * (1.0 - 1.0 / (1.0 + tf.exp(x)))

    return y, backward
