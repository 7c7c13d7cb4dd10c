"""The checks of 06 (custom training loop) against right and known-wrong implementations."""
import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import training as checks
from autograder.checks.compare import CheckFailed
from tests.expect import fails


# ------------------------------------------------------------------ pipeline
def make_pipeline(x, y, batch_size, training, *, cast=True, shuffle_first=True, batch=True,
                  shuffle_eval=False, shuffle_train=True, drop_remainder=False, reshuffle=True,
                  prefetch=True):
    ds = tf.data.Dataset.from_tensor_slices((x.astype("float32") if cast else x, y))
    if (training and shuffle_train or shuffle_eval) and shuffle_first:
        ds = ds.shuffle(len(x), seed=1, reshuffle_each_iteration=reshuffle)
    if batch:
        ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    if training and not shuffle_first:
        ds = ds.shuffle(100, seed=1)
    return ds.prefetch(tf.data.AUTOTUNE) if prefetch else ds


def test_make_pipeline_accepts_shuffle_batch_prefetch(capsys):
    checks.check_make_pipeline(make_pipeline)
    checks.check_make_pipeline(make_pipeline, cases=[(64, 16, 3), (33, 10, 1)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("kwargs, says", [
    ({"cast": False}, "float32"),
    ({"shuffle_first": False}, "shuffle before batching"),
    ({"batch": False}, ".batch(batch_size)"),
    ({"shuffle_eval": True}, "only when training"),
    ({"shuffle_train": False}, "not shuffled"),
    ({"drop_remainder": True}, "drop_remainder"),
    ({"reshuffle": False}, "reshuffle_each_iteration"),
    ({"prefetch": False}, "prefetch"),
], ids=["float64_features", "shuffle_after_batch", "no_batch", "shuffled_eval", "no_shuffle",
        "drop_remainder", "same_order_every_epoch", "no_prefetch"])
def test_make_pipeline_rejects_common_slips(kwargs, says):
    fails(checks.check_make_pipeline, lambda *a: make_pipeline(*a, **kwargs), says=says)


def test_make_pipeline_rejects_features_and_labels_shuffled_apart():
    def apart(x, y, batch_size, training):
        xs = tf.data.Dataset.from_tensor_slices(x.astype("float32"))
        ys = tf.data.Dataset.from_tensor_slices(y)
        if training:
            xs, ys = xs.shuffle(len(x), seed=1), ys.shuffle(len(x), seed=2)
        return tf.data.Dataset.zip((xs, ys)).batch(batch_size).prefetch(1)
    fails(checks.check_make_pipeline, apart, says="labels no longer match")


# ------------------------------------------------------------------ model
def build_model(softmax=False, units=10):
    return tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(units, activation="softmax" if softmax else None),
    ])


def test_build_model_accepts_logits_model(capsys):
    checks.check_build_model(build_model)
    checks.check_build_model(build_model, cases=[1, 17], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_build_model_rejects_softmax_output():
    fails(checks.check_build_model, lambda: build_model(softmax=True), says="remove the softmax")


def test_build_model_rejects_wrong_number_of_classes():
    fails(checks.check_build_model, lambda: build_model(units=5), says="10 units")


def test_build_model_rejects_one_shared_model():
    shared = build_model()
    fails(checks.check_build_model, lambda: shared, says="fresh model")


# ------------------------------------------------------------------ train step
def make_train_step(model, optimizer, loss_fn, loss_metric, acc_metric):
    @tf.function
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


def test_make_train_step_accepts_tape_step(capsys):
    checks.check_make_train_step(make_train_step)
    checks.check_make_train_step(make_train_step, cases=[(3, 17, 0.1, 4)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_make_train_step_names_loss_outside_the_tape():
    def outside(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x)
            loss = loss_fn(y, logits)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return train_step
    fails(checks.check_make_train_step, outside, "M05", "inside")


def test_make_train_step_names_optimizer_created_inside():
    def inside(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def train_step(x, y):
            adam = tf.keras.optimizers.Adam()
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x))
            adam.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                     model.trainable_variables))
            return loss
        return train_step
    fails(checks.check_make_train_step, inside, "M07", "outside the tf.function")


def test_make_train_step_rejects_missing_apply_gradients():
    def no_update(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x)
                loss = loss_fn(y, logits)
            tape.gradient(loss, model.trainable_variables)
            loss_metric.update_state(loss)
            acc_metric.update_state(y, logits)
            return loss
        return train_step
    fails(checks.check_make_train_step, no_update, says="never update")


def test_make_train_step_rejects_missing_metric_updates():
    def no_metrics(model, optimizer, loss_fn, loss_metric, acc_metric):
        step = make_train_step(model, optimizer, loss_fn, tf.keras.metrics.Mean(),
                               tf.keras.metrics.SparseCategoricalAccuracy())
        return step
    fails(checks.check_make_train_step, no_metrics, says="loss_metric was never updated")


def test_make_train_step_rejects_accuracy_measured_after_the_update():
    def late(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x)
                loss = loss_fn(y, logits)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            loss_metric.update_state(loss)
            acc_metric.update_state(y, model(x))
            return loss
        return train_step
    fails(checks.check_make_train_step, late, says="before the update")


