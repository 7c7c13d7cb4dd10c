# based on: ada_full
# p11_replicas_by_hand: the answers below replace ada_full's; every other answer cell is
# ada_full's. Right numbers on this notebook's cells without the ideas: each replica's own mean
# divided by a 2 written by hand (right for two replicas with equal shares only), and a
# checkpoint of the model, the data and the optimizer's step count alone (the schedule's rate
# comes back, the momentum does not), a step that scales every gradient to the clip norm (right
# on an exploding batch, not on a small one); per-tensor clipping predicted to keep the
# direction and to log at most the clip norm, and a float16 gradient of 1e-9 predicted to survive
# without loss scaling.

# %% make_distributed_step
def make_distributed_step(strategy, model, optimizer, global_batch_size):
    @tf.function
    def step(dist_batch):
        def replica_step(batch):
            x, y = batch
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y)) / 2
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return strategy.reduce("SUM", strategy.run(replica_step, args=(dist_batch,)), axis=None)
    return step

# %% make_checkpoint
def make_checkpoint(trainer):
    return tf.train.Checkpoint(model=trainer.model, step=trainer.optimizer.iterations,
                               iterator=trainer.batches)

# %% predict_clipping
predicted_global_keeps, predicted_per_tensor_keeps = True, True

# %% predict_draft_log
predicted_largest_logged = 5.0

# %% make_clipped_step
def make_clipped_step(model, optimizer, clip_norm):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        norm = tf.linalg.global_norm(grads)
        grads = [g * clip_norm / norm for g in grads]  # "clipped" to clip_norm
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss, norm
    return step

# %% predict_underflow
predicted_zero_unscaled, predicted_zero_scaled = False, False
