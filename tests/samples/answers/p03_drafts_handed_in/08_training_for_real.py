# based on: ada_full
# p03_drafts_handed_in: the answers below replace ada_full's; every other answer cell is
# ada_full's. The notebook's drafts handed in as fixes, unchanged but for their names: a loss
# averaged over each replica's own share, a checkpoint of the model alone, and a step that clips
# each gradient by its own norm and logs the clipped norm; and a factor of replicas predicted as
# 1.

# %% predict_replica_factor
predicted_factor = 1

# %% make_distributed_step
def make_distributed_step(strategy, model, optimizer, global_batch_size):
    @tf.function
    def step(dist_batch):
        def replica_step(batch):
            x, y = batch
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))  # as on one device
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        per_replica = strategy.run(replica_step, args=(dist_batch,))
        return strategy.reduce("SUM", per_replica, axis=None)
    return step

# %% make_checkpoint
def make_checkpoint(trainer):
    return tf.train.Checkpoint(model=trainer.model)

# %% make_clipped_step
def make_clipped_step(model, optimizer, clip_norm):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        grads = [tf.clip_by_norm(g, clip_norm) for g in grads]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss, tf.linalg.global_norm(grads)
    return step
