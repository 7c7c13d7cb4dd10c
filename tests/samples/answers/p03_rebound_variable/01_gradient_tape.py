# based on: ada_full
# p03_rebound_variable: the answers below replace ada_full's; every other answer cell is ada_full's.
# Its prediction of sum_squared_grad copies the example's numbers (x = ones) instead of working
# them out at x = [[1, 2], [3, 4]]; its train_step is broken_train_step handed in unfixed.

# %% sum_squared_grad
predicted_dz_dx = [[8.0, 8.0], [8.0, 8.0]]


def sum_squared_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x)
        z = y ** 2
    return tape.gradient(z, x)

# %% train_step
faulty_line = "logits = model(x)"


def train_step(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
    loss_value = loss_object(y, logits)
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss_value

# %% fit_line
def fit_line(x, y, lr, steps):
    w = tf.Variable(0.0)
    b = tf.Variable(0.0)
    losses = []
    for step in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        w = w - lr * dw
        b = b - lr * db
        losses.append(float(loss))
    return w, b, losses
