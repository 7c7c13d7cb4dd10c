# based on: ada_full
# p05_unwatched_loss_outside: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% graph_backward_tape
def graph_backward_tape(x, y, z):
    with tf.GradientTape() as tape:
        c = tf.reduce_sum(x * y + z)
    grad_x, grad_y, grad_z = tape.gradient(c, [x, y, z])
    return c, grad_x, grad_y, grad_z

# %% train_with_optimizer
def train_with_optimizer(optimizer, x, y, w1, w2, steps):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(x @ w1)
        loss = tf.reduce_mean(tf.reduce_sum((h @ w2 - y) ** 2, axis=1))
        grads = tape.gradient(loss, [w1, w2])
        optimizer.apply_gradients(zip(grads, [w1, w2]))
        losses.append(float(loss))
    return losses
