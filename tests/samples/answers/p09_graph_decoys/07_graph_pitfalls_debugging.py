# based on: ada_full
# p09_graph_decoys: the answers below replace ada_full's; every other answer cell is ada_full's.
# Right numbers reached beside the idea, and fixes that stop half-way: a tf.data iterator made
# inside the graph, updates applied by hand beside graph calls, a TD step written by hand beside
# an unused tape.gradient, the log deleted to please XLA, a total that starts as an int.

# %% make_next_value
def make_next_value(values):
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(values, tf.float32))

    @tf.function
    def next_value():
        return next(iter(dataset))

    return next_value

# %% descend
@tf.function
def _step(w, grad, lr):
    w.assign_sub(lr * grad)


def descend(w, grads, lrs):
    scratch = tf.Variable(tf.zeros_like(w))
    for grad, lr in zip(grads, lrs):
        _step(scratch, grad, tf.constant(lr))
        w.assign_sub(lr * grad)
    return w

# %% td_update
@tf.function
def td_update(w, s, r, s_next, done, gamma, lr):
    with tf.GradientTape() as tape:
        target = r + gamma * (1.0 - tf.cast(done, tf.float32)) * tf.reduce_sum(w * s_next)
        delta = target - tf.reduce_sum(w * s)
        loss = 0.5 * delta ** 2
    tape.gradient(loss, w)
    w.assign_add(lr * tf.stop_gradient(delta) * s)
    return loss

# %% rms_normalize
@tf.function(jit_compile=True)
def rms_normalize(x):
    return x / tf.sqrt(tf.reduce_mean(tf.square(x)) + 1e-6)

# %% hinge_total
@tf.function
def hinge_total(scores):
    total = 0
    for s in scores:
        loss = 0.0
        if s < 1.0:
            loss = 1.0 - s
        total += loss
    return total
