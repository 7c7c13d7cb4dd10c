# based on: solutions
# alt2_tf_math: correct answers written differently from the solution (a list and a tuple as
# predictions, an except-and-raise helper, tf.math ops, an eager tensor's NumPy value logged,
# tf.data's get_next, a tensor condition with tf.where, an input_signature on a step made once
# per descend, a StopGradient on the bootstrap term only, tf.function(jit_compile=True) applied
# to a function, a vectorised hinge loss, a GraphDef walk); full marks expected.

# %% predict_eager
predicted_prints_eager, predicted_prints_graph = (2, 1)

# %% run_eagerly
def run_eagerly(fn, *args):
    before = bool(tf.config.functions_run_eagerly())
    tf.config.run_functions_eagerly(True)
    try:
        result = fn(*args)
    except Exception:
        tf.config.run_functions_eagerly(before)
        raise
    tf.config.run_functions_eagerly(before)
    return result

# %% predict_buggy_add
predicted_int_call, predicted_float_call = 2.0, 11

# %% make_scaler
def make_scaler(initial):
    scale = tf.Variable(tf.reshape(initial, [-1]), dtype=tf.float32, shape=[None])  # a vector

    def set_scale(value):
        scale.assign(tf.reshape(tf.cast(value, tf.float32), [-1]))

    @tf.function
    def scaled(x):
        return tf.math.multiply(x, scale)

    return set_scale, scaled

# %% predict_log
predicted_log_length = int("1")

# %% Recorder
class Recorder(tf.Module):
    def __init__(self):
        super().__init__()
        self.log = []
        self._graph = tf.function(lambda x: tf.math.reduce_sum(tf.math.square(x)))

    def record(self, x):
        total = self._graph(x)
        self.log.append(total.numpy())
        return total

# %% predict_iterator
predicted_values = [1.0, 1.0, 1.0]

# %% make_next_value
def make_next_value(values):
    dataset = tf.data.Dataset.from_tensor_slices(values).map(lambda v: tf.cast(v, tf.float32))
    iterator = iter(dataset)

    @tf.function
    def next_value():
        return iterator.get_next()

    return next_value

# %% predict_counter
predicted_python_count, predicted_variable_count = [3, 5]

# %% WarmupSchedule
class WarmupSchedule(tf.Module):
    def __init__(self, base_lr, warmup_steps):
        super().__init__()
        self.base_lr = tf.constant(base_lr, tf.float32)
        self.warmup_steps = tf.constant(warmup_steps, tf.int32)
        self.step = tf.Variable(0)

    @tf.function
    def next_lr(self):
        self.step.assign_add(1)
        ramp = self.base_lr * tf.cast(self.step, tf.float32) / tf.cast(self.warmup_steps, tf.float32)
        return tf.where(self.step < self.warmup_steps, ramp, self.base_lr)

# %% predict_traces
predicted_traces = 2 + 2

# %% descend
def descend(w, grads, lrs):
    step = tf.function(lambda grad, lr: w.assign_sub(lr * grad),
                       input_signature=[tf.TensorSpec(None, tf.float32),
                                        tf.TensorSpec([], tf.float32)])
    for grad, lr in zip(grads, lrs):
        step(grad, lr)
    return w

# %% predict_gradients
predicted_stop_gradient, predicted_stop_recording, predicted_unused = 3.0, 9.0, None

# %% td_update
@tf.function
def td_update(w, s, r, s_next, done, gamma, lr):
    not_done = 1.0 - tf.cast(done, tf.float32)
    with tf.GradientTape() as tape:
        v = tf.tensordot(w, s, axes=1)
        v_next = tf.stop_gradient(tf.tensordot(w, s_next, axes=1))
        delta = r + gamma * not_done * v_next - v
        loss = tf.math.square(delta) / 2.0
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss

# %% predict_xla
predicted_compiles = [1 == 1, False, False]

# %% rms_normalize
def _normalized_and_rms(x):
    rms = tf.math.sqrt(tf.math.reduce_mean(tf.math.square(x)) + 1e-6)
    return tf.math.divide(x, rms), rms


_compiled = tf.function(_normalized_and_rms, jit_compile=True)


@tf.function
def rms_normalize(x):
    normalized, rms = _compiled(x)
    tf.print("rms =", rms, output_stream=sys.stdout)
    return normalized

# %% hinge_total
@tf.function
def hinge_total(scores):
    return tf.math.reduce_sum(tf.math.maximum(0.0, 1.0 - scores))

# %% count_ops
def count_ops(concrete):
    graph_def = concrete.graph.as_graph_def()
    return sum([len(graph_def.node)] + [len(f.node_def) for f in graph_def.library.function])
