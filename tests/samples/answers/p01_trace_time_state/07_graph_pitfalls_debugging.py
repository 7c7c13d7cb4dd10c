# based on: ada_full
# p01_trace_time_state: the answers below replace ada_full's; every other answer cell is ada_full's.
# Python state read or changed while tracing: a free variable, a list appended in the graph, a
# Python iterator, a Python counter; and the predictions that go with believing otherwise.

# %% predict_log
predicted_log_length = 2  # one entry per call

# %% make_scaler
def make_scaler(initial):
    scale = initial

    def set_scale(value):
        nonlocal scale
        scale = value

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
        self.log.append(y)
        return y

# %% make_next_value
def make_next_value(values):
    iterator = iter(values)

    @tf.function
    def next_value():
        return tf.constant(next(iterator), tf.float32)

    return next_value

# %% predict_counter
predicted_python_count, predicted_variable_count = 5, 5

# %% WarmupSchedule
class WarmupSchedule(tf.Module):
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.step = 0

    @tf.function
    def next_lr(self):
        self.step += 1
        if self.step <= self.warmup_steps:
            return tf.constant(self.base_lr * self.step / self.warmup_steps)
        return tf.constant(self.base_lr)
