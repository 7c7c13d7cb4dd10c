# based on: ada_full
# p03_drafts_handed_in: the answers below replace ada_full's; every other answer cell is ada_full's.
# The notebook's drafts handed in as fixes, unchanged but for their names: a debugging helper
# that always turns the switch off, a setter that binds a new tf.Variable, .numpy() inside the
# graph, the next state held fixed instead of the TD target; and a count predicted as a float.

# %% run_eagerly
def run_eagerly(fn, *args):
    tf.config.run_functions_eagerly(True)
    try:
        return fn(*args)
    finally:
        tf.config.run_functions_eagerly(False)

# %% make_scaler
def make_scaler(initial):
    scale = tf.Variable(initial)

    def set_scale(value):
        nonlocal scale
        scale = tf.Variable(value)

    @tf.function
    def scaled(x):
        return x * scale

    return set_scale, scaled

# %% Recorder
class Recorder(tf.Module):
    def __init__(self):
        super().__init__()
        self.log = []

    @tf.function
    def record(self, x):
        y = tf.reduce_sum(x * x)
        self.log.append(y.numpy())
        return y

# %% predict_counter
predicted_python_count, predicted_variable_count = 1.0, 5

# %% td_update
@tf.function
def td_update(w, s, r, s_next, done, gamma, lr):
    with tf.GradientTape() as tape:
        if done:
            target = r
        else:
            target = r + gamma * tf.reduce_sum(w * tf.stop_gradient(s_next))
        delta = target - tf.reduce_sum(w * s)
        loss = 0.5 * delta ** 2
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss
