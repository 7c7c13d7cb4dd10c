# based on: solutions
# alt1_variables: correct answers written differently from the solution (tf.Variable instead of
# watch, keyword arguments, assign instead of assign_sub; a prediction in integers, the faulty
# line copied with its indentation and a comment); full marks expected.

# %% square_grad
predicted_float = 6
predicted_int = None

def square_grad(x):
    v = tf.Variable(float(x))
    with tf.GradientTape() as tape:
        y = v * v
    return tape.gradient(y, v)

# %% sum_squared_grad
predicted_dz_dx = [[20, 20], [20, 20]]


def sum_squared_grad(x):
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        z = tf.reduce_sum(v) ** 2
    return tape.gradient(z, v)

# %% train_step
faulty_line = "    loss_value = loss_object(y, logits)  # runs after the with block"


def train_step(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss_value = loss_object(y_true=y, y_pred=predictions)
    variables = model.trainable_weights
    optimizer.apply_gradients(list(zip(tape.gradient(loss_value, variables), variables)))
    return loss_value

# %% fit_line
def fit_line(x, y, lr, steps):
    w = tf.Variable(0.0, dtype=tf.float32)
    b = tf.Variable(0.0, dtype=tf.float32)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - (w * x + b)))
        for variable, grad in zip((w, b), tape.gradient(loss, [w, b])):
            variable.assign(variable - lr * grad)
        losses.append(loss.numpy().item())
    return w, b, losses
