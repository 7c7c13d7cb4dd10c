# based on: ada_full
# p02_moving_target: the answers below replace ada_full's; every other answer cell is ada_full's.
# The broken code handed in as it was given: the eager switch left on after a raise, a
# tf.function created inside the loop, a TD target the gradient flows into, tf.print under
# XLA, a variable set on one branch only, the top-level graph counted alone.

# %% run_eagerly
def run_eagerly(fn, *args):
    previous = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    result = fn(*args)
    tf.config.run_functions_eagerly(previous)
    return result

# %% predict_traces
predicted_traces = 5

# %% descend
def descend(w, grads, lrs):
    for grad, lr in zip(grads, lrs):
        @tf.function
        def sgd_step():
            w.assign_sub(lr * grad)
        sgd_step()
    return w

# %% td_update
@tf.function
def td_update(w, s, r, s_next, done, gamma, lr):
    with tf.GradientTape() as tape:
        if done:
            target = r
        else:
            target = r + gamma * tf.tensordot(w, s_next, 1)
        delta = target - tf.tensordot(w, s, 1)
        loss = 0.5 * delta ** 2
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss

# %% rms_normalize
@tf.function(jit_compile=True)
def rms_normalize(x):
    rms = tf.sqrt(tf.reduce_mean(tf.square(x)) + 1e-6)
    tf.print("rms:", rms)
    return x / rms

# %% hinge_total
@tf.function
def hinge_total(scores):
    total = 0
    for s in scores:
        if s < 1.0:
            loss = 1.0 - s
        total += loss
    return total

# %% count_ops
def count_ops(concrete):
    return len(concrete.graph.get_operations())
