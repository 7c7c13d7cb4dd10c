# based on: ada_full
# p07_shared_optimizer_step: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% train_with_optimizer
@tf.function
def shared_step(optimizer, x, y, w1, w2):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.reduce_sum((tf.nn.relu(x @ w1) @ w2 - y) ** 2, axis=1))
    grads = tape.gradient(loss, [w1, w2])
    optimizer.apply_gradients(zip(grads, [w1, w2]))
    return loss

def train_with_optimizer(optimizer, x, y, w1, w2, steps):
    return [float(shared_step(optimizer, x, y, w1, w2)) for _ in range(steps)]
