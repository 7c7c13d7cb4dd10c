# based on: ada_full
# p02_integer_input_loss_outside: the answers below replace ada_full's; every other answer cell is ada_full's.
# In train_step the fix is right, but faulty_line names the line where the None gradients show,
# not the loss computed after the block.

# %% square_grad
predicted_float = 6.0
predicted_int = 4.0

def square_grad(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)

# %% sum_squared_grad
predicted_dz_dx = [[20.0, 20.0], [20.0, 20.0]]


def sum_squared_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x)
    z = y ** 2
    return tape.gradient(z, x)

# %% train_step
faulty_line = "grads = tape.gradient(loss_value, model.trainable_variables)"


def train_step(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as tape:
        logits = model(x)
        loss_value = loss_object(y, logits)
    grads = tape.gradient(loss_value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss_value
