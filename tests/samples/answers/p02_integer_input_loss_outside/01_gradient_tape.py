# based on: ada_full
# p02_integer_input_loss_outside: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% square_grad
def square_grad(x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)

# %% sum_squared_grad
def sum_squared_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x)
    z = y ** 2
    return tape.gradient(z, x)
