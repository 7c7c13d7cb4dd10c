# based on: ada_full
# p03_drafts_handed_in: the answers below replace ada_full's; every other answer cell is ada_full's.
# The notebook's drafts handed in as fixes, unchanged but for their names: a debugging helper
# that calls fn.python_function, a setter that binds a new tf.Variable, .numpy() inside the
# graph, a warm-up that takes Python's min() of the step, the next state held fixed instead of
# the TD target, a hinge loss looped over a Python range of the static length; and a count
# predicted as a float.

# %% run_eagerly
def run_eagerly(fn, *args):
    """Run one call of fn as plain Python, for print and pdb; the switch is not touched."""
    return fn.python_function(*args)

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

# %% WarmupSchedule
class WarmupSchedule(tf.Module):
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.step = tf.Variable(0)  # a tf.Variable, changed by assign_add in the graph

    @tf.function
    def next_lr(self):
        self.step.assign_add(1)
        k = min(int(self.step), self.warmup_steps)
        return tf.constant(self.base_lr * k / self.warmup_steps)

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

# %% hinge_total
@tf.function
def hinge_total(scores):
    total = 0.0
    for i in range(len(scores)):  # a Python loop: AutoGraph's rules do not apply
        if scores[i] < 1.0:
            total += 1.0 - scores[i]
    return total
