# based on: ada_full
# p06_softmax_no_reset: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% build_model
def build_model():
    return tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])

# %% fit
def fit(model, optimizer, train_ds, val_ds, epochs):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    train_loss, val_loss = tf.keras.metrics.Mean(), tf.keras.metrics.Mean()
    train_acc = tf.keras.metrics.SparseCategoricalAccuracy()
    val_acc = tf.keras.metrics.SparseCategoricalAccuracy()
    train_step = make_train_step(model, optimizer, loss_fn, train_loss, train_acc)
    eval_step = make_eval_step(model, loss_fn, val_loss, val_acc)
    history = {"loss": [], "accuracy": [], "val_loss": [], "val_accuracy": []}
    for epoch in tqdm(range(epochs)):
        for x_batch, y_batch in train_ds:
            train_step(x_batch, y_batch)
        for x_batch, y_batch in val_ds:
            eval_step(x_batch, y_batch)
        history["loss"].append(float(train_loss.result()))
        history["accuracy"].append(float(train_acc.result()))
        history["val_loss"].append(float(val_loss.result()))
        history["val_accuracy"].append(float(val_acc.result()))
    return history
