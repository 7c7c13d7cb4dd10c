# based on: ada_full
# p04_rebound_weights: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% sgd_step
@tf.function
def sgd_step(x, y, w1, w2, lr):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.reduce_sum((tf.nn.relu(x @ w1) @ w2 - y) ** 2, axis=1))
    grad_w1, grad_w2 = tape.gradient(loss, [w1, w2])
    w1 = w1 - lr * grad_w1
    w2 = w2 - lr * grad_w2
    return loss
