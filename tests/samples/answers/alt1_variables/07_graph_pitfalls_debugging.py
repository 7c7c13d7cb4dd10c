# based on: solutions
# alt1_variables: correct answers written differently from the solution (predictions on lines
# of their own, a context manager that restores the switch, a tf.Module holding the scale, a
# Python float logged outside the graph, a tf.Variable index into a constant, a tf.Variable
# learning rate, tape.stop_recording, XLA for the rms only, an else branch, a GraphDef walk);
# full marks expected.

# %% predict_eager
predicted_prints_eager = 2
predicted_prints_graph = 1

# %% run_eagerly
import contextlib


@contextlib.contextmanager
def _eagerly():
    was_on = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(was_on)


def run_eagerly(fn, *args):
    with _eagerly():
        result = fn(*args)
    return result

# %% predict_buggy_add
predicted_int_call = 2
predicted_float_call = 11.0

# %% make_scaler
class _Scaler(tf.Module):
    def __init__(self, initial):
        super().__init__()
        self.scale = tf.Variable(initial, dtype=tf.float32, shape=tf.TensorShape(None))

    def set_scale(self, value):
        self.scale.assign(value)

    @tf.function
    def scaled(self, x):
        return self.scale * x


def make_scaler(initial):
    scaler = _Scaler(initial)
    return scaler.set_scale, scaler.scaled

# %% predict_log
predicted_log_length = 1

# %% Recorder
@tf.function
def _sum_of_squares(x):
    return tf.reduce_sum(tf.square(x))


class Recorder(tf.Module):
    def __init__(self):
        super().__init__()
        self.log = []

    def record(self, x):
        result = _sum_of_squares(x)
        self.log.append(float(result))
        return result

# %% predict_iterator
predicted_values = [1, 1, 1]

# %% make_next_value
def make_next_value(values):
    data = tf.constant(values, dtype=tf.float32)
    position = tf.Variable(0, dtype=tf.int32)

    @tf.function
    def next_value():
        value = tf.gather(data, position)
        position.assign_add(1)
        return value

    return next_value

# %% predict_counter
predicted_python_count = 3
predicted_variable_count = 5

# %% WarmupSchedule
class WarmupSchedule(tf.Module):
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.step = tf.Variable(0, dtype=tf.int32, trainable=False)

    @tf.function
    def next_lr(self):
        k = self.step.assign_add(1)
        fraction = tf.minimum(tf.cast(k, tf.float32) / self.warmup_steps, 1.0)
        return self.base_lr * fraction

# %% predict_traces
predicted_traces = 4

# %% descend
@tf.function
def _descent_step(w, grad, lr):
    w.assign_sub(lr * grad)


def descend(w, grads, lrs):
    lr = tf.Variable(0.0)
    for grad, value in zip(grads, lrs):
        lr.assign(value)
        _descent_step(w, grad, lr)
    return w

# %% predict_gradients
predicted_stop_gradient = 3
predicted_stop_recording = 9
predicted_unused = None

# %% td_update
@tf.function
def td_update(w, s, r, s_next, done, gamma, lr):
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            bootstrap = tf.where(done, 0.0, gamma * tf.reduce_sum(w * s_next))
            target = r + bootstrap
        loss = 0.5 * tf.square(target - tf.reduce_sum(w * s))
    grad = tape.gradient(loss, w)
    w.assign_sub(lr * grad)
    return loss

# %% predict_xla
predicted_compiles = [True, False, False]

# %% rms_normalize
@tf.function(jit_compile=True)
def _root_mean_square(x):
    return tf.sqrt(tf.reduce_mean(x * x) + 1e-6)


@tf.function
def rms_normalize(x):
    rms = _root_mean_square(x)
    tf.print("root mean square:", rms)
    return x * tf.math.reciprocal(rms)

# %% hinge_total
@tf.function
def hinge_total(scores):
    total = tf.constant(0.0)
    for s in scores:
        if s < 1.0:
            loss = 1.0 - s
        else:
            loss = tf.constant(0.0)
        total += loss
    return total

# %% count_ops
def count_ops(concrete):
    graph_def = concrete.graph.as_graph_def()
    total = len(graph_def.node)
    for function in graph_def.library.function:
        total += len(function.node_def)
    return total
