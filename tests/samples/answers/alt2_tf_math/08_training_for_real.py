# based on: solutions
# alt2_tf_math: correct answers written with other TensorFlow calls (the loss divided by the
# global batch after tf.reduce_mean of the share, times the share's own size read from its
# shape; a Checkpoint built empty and given its entries by attribute; the gradients clipped
# as one flat vector by tf.clip_by_norm and split back; the predictions written as a float,
# tuples and a list); full marks expected.

# %% predict_replica_factor
predicted_factor = 2e0

# %% make_distributed_step
def make_distributed_step(strategy, model, optimizer, global_batch_size):
    @tf.function
    def step(dist_batch):
        def replica_step(batch):
            x, y = batch
            share = tf.cast(tf.shape(x)[0], tf.float32)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y)) * share / global_batch_size
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return strategy.reduce("SUM", strategy.run(replica_step, args=(dist_batch,)), axis=None)
    return step

# %% make_checkpoint
def make_checkpoint(trainer):
    checkpoint = tf.train.Checkpoint()
    checkpoint.net = trainer.model
    checkpoint.optimizer = trainer.optimizer
    checkpoint.data = trainer.batches
    return checkpoint

# %% predict_export
(predicted_kept, predicted_third_shape_works) = (2, False)

# %% predict_clipping
predicted_global_keeps, predicted_per_tensor_keeps = [True, False]

# %% predict_draft_log
predicted_largest_logged = 5 * 2 ** 0.5

# %% make_clipped_step
def make_clipped_step(model, optimizer, clip_norm):
    def step(x, y):
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, variables)
        flat = tf.concat([tf.reshape(g, [-1]) for g in grads], axis=0)
        clipped = tf.split(tf.clip_by_norm(flat, clip_norm), [tf.size(v) for v in variables])
        optimizer.apply_gradients(
            (tf.reshape(c, v.shape), v) for c, v in zip(clipped, variables))
        return loss, tf.norm(flat)
    return tf.function(step)

# %% predict_underflow
predicted_zero_unscaled, predicted_zero_scaled = (True, False)