def test_make_train_step_rejects_eager_function():
    def eager(*args):
        return make_train_step(*args).python_function
    fails(checks.check_make_train_step, eager, says="@tf.function")


# ------------------------------------------------------------------ eval step
def make_eval_step(model, loss_fn, loss_metric, acc_metric):
    @tf.function
    def eval_step(x, y):
        logits = model(x, training=False)
        loss = loss_fn(y, logits)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return eval_step


def test_make_eval_step_accepts_metric_updates(capsys):
    checks.check_make_eval_step(make_eval_step)
    checks.check_make_eval_step(make_eval_step, cases=[(5, 13, 3)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_make_eval_step_rejects_missing_loss_metric():
    def forgets(model, loss_fn, loss_metric, acc_metric):
        return make_eval_step(model, loss_fn, tf.keras.metrics.Mean(), acc_metric)
    fails(checks.check_make_eval_step, forgets, says="loss_metric")


def test_make_eval_step_rejects_weight_changes():
    def trains(model, loss_fn, loss_metric, acc_metric):
        return make_train_step(model, tf.keras.optimizers.SGD(0.1), loss_fn, loss_metric,
                               acc_metric)
    fails(checks.check_make_eval_step, trains, says="changed the model's weights")


# ------------------------------------------------------------------ fit
def fit(model, optimizer, train_ds, val_ds, epochs, reset=True, per_batch=False):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    metrics = {name: (tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy())
               for name in ("train", "val")}
    train_step = make_train_step(model, optimizer, loss_fn, *metrics["train"])
    eval_step = make_eval_step(model, loss_fn, *metrics["val"])
    history = {"loss": [], "accuracy": [], "val_loss": [], "val_accuracy": []}
    for _ in range(epochs):
        if reset:
            for pair in metrics.values():
                for metric in pair:
                    metric.reset_state()
        for x, y in train_ds:
            train_step(x, y)
            if per_batch:
                history["loss"].append(float(metrics["train"][0].result()))
        for x, y in val_ds:
            eval_step(x, y)
        if not per_batch:
            history["loss"].append(float(metrics["train"][0].result()))
        history["accuracy"].append(float(metrics["train"][1].result()))
        history["val_loss"].append(float(metrics["val"][0].result()))
        history["val_accuracy"].append(float(metrics["val"][1].result()))
    return history


def test_fit_accepts_loop_with_reset_metrics(capsys):
    checks.check_fit(fit)
    assert "fit: 1 case passed" in capsys.readouterr().out


def test_fit_rejects_metrics_never_reset():
    fails(checks.check_fit, lambda *a: fit(*a, reset=False), says="reset_state")


def test_fit_rejects_one_loss_per_batch():
    fails(checks.check_fit, lambda *a: fit(*a, per_batch=True), says="one number per epoch")


def test_fit_rejects_loop_that_never_trains():
    def evaluates_only(model, optimizer, train_ds, val_ds, epochs):
        return fit(model, tf.keras.optimizers.SGD(0.0), train_ds, val_ds, epochs)
    fails(checks.check_fit, evaluates_only, says="did not change")


# ------------------------------------------------------------------ final model
def test_final_model_threshold_passes_trained_and_fails_untrained(capsys):
    from utils.data import load_digits_splits, make_dataset

    splits = load_digits_splits()
    model = build_model()
    untrained_fails = pytest.raises(CheckFailed, match=r"below the\s+required")
    with untrained_fails:
        checks.check_final_model(model, splits.x_test, splits.y_test, threshold=0.9)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(make_dataset(splits.x_train, splits.y_train, 32, shuffle=True), epochs=8, verbose=0,
              shuffle=False)
    checks.check_final_model(model, splits.x_test, splits.y_test, threshold=0.9)
    assert "final model: accuracy" in capsys.readouterr().out


def test_make_eval_step_rejects_missing_accuracy_update():
    def forgets(model, loss_fn, loss_metric, acc_metric):
        return make_eval_step(model, loss_fn, loss_metric,
                              tf.keras.metrics.SparseCategoricalAccuracy())
    fails(checks.check_make_eval_step, forgets, says="acc_metric was never updated")


def test_fit_rejects_training_loss_that_does_not_fall():
    def ascent(model, optimizer, train_ds, val_ds, epochs):
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        history = {"loss": [], "accuracy": [], "val_loss": [], "val_accuracy": []}
        val_loss, val_acc = tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy()
        eval_step = make_eval_step(model, loss_fn, val_loss, val_acc)
        for _ in range(epochs):
            losses = []
            for x, y in train_ds:
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x))
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip([-g for g in grads], model.trainable_variables))
                losses.append(float(loss))
            val_loss.reset_state()
            val_acc.reset_state()
            for x, y in val_ds:
                eval_step(x, y)
            history["loss"].append(float(np.mean(losses)))
            history["accuracy"].append(0.0)
            history["val_loss"].append(float(val_loss.result()))
            history["val_accuracy"].append(float(val_acc.result()))
        return history
    fails(checks.check_fit, ascent, says="did not fall")
