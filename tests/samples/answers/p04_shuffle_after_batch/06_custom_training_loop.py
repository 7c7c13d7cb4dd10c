# based on: ada_full
# p04_shuffle_after_batch: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% make_pipeline
def make_pipeline(x, y, batch_size, training):
    ds = tf.data.Dataset.from_tensor_slices((x.astype(np.float32), y)).batch(batch_size)
    if training:
        ds = ds.shuffle(100)
    return ds.prefetch(tf.data.AUTOTUNE)
