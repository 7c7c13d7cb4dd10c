# based on: solutions
# alt2_tf_math: correct answers written differently from the solution (predictions as a dtype
# object and a tuple, zipped datasets, a Model subclass, tf.function with reduce_retracing, a
# loss computed by a function, a while loop over an iterator, RMSprop); full marks expected.

# %% predict_pipeline
predicted_dtype = tf.float64
predicted_same_groups = bool(1)

# %% make_pipeline
def make_pipeline(x, y, batch_size, training):
    features = tf.data.Dataset.from_tensor_slices(x.astype(np.float32))
    labels = tf.data.Dataset.from_tensor_slices(y)
    dataset = tf.data.Dataset.zip((features, labels))
    if training:
        dataset = dataset.shuffle(buffer_size=x.shape[0])
    return dataset.batch(batch_size, drop_remainder=False).prefetch(2)

# %% build_model
class DigitNet(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(64, activation="relu")
        self.logits = tf.keras.layers.Dense(10)

    def call(self, x, training=False):
        return self.logits(self.hidden(x))


def build_model():
    model = DigitNet()
    model.build((None, 64))
    return model

# %% make_train_step
def make_train_step(model, optimizer, loss_fn, loss_metric, acc_metric):
    @tf.function(reduce_retracing=True)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss

    return train_step

# %% predict_train_step
predicted_traces, predicted_iterations = 3, 120

# %% make_eval_step
def make_eval_step(model, loss_fn, loss_metric, acc_metric):
    @tf.function
    def eval_step(x, y):
        logits = model(x, training=False)
        loss = tf.reduce_mean(
            tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss

    return eval_step

# %% fit
def fit(model, optimizer, train_ds, val_ds, epochs):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    train_loss, train_acc = tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy()
    val_loss, val_acc = tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy()
    train_step = make_train_step(model, optimizer, loss_fn, train_loss, train_acc)
    eval_step = make_eval_step(model, loss_fn, val_loss, val_acc)
    losses, accuracies, val_losses, val_accuracies = [], [], [], []
    epoch = 0
    while epoch < epochs:
        for metric in (train_loss, train_acc, val_loss, val_acc):
            metric.reset_state()
        batches = iter(train_ds)
        for x_batch, y_batch in batches:
            train_step(x_batch, y_batch)
        for x_batch, y_batch in val_ds:
            eval_step(x_batch, y_batch)
        losses.append(float(train_loss.result()))
        accuracies.append(float(train_acc.result()))
        val_losses.append(float(val_loss.result()))
        val_accuracies.append(float(val_acc.result()))
        epoch += 1
    return {"loss": losses, "accuracy": accuracies, "val_loss": val_losses,
            "val_accuracy": val_accuracies}

# %% final_model
def train_final_model(train_ds, val_ds):
    tf.keras.utils.set_random_seed(seed=2)
    model = build_model()
    history = fit(model, tf.keras.optimizers.RMSprop(learning_rate=2e-3), train_ds, val_ds,
                  12 if fast_mode() else 30)
    return model, history
