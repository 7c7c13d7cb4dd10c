# based on: solutions
# alt2_tf_math: correct answers written differently from the solution (tf.convert_to_tensor and
# tf.cast, tf.math ops, tape.jacobian, optimizer.apply, a Keras SGD optimizer in fit_line);
# a prediction as a NumPy array, the faulty line without spaces; full marks expected.

# %% square_grad
predicted_float, predicted_int = 2 * 3.0, None

def square_grad(x):
    x = tf.cast(tf.convert_to_tensor(x), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.square(x)
    return tape.jacobian(y, x)

# %% sum_squared_grad
predicted_dz_dx = np.full((2, 2), 2.0 * (1.0 + 2.0 + 3.0 + 4.0))


def sum_squared_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = tf.math.square(tf.math.reduce_sum(x))
    return tape.gradient(z, x)

# %% train_step
faulty_line = 'loss_value=loss_object(y,logits)'


def train_step(model, optimizer, loss_object, x, y):
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        loss_value = tf.reduce_mean(loss_object(y, model(x)))
    optimizer.apply(tape.gradient(loss_value, variables), variables)
    return loss_value

# %% fit_line
def fit_line(x, y, lr, steps):
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    optimizer = tf.keras.optimizers.SGD(learning_rate=lr)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.math.reduce_mean(tf.math.squared_difference(w * x + b, y))
        optimizer.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        losses.append(float(loss))
    return w, b, losses
