# based on: solutions
# alt1_variables: correct answers written differently from the solution (predictions worked
# out as arithmetic, tf.cast in the pipeline, the functional API, optimizer.apply, no progress
# bar, another seed and learning rate); full marks expected.

# %% predict_pipeline
predicted_dtype = "float64"   # from_tensor_slices keeps NumPy's default float dtype
predicted_same_groups = True  # a shuffle after batch moves whole batches

# %% make_pipeline
def make_pipeline(x, y, batch_size, training):
    dataset = tf.data.Dataset.from_tensor_slices((tf.cast(x, tf.float32), y))
    if training:
        dataset = dataset.shuffle(len(x), reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size)
    return dataset.prefetch(buffer_size=tf.data.AUTOTUNE)

# %% build_model
def build_model():
    inputs = tf.keras.Input(shape=(64,))
    hidden = tf.keras.layers.Dense(64, activation="relu")(inputs)
    logits = tf.keras.layers.Dense(10)(hidden)
    return tf.keras.Model(inputs=inputs, outputs=logits)

# %% make_train_step
def make_train_step(model, optimizer, loss_fn, loss_metric, acc_metric):
    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y_true=y, y_pred=logits)
        optimizer.apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
        loss_metric.update_state(loss)
        acc_metric.update_state(y_true=y, y_pred=logits)
        return loss

    return train_step

# %% predict_train_step
predicted_traces = 2 + 1      # the first call twice (Adam's variables), the last batch of 9 once
predicted_iterations = 3 * 40  # one step per batch, 40 batches an epoch

# %% make_eval_step
def make_eval_step(model, loss_fn, loss_metric, acc_metric):
    @tf.function
    def eval_step(x, y):
        logits = model(x)
        loss = loss_fn(y, logits)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss

    return eval_step

# %% fit
def fit(model, optimizer, train_ds, val_ds, epochs):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    metrics = {"loss": tf.keras.metrics.Mean(), "accuracy": tf.keras.metrics.SparseCategoricalAccuracy(),
               "val_loss": tf.keras.metrics.Mean(),
               "val_accuracy": tf.keras.metrics.SparseCategoricalAccuracy()}
    train_step = make_train_step(model, optimizer, loss_fn, metrics["loss"], metrics["accuracy"])
    eval_step = make_eval_step(model, loss_fn, metrics["val_loss"], metrics["val_accuracy"])
    history = {name: [] for name in metrics}
    for _ in range(epochs):
        for metric in metrics.values():
            metric.reset_state()
        for x_batch, y_batch in train_ds:
            train_step(x_batch, y_batch)
        for x_batch, y_batch in val_ds:
            eval_step(x_batch, y_batch)
        for name, metric in metrics.items():
            history[name].append(metric.result().numpy().item())
    return history

# %% final_model
def train_final_model(train_ds, val_ds):
    tf.keras.utils.set_random_seed(1)
    model = build_model()
    history = fit(model, tf.keras.optimizers.Adam(learning_rate=4e-3), train_ds, val_ds,
                  12 if fast_mode() else 30)
    return model, history
