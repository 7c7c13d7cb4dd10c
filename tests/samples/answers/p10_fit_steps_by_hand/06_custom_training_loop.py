# based on: ada_full
# p10_fit_steps_by_hand: the answers below replace ada_full's; every other answer cell is ada_full's.
# fit ignores the optimizer it is given: its own step moves the weights by hand (plain SGD) and
# bumps optimizer.iterations, so the count of steps looks right (M21: the optimizer's state,
# its momentum, never moves). The final model, trained by that slow loop (plain SGD at 0.01),
# stays far below the 0.90 accuracy line, with or without the demonstration cells run.

# %% fit
def fit(model, optimizer, train_ds, val_ds, epochs):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    train_loss, val_loss = tf.keras.metrics.Mean(), tf.keras.metrics.Mean()
    train_acc = tf.keras.metrics.SparseCategoricalAccuracy()
    val_acc = tf.keras.metrics.SparseCategoricalAccuracy()

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            variable.assign_sub(0.01 * grad)
        optimizer.iterations.assign_add(1)
        train_loss.update_state(loss)
        train_acc.update_state(y, logits)
        return loss

    eval_step = make_eval_step(model, loss_fn, val_loss, val_acc)
    history = {"loss": [], "accuracy": [], "val_loss": [], "val_accuracy": []}
    for _ in range(epochs):
        for metric in (train_loss, train_acc, val_loss, val_acc):
            metric.reset_state()
        for x_batch, y_batch in train_ds:
            train_step(x_batch, y_batch)
        for x_batch, y_batch in val_ds:
            eval_step(x_batch, y_batch)
        history["loss"].append(float(train_loss.result()))
        history["accuracy"].append(float(train_acc.result()))
        history["val_loss"].append(float(val_loss.result()))
        history["val_accuracy"].append(float(val_acc.result()))
    return history
