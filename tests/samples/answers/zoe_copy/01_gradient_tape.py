# based on: solutions
# zoe_copy: a planted copy of alt1_variables' answers, variables renamed, comments added and
# independent lines swapped; full marks expected, and answer similarity must rank the pair
# (alt1_variables, zoe_copy) first (tests/test_grading_samples.py).

# %% square_grad
# what the draft gives for 3.0, then for the integer 2
predicted_int = None
predicted_float = 6

def square_grad(x):
    # a Variable is watched by itself
    var = tf.Variable(float(x))
    with tf.GradientTape() as g:
        out = var * var
    return g.gradient(out, var)

# %% sum_squared_grad
predicted_dz_dx = [[20, 20], [20, 20]]


def sum_squared_grad(x):
    var = tf.Variable(x)
    with tf.GradientTape() as g:
        # sum first, then square
        result = tf.reduce_sum(var) ** 2
    return g.gradient(result, var)

# %% train_step
faulty_line = "    loss_value = loss_object(y, logits)  # runs after the with block"


def train_step(model, optimizer, loss_object, x, y):
    with tf.GradientTape() as g:
        preds = model(x, training=True)
        loss_val = loss_object(y_true=y, y_pred=preds)
    weights = model.trainable_weights
    # one step of the optimizer
    optimizer.apply_gradients(list(zip(g.gradient(loss_val, weights), weights)))
    return loss_val

# %% fit_line
def fit_line(x, y, lr, steps):
    bias = tf.Variable(0.0, dtype=tf.float32)
    slope = tf.Variable(0.0, dtype=tf.float32)
    history = []
    for _ in range(steps):
        with tf.GradientTape() as g:
            cost = tf.reduce_mean(tf.square(y - (slope * x + bias)))
        for param, grad in zip((slope, bias), g.gradient(cost, [slope, bias])):
            param.assign(param - lr * grad)
        history.append(cost.numpy().item())
    return slope, bias, history
