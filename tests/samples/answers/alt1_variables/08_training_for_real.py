# based on: solutions
# alt1_variables: correct answers written differently from the solution (predictions on lines
# of their own, the per-example losses summed and divided by the global batch by hand, the
# replicas' losses reduced with strategy.reduce on a per-replica sum, a checkpoint whose
# entries have other names and hold the model's variables and the optimizer, a clip factor
# min(1, clip / norm) written out); full marks expected.

# %% predict_replica_factor
predicted_factor = 2.0

# %% make_distributed_step
def make_distributed_step(strategy, model, optimizer, global_batch_size):
    scale = 1.0 / global_batch_size

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(model(x) - y)) * scale
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    @tf.function
    def step(dist_batch):
        losses = strategy.run(replica_step, args=dist_batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    return step

# %% make_checkpoint
def make_checkpoint(trainer):
    return tf.train.Checkpoint(weights=trainer.model.trainable_variables, opt=trainer.optimizer,
                               data=trainer.batches)

# %% predict_export
predicted_kept = 2
predicted_third_shape_works = False

# %% predict_clipping
predicted_global_keeps = True
predicted_per_tensor_keeps = False

# %% predict_draft_log
predicted_largest_logged = 7.07

# %% make_clipped_step
def make_clipped_step(model, optimizer, clip_norm):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        norm = tf.linalg.global_norm(grads)
        factor = tf.minimum(1.0, clip_norm / norm)
        optimizer.apply_gradients([(g * factor, v) for g, v in zip(grads, model.trainable_variables)])
        return loss, norm
    return step

# %% predict_underflow
predicted_zero_unscaled = True
predicted_zero_scaled = False
