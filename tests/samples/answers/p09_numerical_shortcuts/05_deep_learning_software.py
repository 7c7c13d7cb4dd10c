# based on: ada_full
# p09_numerical_shortcuts: the answers below replace ada_full's; every other answer cell is ada_full's.
# Right numbers by the wrong means: finite differences where a backward pass by hand is asked
# (M54, twice), the tempting tf.where fix of the NaN loss (M51) and a custom gradient whose
# backward asks a tape for the built-in gradient (M52).

# %% graph_backward_numpy
def graph_backward_numpy(x, y, z):
    def c_of(x, y, z):
        return np.sum(x * y + z)

    eps = 1e-6
    grads = []
    for k in range(3):
        args = [x, y, z]
        grad = np.zeros_like(args[k])
        for index in np.ndindex(grad.shape):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[k][index] += eps
            minus[k][index] -= eps
            grad[index] = (c_of(*plus) - c_of(*minus)) / (2 * eps)
        grads.append(grad)
    return c_of(x, y, z), grads[0], grads[1], grads[2]

# %% two_layer_numpy
def two_layer_numpy(x, y, w1, w2):
    def loss_of(w1, w2):
        return np.mean(np.sum((np.maximum(x @ w1, 0) @ w2 - y) ** 2, axis=1))

    eps = 1e-6
    grads = []
    for k, w in enumerate((w1, w2)):
        grad = np.zeros_like(w)
        for index in np.ndindex(w.shape):
            up, down = [w1.copy(), w2.copy()], [w1.copy(), w2.copy()]
            up[k][index] += eps
            down[k][index] -= eps
            grad[index] = (loss_of(*up) - loss_of(*down)) / (2 * eps)
        grads.append(grad)
    return loss_of(w1, w2), grads[0], grads[1]

# %% cross_entropy
def cross_entropy(logits, labels):
    p = tf.gather(tf.nn.softmax(logits), labels, batch_dims=1)
    return tf.reduce_mean(tf.where(p > 0, -tf.math.log(p), 100.0))

# %% log1pexp
@tf.custom_gradient
def log1pexp(x):
    def grad_fn(upstream):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.softplus(x)
        return upstream * tape.gradient(y, x)

    return tf.nn.softplus(x), grad_fn
