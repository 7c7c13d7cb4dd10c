# based on: ada_full
# p09_eval_step_trains: the answers below replace ada_full's; every other answer cell is ada_full's.
# The evaluation step is the notebook's draft, kept: a copy of the train step that updates the
# weights by hand on the data it measures (M55). fit still passes (its own check does not look
# inside the evaluation step); the final model still reaches the threshold.

# %% make_eval_step
def make_eval_step(model, loss_fn, loss_metric, acc_metric):
    @tf.function
    def eval_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            variable.assign_sub(0.01 * grad)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss

    return eval_step
