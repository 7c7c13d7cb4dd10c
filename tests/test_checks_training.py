"""The checks of 06 (custom training loop) against right and known-wrong implementations, the
right numbers without the idea (M21), and the grading path (kernel half, plain data, judge)."""
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from autograder.checks import judge, plain
from autograder.checks import training as checks
from autograder.checks.compare import CheckFailed
from autograder.checks.kernel_entry import Entry
from tests.expect import fails, fails_with, flat


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


@pytest.mark.parametrize("kwargs, mistake, says", [
    ({"cast": False}, "M65", "float32"),
    ({"shuffle_first": False}, "M66", "after the batch"),
    ({"batch": False}, None, ".batch(batch_size)"),
    ({"shuffle_eval": True}, None, "only when training"),
    ({"shuffle_train": False}, "M29", "not shuffled"),
    ({"drop_remainder": True}, None, "drop_remainder"),
    ({"reshuffle": False}, "M29", "reshuffle_each_iteration"),
    ({"prefetch": False}, None, "prefetch"),
], ids=["float64_features", "shuffle_after_batch", "no_batch", "shuffled_eval", "no_shuffle",
        "drop_remainder", "same_order_every_epoch", "no_prefetch"])
def test_make_pipeline_rejects_common_slips(kwargs, mistake, says):
    fails(checks.check_make_pipeline, lambda *a: make_pipeline(*a, **kwargs), mistake, says=says)


def make_pipeline_permuted_once(x, y, batch_size, training):
    """Training examples permuted once by NumPy, no tf.data shuffle: one order every epoch."""
    if training:
        order = np.random.RandomState(0).permutation(len(x))
        x, y = x[order], y[order]
    ds = tf.data.Dataset.from_tensor_slices((x.astype("float32"), y))
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def make_pipeline_cached_after_shuffle(x, y, batch_size, training):
    ds = tf.data.Dataset.from_tensor_slices((x.astype("float32"), y))
    if training:
        ds = ds.shuffle(len(x)).cache()
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def test_make_pipeline_words_a_fixed_order_for_what_was_written():
    # No shuffle at all: add one (reshuffle_each_iteration means nothing to this student).
    message = fails(checks.check_make_pipeline,
                    lambda *a: make_pipeline(*a, shuffle_train=False), "M29", "no .shuffle stage")
    assert "shuffle the training pipeline (when training is True) over every example, before it " \
        "is batched" in flat(message)
    assert "reshuffle_each_iteration" not in message
    message = fails(checks.check_make_pipeline, make_pipeline_permuted_once, "M29",
                    "same order of examples in every epoch")
    assert "permuted once" in flat(message) and "reshuffle_each_iteration" not in message
    # A shuffle that keeps its order: say which argument, or which stage, does it.
    message = fails(checks.check_make_pipeline, lambda *a: make_pipeline(*a, reshuffle=False),
                    "M29", "reshuffle_each_iteration=False")
    assert "leave reshuffle_each_iteration out" in flat(message)
    assert "add .shuffle" not in flat(message)
    fails(checks.check_make_pipeline, make_pipeline_cached_after_shuffle, "M29",
          "cache() after the .shuffle")


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
    # the notebook's network (64 hidden units): the final model's check asks for its shapes
    return tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(units, activation="softmax" if softmax else None),
    ])


def test_build_model_accepts_logits_model(capsys):
    checks.check_build_model(build_model)
    checks.check_build_model(build_model, cases=[1, 17], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


def test_build_model_rejects_softmax_output():
    fails(checks.check_build_model, lambda: build_model(softmax=True), "M85",
          says="remove the softmax")


def test_build_model_rejects_wrong_number_of_classes():
    fails(checks.check_build_model, lambda: build_model(units=5), says="10 units")


def test_build_model_rejects_one_shared_model():
    shared = build_model()
    fails(checks.check_build_model, lambda: shared, "M32", says="fresh model")


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
    fails(checks.check_make_eval_step, trains, "M55", says="changed the model's weights")


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
    fails(checks.check_fit, lambda *a: fit(*a, reset=False), "M68", says="reset_state")


def test_fit_rejects_one_loss_per_batch():
    fails(checks.check_fit, lambda *a: fit(*a, per_batch=True), says="one number per epoch")


def test_fit_rejects_loop_that_never_trains():
    def evaluates_only(model, optimizer, train_ds, val_ds, epochs):
        return fit(model, tf.keras.optimizers.SGD(0.0), train_ds, val_ds, epochs)
    fails(checks.check_fit, evaluates_only, says="did not change")


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


# ------------------------------------------------------------------ the right numbers without the idea (M21)
def make_pipeline_in_numpy(x, y, batch_size, training):
    """The right batches, shuffled and batched by NumPy inside a Python generator: no tf.data
    shuffle or batch stage."""
    x, y = x.astype("float32"), y.astype("int64")

    def batches():
        order = np.random.permutation(len(x)) if training else np.arange(len(x))
        for start in range(0, len(x), batch_size):
            rows = order[start:start + batch_size]
            yield x[rows], y[rows]

    spec = (tf.TensorSpec((None, 64), tf.float32), tf.TensorSpec((None,), tf.int64))
    return tf.data.Dataset.from_generator(batches, output_signature=spec).prefetch(1)


def test_make_pipeline_rejects_batches_made_outside_tf_data():
    fails(checks.check_make_pipeline, make_pipeline_in_numpy, "M21", says="tf.data did not make them")


def test_build_model_rejects_a_compiled_model():
    def compiled():
        model = build_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        return model
    fails(checks.check_build_model, compiled, "M21", says="custom training loop")


def make_train_step_by_hand(model, optimizer, loss_fn, loss_metric, acc_metric):
    """The right SGD numbers, but the weights are changed by hand: the optimizer never steps."""
    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            variable.assign_sub(optimizer.learning_rate * grad)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return train_step


def test_make_train_step_rejects_weights_updated_by_hand():
    fails(checks.check_make_train_step, make_train_step_by_hand, "M21",
          says="the optimizer it was given did not take the steps")


def test_make_train_step_rejects_gradients_without_a_tape():
    def symbolic(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def train_step(x, y):
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
            grads = tf.gradients(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            loss_metric.update_state(loss)
            acc_metric.update_state(y, logits)
            return loss
        return train_step
    fails(checks.check_make_train_step, symbolic, "M21", says="no GradientTape computed the gradients")


def test_make_train_step_accepts_optimizer_apply_and_trainable_weights(capsys):
    def apply(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = loss_fn(y_true=y, y_pred=logits)
            optimizer.apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
            loss_metric.update_state(loss)
            acc_metric.update_state(y, logits)
            return loss
        return train_step
    checks.check_make_train_step(apply)
    assert "make_train_step: 1 case passed" in capsys.readouterr().out


def test_make_eval_step_rejects_gradients_in_evaluation():
    def with_tape(model, loss_fn, loss_metric, acc_metric):
        @tf.function
        def eval_step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=False)
                loss = loss_fn(y, logits)
            tape.gradient(loss, model.trainable_variables)
            loss_metric.update_state(loss)
            acc_metric.update_state(y, logits)
            return loss
        return eval_step
    fails(checks.check_make_eval_step, with_tape, "M55", says="an evaluation step only measures")


def fit_with_keras(model, optimizer, train_ds, val_ds, epochs):
    """The right history, made by Keras' compile() and fit() instead of the custom loop."""
    model.compile(optimizer=optimizer,
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=0).history


def test_fit_rejects_keras_fit():
    fails(checks.check_fit, fit_with_keras, "M21", says="not the custom training loop")


def test_fit_rejects_a_loop_that_trains_with_another_optimizer():
    def own_optimizer(model, optimizer, train_ds, val_ds, epochs):
        return fit(model, tf.keras.optimizers.Adam(learning_rate=0.01), train_ds, val_ds, epochs)
    fails(checks.check_fit, own_optimizer, "M21", says="the optimizer given to fit did not take")


# ------------------------------------------------------------------ final model
@pytest.fixture(scope="module")
def digits():
    from utils.data import load_digits_splits, make_dataset

    splits = load_digits_splits()
    return splits, make_dataset(splits.x_train, splits.y_train, 32, shuffle=True), make_dataset(
        splits.x_val, splits.y_val, 64)


@pytest.fixture(scope="module")
def trained_by_loop(digits):
    _, train_ds, val_ds = digits
    tf.keras.utils.set_random_seed(0)
    model = build_model()
    fit(model, tf.keras.optimizers.Adam(0.01), train_ds, val_ds, 6)
    return model


@pytest.fixture(scope="module")
def trained_by_keras(digits):
    _, train_ds, val_ds = digits
    tf.keras.utils.set_random_seed(0)
    model = build_model()
    fit_with_keras(model, tf.keras.optimizers.Adam(0.01), train_ds, val_ds, 6)
    return model


def test_final_model_threshold_passes_trained_and_fails_untrained(digits, trained_by_loop, capsys):
    splits, _, _ = digits
    with pytest.raises(CheckFailed, match=r"below the\s+required") as info:
        checks.check_final_model(build_model(), splits.x_val, splits.y_val, threshold=0.9)
    assert info.value.mistake == "M86" and "training curves" in flat(info.value)
    checks.check_final_model(trained_by_loop, splits.x_val, splits.y_val, threshold=0.9)
    checks.check_final_model(trained_by_loop, splits.x_test, splits.y_test, threshold=0.9,
                             cases=["test"], hidden=True)
    assert capsys.readouterr().out.count("final model: 1 case passed") == 2


def test_final_model_scores_against_the_graders_labels_not_the_notebooks(digits, trained_by_loop):
    splits, _, _ = digits
    # labels the notebook could have changed are not used
    checks.check_final_model(trained_by_loop, splits.x_val, np.zeros_like(splits.y_val))
    # nor are the features: the check makes the case's split itself (the notebook's x could
    # be anything, the labels written as pixels included)
    checks.check_final_model(trained_by_loop, splits.x_test, splits.y_test)
    checks.check_final_model(trained_by_loop, np.zeros((3, 64), np.float32), None)


def test_final_model_rejects_a_model_trained_by_keras_fit(digits, trained_by_keras):
    splits, _, _ = digits
    fails(lambda m: checks.check_final_model(m, splits.x_val, splits.y_val), trained_by_keras,
          "M21", says="not the custom training loop")


def test_final_model_rejects_a_compiled_model_even_if_the_loop_trained_it(digits, trained_by_loop):
    splits, _, _ = digits
    model = build_model()
    model.set_weights(trained_by_loop.get_weights())
    model.compile(optimizer="adam", loss="mse")
    fails(lambda m: checks.check_final_model(m, splits.x_val, splits.y_val), model, "M21",
          says="compile()d")


# ------------------------------------------------------------------ the grading path
def grade(check_name, args, cases, options=None):
    """Grade like the grader: the kernel half through Entry.observe (hidden cases), the reply
    through plain data, each case judged with reveal=False. Raises CheckFailed."""
    options = options or {}
    entry = judge.load()[check_name]
    reply = plain.loads(Entry.observe(check_name, lambda: args, plain.dumps(
        {"cases": cases, "hidden": True, "options": options})))
    for index, (case, answer) in enumerate(zip(cases, reply["cases"])):
        case = plain.roundtrip(case)
        judge.judge_observation(entry, case, plain.roundtrip(answer),
                                entry.context(index, case, True, reveal=False), options)
    assert len(reply["cases"]) == len(cases)


def grading_message(check_name, args, cases, options=None) -> str:
    with pytest.raises(CheckFailed) as info:
        grade(check_name, args, cases, options)
    message = flat(info.value)
    # no value of a case or of the student (the threshold is the instructor's option)
    assert not re.search(r"\d\.\d", message.replace("required 0.90", "")), message
    return message


TRAIN_HIDDEN = [(3, 17, 0.1, 4), (4, 64, 1.0, 2)]


def test_grading_make_train_step_passes_the_solution_and_words_failures_itself():
    grade("check_make_train_step", (make_train_step,), TRAIN_HIDDEN)

    def uphill(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = -loss_fn(y, logits)
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                          model.trainable_variables))
            loss_metric.update_state(-loss)
            acc_metric.update_state(y, logits)
            return -loss
        return train_step
    message = grading_message("check_make_train_step", (uphill,), TRAIN_HIDDEN)
    assert "moved uphill (hidden case 1)" in message
    assert "17" not in message and "SGD" not in message
    message = grading_message("check_make_train_step", (make_train_step_by_hand,), TRAIN_HIDDEN)
    assert message.startswith("[M21: the right numbers without the idea] make_train_step "
                              "(hidden case 1)")
    assert "apply the gradients with the optimizer passed to make_train_step (read its " \
        "apply_gradients" in " ".join(message.split())


def test_grading_make_pipeline_and_eval_step():
    cases = [(64, 16, 3), (33, 10, 1), (7, 32, 2)]
    grade("check_make_pipeline", (make_pipeline,), cases)
    message = grading_message("check_make_pipeline",
                              (lambda *a: make_pipeline(*a, shuffle_first=False),), cases)
    assert "shuffle before batching" in message.lower() and "64" not in message
    message = grading_message("check_make_pipeline", (make_pipeline_in_numpy,), cases)
    assert "[M21:" in message and "tf.data" in message
    message = grading_message("check_make_pipeline", (make_pipeline_permuted_once,), cases)
    assert message.startswith("[M29: training data in the same order every epoch]")
    assert "shuffle the training pipeline" in message
    assert "reshuffle_each_iteration" not in message
    message = grading_message("check_make_pipeline",
                              (lambda *a: make_pipeline(*a, reshuffle=False),), cases)
    assert "[M29:" in message and "leave reshuffle_each_iteration out" in message
    grade("check_make_eval_step", (make_eval_step,), [(5, 13, 3), (6, 64, 1)])


def test_grading_final_model_uses_the_graders_labels(digits, trained_by_loop, trained_by_keras):
    splits, _, _ = digits
    options = {"threshold": 0.9}
    grade("check_final_model", (trained_by_loop, splits.x_test, np.zeros(270)), ["test"], options)
    message = grading_message("check_final_model", (build_model(), splits.x_test, splits.y_test),
                              ["test"], options)
    assert "accuracy on the held-out examples is below the required 0.90" in message
    assert message.startswith("[M86:") and "training curves" in message, message
    message = grading_message("check_final_model", (trained_by_keras, splits.x_test,
                                                    splits.y_test), ["test"], options)
    assert "[M21:" in message and "custom training loop" in message
    message = grading_message("check_final_model", (None, splits.x_test, splits.y_test),
                              ["test"], options)
    assert "there is no trained model" in message


def test_grading_a_name_the_notebook_lacks():
    entry = judge.load()["check_fit"]

    def missing():
        return (fit_that_was_never_defined,)  # noqa: F821
    reply = plain.loads(Entry.observe("check_fit", missing, plain.dumps(
        {"cases": [(1, 3, 600)], "hidden": True, "options": {}})))
    with pytest.raises(CheckFailed, match="not defined"):
        judge.judge_observation(entry, [1, 3, 600], reply["cases"][0],
                                entry.context(0, [1, 3, 600], True, reveal=False), {})


# ------------------------------------------------------------------ the grader's labels
def test_the_judge_and_its_digits_split_need_no_tensorflow():
    code = ("import sys; sys.modules['tensorflow'] = None\n"
            "from autograder.checks.judge import EXERCISES, training\n"
            "assert EXERCISES['check_final_model'].judge is training.final_model\n"
            "assert len(training.digits_split(0)['y_val']) == 270")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_utils_data_split_is_the_graders(digits):
    from autograder.checks.judge.training import digits_split

    splits, _, _ = digits
    arrays = digits_split(seed=0)
    for name in ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test"):
        assert np.array_equal(getattr(splits, name), arrays[name])
        assert getattr(splits, name).dtype == arrays[name].dtype


# ------------------------------------------------------------------ find and fix, with predictions
# make_pipeline and make_train_step start from a broken draft in the notebook: the student
# predicts what happens, runs a cell that shows it, and writes the fix. The drafts are read from
# the solution notebook, so these tests grade the drafts the students get.
SOLUTION = (Path(__file__).resolve().parents[1] / "solutions" / "06_custom_training_loop"
            / "06_custom_training_loop.ipynb")


def notebook_function(name, replace=()):
    """The function ``name`` as the solution notebook defines it (a cell of its own), with each
    ``(old, new)`` of ``replace`` applied to its source first."""
    import nbformat

    sources = [c.source for c in nbformat.read(SOLUTION, as_version=4).cells
               if c.cell_type == "code" and c.source.startswith(f"def {name}(")]
    assert len(sources) == 1, name
    source = sources[0]
    for old, new in replace:
        assert old in source, old
        source = source.replace(old, new)
    namespace = {"tf": tf, "np": np}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name]


def test_the_pipeline_draft_has_the_two_bugs_the_notebook_names():
    draft = notebook_function("make_pipeline_draft")
    fails(checks.check_make_pipeline, draft, "M65", says="float32")
    cast = notebook_function("make_pipeline_draft", [("((x, y))", '((x.astype("float32"), y))')])
    fails(checks.check_make_pipeline, cast, "M66", says="after the batch")


def test_the_pipeline_predictions_are_what_the_draft_does():
    """The judge's reference (DRAFT_PIPELINE) against TensorFlow: the draft keeps float64 and
    regroups nothing."""
    from autograder.checks.judge.training import DRAFT_PIPELINE

    draft = notebook_function("make_pipeline_draft")
    x = np.repeat(np.arange(16.0)[:, None], 64, axis=1)
    ds = draft(x, np.arange(16) % 10, 4, True)
    assert ds.element_spec[0].dtype.name == DRAFT_PIPELINE["dtype"]
    groups = [sorted(tuple(b[:, 0].numpy().astype(int)) for b, _ in ds) for _ in range(3)]
    assert (groups[0] == groups[1] == groups[2]) is DRAFT_PIPELINE["same_groups"]


def test_make_pipeline_accepts_right_predictions(capsys):
    checks.check_make_pipeline(make_pipeline, "float64", True)
    checks.check_make_pipeline(make_pipeline, tf.float64, True)   # a dtype: its name is read
    checks.check_make_pipeline(make_pipeline, "tf.float64", True)
    assert capsys.readouterr().out.count("passed") == 3


@pytest.mark.parametrize("predicted, says", [
    (("float32", True), "keeps the dtype of the NumPy array"),
    (("float64", False), "changes the order of the batches, never which examples share one"),
    ((tf.constant(1.0), True), "a dtype's name in quotes"),
    ((None, True), "a dtype's name in quotes"),
    (("float64", "yes"), "should be True or False"),
    (("float64", 1), "should be True or False"),
], ids=["float32", "regrouped", "tensor", "none", "string_bool", "int_bool"])
def test_make_pipeline_rejects_wrong_predictions(predicted, says):
    with pytest.raises(CheckFailed) as info:
        checks.check_make_pipeline(make_pipeline, *predicted)
    assert info.value.mistake is None
    assert says in flat(info.value), str(info.value)
    assert "your prediction predicted_" in flat(info.value)


def test_make_pipeline_with_right_predictions_still_needs_tf_data():
    """Right predictions and the right batches from Python: M21, the pipeline is the idea."""
    with pytest.raises(CheckFailed) as info:
        checks.check_make_pipeline(make_pipeline_in_numpy, "float64", True)
    assert info.value.mistake == "M21" and "tf.data did not make them" in flat(info.value)


def test_the_train_step_draft_has_the_three_bugs_the_notebook_names():
    draft = notebook_function("make_train_step_draft")
    fails(checks.check_make_train_step, draft, "M07", says="outside the tf.function")
    no_optimizer = [("        optimizer = tf.keras.optimizers.Adam(learning_rate=3e-3)\n", "")]
    fails(checks.check_make_train_step, notebook_function("make_train_step_draft", no_optimizer),
          says="with the logits computed before the update")
    logits_kept = no_optimizer + [("acc_metric.update_state(y, model(x, training=False))",
                                   "acc_metric.update_state(y, logits)")]
    error = fails_with(checks.check_make_train_step,
                       notebook_function("make_train_step_draft", logits_kept), "M97",
                       "loss_metric and acc_metric hold the last batch alone")
    assert error.code == "metrics_reset_in_step"
    fixed = logits_kept + [("        loss_metric.reset_state()  # so that each step logs its own batch\n"
                            "        acc_metric.reset_state()\n", "")]
    checks.check_make_train_step(notebook_function("make_train_step_draft", fixed), 3, 120)


def test_a_step_that_resets_only_the_loss_metric_is_named_m97():
    def make_train_step(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = loss_fn(y, logits)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            loss_metric.reset_state()
            loss_metric.update_state(loss)
            acc_metric.update_state(y, logits)
            return loss
        return step

    fails(checks.check_make_train_step, make_train_step, "M97", says="loss_metric holds the last")


def test_the_train_step_predictions_are_what_tensorflow_does(digits):
    """The judge's reference (step_prediction_reference) against TensorFlow: the notebook's run,
    a fresh model and a fresh Adam, three epochs of the digits' training split in batches of
    32."""
    from autograder.checks.judge.training import (PREDICTION_BATCH, PREDICTION_EPOCHS,
                                                  step_prediction_reference)
    from utils.data import make_dataset

    splits, _, _ = digits
    train_ds = make_dataset(splits.x_train, splits.y_train, PREDICTION_BATCH, shuffle=True)
    model, optimizer = build_model(), tf.keras.optimizers.Adam(learning_rate=3e-3)
    step = make_train_step(model, optimizer, tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy())
    for _ in range(PREDICTION_EPOCHS):
        for x, y in train_ds:
            step(x, y)
    want = step_prediction_reference()
    assert (step.experimental_get_tracing_count(), int(optimizer.iterations.numpy())) == (
        want["traces"], want["iterations"]) == (3, 120)


def test_make_train_step_accepts_right_predictions(capsys):
    checks.check_make_train_step(make_train_step, 3, 120)
    assert "make_train_step: 1 case passed" in capsys.readouterr().out


@pytest.mark.parametrize("predicted, mistake, says", [
    ((120, 120), "M08", "runs its Python body only while it traces"),
    ((40, 120), "M08", "runs its Python body only while it traces"),
    ((2, 120), None, "the first call traces twice"),
    ((1, 120), None, "the smaller last batch is a new input shape"),
    ((6, 120), None, "keeps its graphs from one epoch to the next"),
    ((3, 117), None, "the last, smaller batch included"),
    ((3, 40), None, "in every epoch"),
    ((3.0, 120), None, "a whole number written down"),
    ((tf.constant(3), 120), None, "a whole number written down"),
    ((3, None), None, "a whole number written down"),
    ((True, 120), None, "a whole number written down"),
], ids=["per_call", "per_batch", "forgot_variable_trace", "one_trace", "per_epoch",
        "no_last_batch", "one_epoch", "float", "tensor", "none", "bool"])
def test_make_train_step_rejects_wrong_predictions(predicted, mistake, says):
    with pytest.raises(CheckFailed) as info:
        checks.check_make_train_step(make_train_step, *predicted)
    assert info.value.mistake == mistake, str(info.value)
    assert says in flat(info.value), str(info.value)


def test_make_train_step_with_right_predictions_still_needs_the_tape_and_the_optimizer():
    """Right predictions do not stand in for the step's idea (M21)."""
    with pytest.raises(CheckFailed) as info:
        checks.check_make_train_step(make_train_step_by_hand, 3, 120)
    assert info.value.mistake == "M21" and "did not take the steps" in flat(info.value)


def test_grading_the_predictions_shows_neither_the_answer_nor_the_students_value():
    grade("check_make_pipeline", (make_pipeline, "float64", True), [(50, 8, 0)])
    message = grading_message("check_make_pipeline", (make_pipeline, "float16", True), [(50, 8, 0)])
    assert "predicted_dtype is not what happens." in message and "float16" not in message
    assert "you predicted" not in message
    grade("check_make_train_step", (make_train_step, 3, 120), TRAIN_HIDDEN[:1])
    message = grading_message("check_make_train_step", (make_train_step, 7, 120), TRAIN_HIDDEN[:1])
    assert "predicted_traces is not what happens." in message
    assert not re.search(r"\d", message.replace("M08", "")), message
    message = grading_message("check_make_train_step", (make_train_step, 240, 120),
                              TRAIN_HIDDEN[:1])
    assert message.startswith("[M08: Python side effect in a tf.function]") and "240" not in message
    # the hidden cases judge the code alone: no prediction is sent
    grade("check_make_train_step", (make_train_step,), TRAIN_HIDDEN)


def test_fit_names_the_loss_outside_the_tape_with_op_determinism_on():
    """The notebook's set-up turns op determinism on, which computes the cross-entropy of an
    unknown batch size through shape arithmetic (comparisons, integer casts); fit's diagnosis
    still finds M05, not an op without a gradient (M12). In a process of its own: op
    determinism cannot be turned off again."""
    code = '''
import tensorflow as tf
tf.keras.utils.set_random_seed(0)
tf.config.experimental.enable_op_determinism()
from autograder.checks import training as checks
from autograder.checks.compare import CheckFailed

def fit(model, optimizer, train_ds, val_ds, epochs):
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
        loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(epochs):
        for x, y in train_ds:
            train_step(x, y)
    return {}

try:
    checks.check_fit(fit)
except CheckFailed as error:
    print("MISTAKE", error.mistake)
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parents[1])
    assert "MISTAKE M05" in out.stdout, out.stdout + out.stderr


# ------------------------------------------------------------------ red team, round 2
# The red team's answers (rt_a .. rt_d, tests/redteam round 2), each on the visible check.

def make_train_step_by_hand_with_a_decoy_tape(model, optimizer, loss_fn, loss_metric,
                                              acc_metric):
    """rt_a: gradients derived by hand (softmax cross-entropy through the two Dense layers),
    applied by the optimizer; a decoy tape.gradient over the variables of something else."""
    @tf.function
    def step(x, y):
        k1, b1, k2, b2 = model.trainable_variables
        with tf.GradientTape() as tape:
            dummy = tf.add_n([tf.reduce_sum(v) for v in model.trainable_variables])
        tape.gradient(dummy, model.trainable_variables)
        pre = x @ k1 + b1
        h = tf.nn.relu(pre)
        logits = h @ k2 + b2
        loss = loss_fn(y, logits)
        n = tf.cast(tf.shape(x)[0], logits.dtype)
        d = (tf.nn.softmax(logits)
             - tf.one_hot(tf.cast(y, tf.int32), tf.shape(logits)[1], dtype=logits.dtype)) / n
        gk2 = tf.transpose(h) @ d
        gb2 = tf.reduce_sum(d, axis=0)
        dh = (d @ tf.transpose(k2)) * tf.cast(pre > 0, pre.dtype)
        gk1 = tf.transpose(x) @ dh
        gb1 = tf.reduce_sum(dh, axis=0)
        optimizer.apply_gradients(zip([gk1, gb1, gk2, gb2], model.trainable_variables))
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return step


def test_make_train_step_rejects_hand_gradients_behind_a_decoy_tape():
    fails(checks.check_make_train_step, make_train_step_by_hand_with_a_decoy_tape, "M21",
          says="no tape.gradient call took the gradient of the loss")


def test_make_train_step_accepts_clipped_and_listed_gradients(capsys):
    def clipped(model, optimizer, loss_fn, loss_metric, acc_metric):
        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = loss_fn(y, logits)
            grads = tape.gradient(loss, model.trainable_variables)
            grads = [tf.clip_by_norm(g, 1e6) for g in grads]
            optimizer.apply(grads, model.trainable_variables)
            loss_metric.update_state(loss)
            acc_metric.update_state(y, logits)
            return loss
        return step
    checks.check_make_train_step(clipped)
    assert "1 case passed" in capsys.readouterr().out


def test_make_train_step_rejects_keras_train_on_batch():
    def on_batch(model, optimizer, loss_fn, loss_metric, acc_metric):
        step = make_train_step(model, optimizer, loss_fn, loss_metric, acc_metric)

        @tf.function
        def train_step(x, y):
            return step(x, y)
        twin = tf.keras.Model(model.inputs, model.outputs)
        twin.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss=loss_fn)
        return train_step
    fails(checks.check_make_train_step, on_batch, "M21", says="compile()/fit()")


def fit_through_a_twin_model(model, optimizer, train_ds, val_ds, epochs):
    """rt_b: Keras' compile()/fit() on a second model sharing the given model's layers (the given
    model itself is never compiled)."""
    wrapper = tf.keras.Model(model.inputs, model.outputs)
    wrapper.compile(optimizer=optimizer,
                    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    metrics=[tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    trained = wrapper.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=0)
    return {k: [float(v) for v in trained.history[k]]
            for k in ("loss", "accuracy", "val_loss", "val_accuracy")}


def test_fit_rejects_keras_fit_on_a_model_sharing_the_layers():
    fails(checks.check_fit, fit_through_a_twin_model, "M21", says="not the custom training loop")


class NearestImage(tf.keras.layers.Layer):
    """rt_c: the label of the nearest training image, as logits (no trainable weights)."""

    def __init__(self, images, labels):
        super().__init__()
        self.images = tf.constant(images, tf.float32)
        self.logits = tf.one_hot(labels, 10) * 10.0

    def call(self, x):
        d = tf.reduce_sum(tf.square(x[:, None, :] - self.images[None, :, :]), axis=-1)
        return tf.gather(self.logits, tf.argmin(d, axis=1))


@pytest.fixture(scope="module")
def nearest_image(digits):
    splits, _, _ = digits
    return tf.keras.Sequential([tf.keras.Input(shape=(64,)),
                                NearestImage(splits.x_train, splits.y_train)])


def test_final_model_rejects_a_lookup_with_no_trainable_weights(digits, nearest_image):
    splits, _, _ = digits
    fails(lambda m: checks.check_final_model(m, splits.x_val, splits.y_val), nearest_image,
          "M21", says="never trained by your loop")


@pytest.mark.parametrize("notebook_has_build_model", [True, False])
def test_final_model_rejects_a_model_that_is_not_build_models_network(digits, nearest_image,
                                                                      notebook_has_build_model,
                                                                      monkeypatch):
    splits, _, _ = digits
    if notebook_has_build_model:  # the notebook's namespace is __main__ in a kernel
        monkeypatch.setattr(sys.modules["__main__"], "build_model", build_model, raising=False)

    class Lookup(tf.keras.Model):  # build_model's shapes, the lookup's outputs
        def __init__(self):
            super().__init__()
            self.net = build_model()
            self.memory = nearest_image

        def call(self, x):
            return self.memory(x) + 0.0 * self.net(x)

    model = Lookup()
    model(splits.x_val[:2])
    fails(lambda m: checks.check_final_model(m, splits.x_val, splits.y_val), model, "M21",
          says="not the network build_model makes")


def answers_as_features(labels):
    """rt_d: the labels written as one-hot rows of 64 features."""
    rows = np.zeros((len(labels), 64), np.float32)
    rows[np.arange(len(labels)), labels] = 1.0
    return rows


@pytest.fixture(scope="module")
def reader():
    """rt_d: an untrained model whose logits are the first 10 features."""
    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(10)])
    kernel = np.zeros((64, 10), np.float32)
    kernel[:10, :10] = np.eye(10) * 10.0
    model.set_weights([kernel, np.zeros(10, np.float32)])
    return model


def test_final_model_makes_its_own_features_not_the_notebooks(digits, reader):
    splits, _, _ = digits
    fails(lambda m: checks.check_final_model(m, answers_as_features(splits.y_val), splits.y_val),
          reader, "M86", says="below the required")
    fails(lambda m: checks.check_final_model(m, answers_as_features(splits.y_test),
                                             splits.y_test, cases=["test"], hidden=True),
          reader, "M86", says="below the required")


def test_final_model_cannot_tell_keras_weights_copied_into_a_fresh_model(digits,
                                                                         trained_by_keras,
                                                                         capsys):
    """rt_a's final model: weights Keras' fit() learnt, copied into a fresh model of
    build_model that was never compiled. The check sees only the final model, so it passes (the
    exercise's kernel_evidence says so); fit's and the train step's checks grade the loop."""
    splits, _, _ = digits
    fresh = build_model()
    fresh.set_weights(trained_by_keras.get_weights())
    checks.check_final_model(fresh, splits.x_val, splits.y_val)
    assert "1 case passed" in capsys.readouterr().out


def test_grading_final_model_red_team(digits, nearest_image, reader):
    splits, _, _ = digits
    options = {"threshold": 0.9}
    message = grading_message("check_final_model", (nearest_image, splits.x_test, splits.y_test),
                              ["test"], options)
    assert "[M21:" in message and "never trained by your loop" in message
    message = grading_message("check_final_model", (reader, answers_as_features(splits.y_test),
                                                    splits.y_test), ["test"], options)
    assert "below the required 0.90" in message


def test_grading_make_train_step_and_fit_red_team():
    message = grading_message("check_make_train_step",
                              (make_train_step_by_hand_with_a_decoy_tape,), TRAIN_HIDDEN)
    assert message.startswith("[M21: the right numbers without the idea] make_train_step "
                              "(hidden case 1)")
    message = grading_message("check_fit", (fit_through_a_twin_model,), [(1, 3, 600)])
    assert "[M21:" in message and "custom training loop" in message


# ------------------------------------------------- issue 27: the drafts to find and fix
hidden_layer = tf.keras.layers.Dense(64, activation="relu")


def build_model_draft():
    """The notebook's draft: one hidden layer object shared by every model, a softmax output."""
    return tf.keras.Sequential([tf.keras.Input(shape=(64,)), hidden_layer,
                                tf.keras.layers.Dense(10, activation="softmax")])


def build_model_functional():
    """Correct, in Keras' functional API."""
    inputs = tf.keras.Input(shape=(64,))
    hidden = tf.keras.layers.Dense(64)(inputs)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(10)(tf.keras.layers.Activation("relu")(hidden)))


def build_model_added():
    """Correct: Sequential grown with add(), ReLU as a layer of its own."""
    model = tf.keras.Sequential()
    model.add(tf.keras.Input(shape=(64,)))
    model.add(tf.keras.layers.Dense(64))
    model.add(tf.keras.layers.ReLU())
    model.add(tf.keras.layers.Dense(10))
    return model


def notebook_build_model_draft(replace=()):
    """The notebook's build_model_draft with its cell (the shared hidden_layer made there), each
    ``(old, new)`` of ``replace`` applied to the cell's source first."""
    import nbformat

    sources = [c.source for c in nbformat.read(SOLUTION, as_version=4).cells
               if c.cell_type == "code" and "def build_model_draft(" in c.source]
    assert len(sources) == 1
    source = sources[0]
    for old, new in replace:
        assert old in source, old
        source = source.replace(old, new)
    namespace = {"tf": tf, "np": np}
    exec(compile(source, "<build_model_draft>", "exec"), namespace)
    return namespace["build_model_draft"]


def test_build_model_rejects_the_draft_and_its_half_fixes():
    # Handed in unchanged: the softmax under a from_logits=True loss (M85) ...
    fails(checks.check_build_model, notebook_build_model_draft(), "M85", says="1.46")
    fails(checks.check_build_model, build_model_draft, "M85", says="remove the softmax")
    # ... the softmax removed, the hidden layer still made once, outside (M32) ...
    fails(checks.check_build_model,
          notebook_build_model_draft([('Dense(10, activation="softmax")', "Dense(10)")]),
          "M32", says="training one model changes the next")
    # ... the layer made inside, the softmax kept (M85).
    fails(checks.check_build_model,
          notebook_build_model_draft([("        hidden_layer,\n",
                                       '        tf.keras.layers.Dense(64, activation="relu"),\n')]),
          "M85", says="from_logits=True")


def test_grading_build_model_names_the_drafts_mistakes_and_shows_no_value():
    grade("check_build_model", (build_model,), [3, 64])
    message = grading_message("check_build_model", (notebook_build_model_draft(),), [3, 64])
    assert message.startswith("[M85:") and "hidden case 1" in message, message
    fixed_softmax = notebook_build_model_draft([('Dense(10, activation="softmax")', "Dense(10)")])
    message = grading_message("check_build_model", (fixed_softmax,), [3, 64])
    assert message.startswith("[M32:"), message

    def sigmoid():
        return tf.keras.Sequential([tf.keras.Input(shape=(64,)),
                                    tf.keras.layers.Dense(64, activation="relu"),
                                    tf.keras.layers.Dense(10, activation="sigmoid")])
    message = grading_message("check_build_model", (sigmoid,), [3, 64])
    assert message.startswith("[M85:") and "1000 times larger" in message, message


class _Times(tf.keras.layers.Layer):
    """Multiplies its input by a constant (``tanh * 1.5`` as a layer)."""

    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor


def _hidden_then(*last):
    return lambda: tf.keras.Sequential([tf.keras.Input(shape=(64,)),
                                        tf.keras.layers.Dense(64, activation="relu"), *last])


SQUASHED = {
    "sigmoid": lambda: _hidden_then(tf.keras.layers.Dense(10, activation="sigmoid")),
    "tanh": lambda: _hidden_then(tf.keras.layers.Dense(10, activation="tanh")),
    # rescaled: rows that sum to 2, bounds of 1.5 or 50: not probabilities, not within [-1, 1]
    "softmax_times_2": lambda: _hidden_then(tf.keras.layers.Dense(10, activation="softmax"),
                                            tf.keras.layers.Rescaling(2.0)),
    "tanh_times_1.5": lambda: _hidden_then(tf.keras.layers.Dense(10, activation="tanh"),
                                           _Times(1.5)),
    "sigmoid_times_100_minus_50": lambda: _hidden_then(
        tf.keras.layers.Dense(10, activation="sigmoid"), tf.keras.layers.Rescaling(100.0, offset=-50.0)),
}


@pytest.mark.parametrize("squash", sorted(SQUASHED))
def test_build_model_rejects_outputs_of_the_right_shape_squashed_otherwise(squash):
    """The right shape and dtype, rows that do not sum to 1, but the same bug: a squashing last
    layer, however its outputs are rescaled afterwards, seen as outputs that hardly spread wider
    on features 1000 times larger."""
    fails(checks.check_build_model, SQUASHED[squash](), "M85", says="hardly spread wider")
    message = grading_message("check_build_model", (SQUASHED[squash](),), [1, 17, 256])
    assert message.startswith("[M85:") and "1000 times larger" in message, message


class _BiasOnly(tf.keras.Model):
    """Ten trainable numbers returned for every example: the input's batch size, nothing else."""

    def __init__(self):
        super().__init__()
        self.bias = self.add_weight(shape=(10,), initializer="random_normal")

    def call(self, x):
        return tf.zeros_like(x[:, :10]) + self.bias


IGNORES_INPUT = {
    "rescaled_by_0": lambda: lambda: tf.keras.Sequential([
        tf.keras.Input(shape=(64,)), tf.keras.layers.Rescaling(0.0),
        tf.keras.layers.Dense(10, bias_initializer="random_normal")]),
    "hidden_of_0": lambda: lambda: tf.keras.Sequential([
        tf.keras.Input(shape=(64,)), tf.keras.layers.Rescaling(0.0),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10, bias_initializer="ones")]),
    "bias_only": lambda: _BiasOnly,
}


@pytest.mark.parametrize("route", sorted(IGNORES_INPUT))
def test_build_model_rejects_a_model_that_ignores_its_input(route):
    """Logits of the right shape and dtype, trainable weights, a fresh model every call, not
    squashed: the right form without the idea, a network of the features (M21)."""
    fails(checks.check_build_model, IGNORES_INPUT[route](), "M21", says="do not depend on the features")
    message = grading_message("check_build_model", (IGNORES_INPUT[route](),), [1, 17, 256])
    assert message.startswith("[M21:") and "whatever examples" in message, message


def test_build_model_accepts_log_probabilities_which_are_logits(capsys):
    """log_softmax gives logits of their own (a softmax of them is the model's probabilities):
    correct, though not the exercise's plain Dense(10)."""
    def log_probabilities():
        return tf.keras.Sequential([tf.keras.Input(shape=(64,)),
                                    tf.keras.layers.Dense(64, activation="relu"),
                                    tf.keras.layers.Dense(10, activation="log_softmax")])
    checks.check_build_model(log_probabilities)
    assert "passed" in capsys.readouterr().out


class DigitNet(tf.keras.Model):
    """Correct: a subclassed Model, its layers made in __init__ (a new pair every instance)."""

    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(64, activation="relu")
        self.out = tf.keras.layers.Dense(10)

    def call(self, x, training=False):
        return self.out(self.hidden(x))


def build_model_subclassed():
    model = DigitNet()
    model.build((None, 64))
    return model


def build_model_biased():
    """Correct: biases that start away from 0 (the outputs then grow a little less than 1000
    times on features 1000 times larger)."""
    return tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu", bias_initializer="random_normal"),
        tf.keras.layers.Dense(10, bias_initializer="random_normal"),
    ])


@pytest.mark.parametrize("answer", [build_model_functional, build_model_added,
                                    build_model_subclassed, build_model_biased])
def test_build_model_accepts_other_correct_spellings(answer, capsys):
    checks.check_build_model(answer)
    checks.check_build_model(answer, cases=[1, 17, 256], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2
    grade("check_build_model", (answer,), [1, 17, 256])


def test_the_model_draft_costs_what_the_notebook_says():
    """The notebook's experiment 2 on the installed Keras: Keras 3's softmax keeps its logits on
    the tensor it returns, and SparseCategoricalCrossentropy(from_logits=True) given that tensor
    uses them and warns (eagerly and in a tf.function: about 0 for right, certain outputs); the
    same outputs through tf.nn's loss, tf.identity, a slice, model.predict's array or an
    exported SavedModel get a second softmax: -log(e / (e + 9)) = 1.461."""
    import tempfile
    import warnings

    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model = notebook_build_model_draft()()
    for variable in model.trainable_variables:
        variable.assign(variable * 1000.0)
    x = np.random.default_rng(0).uniform(0, 1, (3, 64)).astype(np.float32)
    outputs = model(x)
    named = np.argmax(outputs, axis=1)
    assert np.allclose(tf.reduce_max(outputs, axis=1), 1.0, atol=1e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert float(loss(named, outputs)) < 1e-3
        assert float(tf.function(lambda: loss(named, model(x)))()) < 1e-3
    assert any("produced by a Softmax activation" in str(w.message) for w in caught)
    double = -np.log(np.e / (np.e + 9))
    with tempfile.TemporaryDirectory() as folder:
        model.export(folder, verbose=False)
        reloaded = tf.saved_model.load(folder)   # kept: its functions need its variables
        exported = reloaded.serve(x)
    for given in (tf.nn.sparse_softmax_cross_entropy_with_logits(labels=named, logits=outputs),
                  loss(named, tf.identity(outputs)), loss(named, outputs[:, :]),
                  loss(named, model.predict(x, verbose=0)), loss(named, exported)):
        assert abs(float(tf.reduce_mean(given)) - double) < 1e-3


def make_eval_step_draft(model, loss_fn, loss_metric, acc_metric):
    """The notebook's draft: a copy of the train step, an update by hand instead of an optimizer."""
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


def make_eval_step_functional(model, loss_fn, loss_metric, acc_metric):
    """Correct: the cross-entropy written with tf.keras.losses' function, not the loss given."""
    @tf.function
    def eval_step(x, y):
        logits = model(x, training=False)
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
            y, logits, from_logits=True))
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return eval_step


def test_make_eval_step_rejects_the_draft():
    message = fails(checks.check_make_eval_step, make_eval_step_draft, "M55",
                    says="changed the model's weights")
    assert "training=False" in flat(message)


def make_eval_step_draft_half_fixed(model, loss_fn, loss_metric, acc_metric):
    """The draft with its tape and update removed, its training=True left in (a red-team round
    found it passed: the check's model has no dropout)."""
    @tf.function
    def eval_step(x, y):
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return eval_step


def make_eval_step_default_mode(model, loss_fn, loss_metric, acc_metric):
    """Correct: the model called without a training argument (Keras' default is inference)."""
    @tf.function
    def eval_step(x, y):
        logits = model(x)
        loss = loss_fn(y, logits)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return eval_step


def test_make_eval_step_names_the_training_mode_left_in():
    message = fails(checks.check_make_eval_step, make_eval_step_draft_half_fixed, "M55",
                    says="training=True")
    assert "inference mode: training=False where the step calls the model" in flat(message)


@pytest.mark.parametrize("answer", [make_eval_step, make_eval_step_functional,
                                    make_eval_step_default_mode])
def test_make_eval_step_accepts_other_correct_spellings(answer, capsys):
    checks.check_make_eval_step(answer)
    checks.check_make_eval_step(answer, cases=[(5, 13, 3), (6, 64, 1)], hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


# ------------------------------------------------- issue 28: fit's optimizer and Keras
def _fit_with_step(step_factory):
    """A fit of the right form whose train step comes from ``step_factory(model, optimizer,
    loss_fn, loss_metric, acc_metric)``."""
    def fit_(model, optimizer, train_ds, val_ds, epochs):
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        train = (tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy())
        val = (tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy())
        train_step = step_factory(model, optimizer, loss_fn, *train)
        eval_step = make_eval_step(model, loss_fn, *val)
        history = {"loss": [], "accuracy": [], "val_loss": [], "val_accuracy": []}
        for _ in range(epochs):
            for metric in (*train, *val):
                metric.reset_state()
            for x, y in train_ds:
                train_step(x, y)
            for x, y in val_ds:
                eval_step(x, y)
            for key, metric in zip(history, (*train, *val)):
                history[key].append(float(metric.result()))
        return history
    return fit_


def steps_by_hand(model, optimizer, loss_fn, loss_metric, acc_metric):
    """Ignores the optimizer: SGD by hand, optimizer.iterations bumped to look right."""
    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        for variable, grad in zip(model.trainable_variables, grads):
            variable.assign_sub(0.01 * grad)
        optimizer.iterations.assign_add(1)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return train_step


def decoy_tape_and_other_update(model, optimizer, loss_fn, loss_metric, acc_metric):
    """tape.gradient called, its result unused; the optimizer applies other gradients (of
    half the loss, by a second tape)."""
    @tf.function
    def train_step(x, y):
        with tf.GradientTape(persistent=True) as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
            half = 0.5 * loss
        tape.gradient(loss, model.trainable_variables)
        other = tape.gradient(half, model.trainable_variables)
        optimizer.apply_gradients(zip(other, model.trainable_variables))
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return train_step


def apply_and_nudge(model, optimizer, loss_fn, loss_metric, acc_metric):
    """The optimizer applies the tape's gradients, and an update by hand is applied beside."""
    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        for variable, grad in zip(model.trainable_variables, grads):
            variable.assign_sub(0.01 * grad)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return train_step


def step_with_apply(model, optimizer, loss_fn, loss_metric, acc_metric):
    """Correct, written differently: Keras 3's optimizer.apply(grads, variables)."""
    @tf.function(reduce_retracing=True)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, logits := model(x, training=True))
        optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return train_step


def test_fit_rejects_steps_by_hand_with_iterations_bumped():
    fails(checks.check_fit, _fit_with_step(steps_by_hand), "M21",
          says="the optimizer fit was given did not make the updates")


def test_fit_rejects_an_update_that_is_not_the_tapes_gradient():
    for step in (decoy_tape_and_other_update, apply_and_nudge):
        fails(checks.check_fit, _fit_with_step(step), "M21",
              says="not what the optimizer given makes from the gradients of the loss")


@pytest.mark.parametrize("factory", [make_train_step, step_with_apply])
def test_fit_accepts_other_correct_spellings(factory, capsys):
    checks.check_fit(_fit_with_step(factory))
    assert "fit: 1 case passed" in capsys.readouterr().out


def _forget_keras(model):
    """Reset what Keras' compile()/fit() leave on a model."""
    model.compiled = False
    model.history = None
    model.train_function = None
    model.optimizer = None


SAVED_FIT = tf.keras.Model.fit          # saved as a student would in an earlier cell


def _trainer_dict():
    """The class dict of the class that defines fit (Keras' TensorFlowTrainer)."""
    return next(vars(k) for k in tf.keras.Model.__mro__ if "fit" in vars(k))


def fit_through_saved_references(model, optimizer, train_ds, val_ds, epochs):
    compile_ = next(vars(k)["compile"] for k in tf.keras.Model.__mro__ if "compile" in vars(k))
    compile_(model, optimizer=optimizer,
             loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
             metrics=[tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    fit_ = SAVED_FIT if epochs % 2 else _trainer_dict()["fit"]
    history = fit_(model, train_ds, validation_data=val_ds, epochs=epochs, verbose=0).history
    _forget_keras(model)
    return {k: [float(v) for v in history[k]] for k in ("loss", "accuracy", "val_loss",
                                                       "val_accuracy")}


def test_keras_training_entry_points_are_wrapped_at_import():
    for name in checks.KERAS_TRAINING:
        assert getattr(getattr(tf.keras.Sequential, name), "_autograder_keras_entry", False), name


def test_fit_rejects_keras_reached_through_saved_references():
    fails(checks.check_fit, fit_through_saved_references, "M21",
          says="not the custom training loop")


def test_final_model_rejects_keras_reached_through_saved_references(digits):
    splits, train_ds, val_ds = digits
    tf.keras.utils.set_random_seed(0)
    model = build_model()
    fit_through_saved_references(model, tf.keras.optimizers.Adam(0.01), train_ds, val_ds, 3)
    assert not model.compiled and model.history is None
    fails(lambda m: checks.check_final_model(m, splits.x_val, splits.y_val), model,
          "M21", says="not the custom training loop")


# ------------------------------------------------------------------ fit: the notebook's draft
# fit_draft evaluates on the training batches (M67) and resets its metrics once, before the
# loop (M68): handed in unchanged it fails with M67, and each half-fixed version with the id of
# the bug still left.

def fit_draft(replace=()):
    """The notebook's fit_draft, with its steps and a silent progress bar."""
    draft = notebook_function("fit_draft", replace)
    draft.__globals__.update(make_train_step=make_train_step, make_eval_step=make_eval_step,
                             tqdm=lambda iterable, **kwargs: iterable)
    return draft


VAL_FIXED = [("        for x_batch, y_batch in train_ds:\n            eval_step",
              "        for x_batch, y_batch in val_ds:\n            eval_step")]
RESET_FIXED = [("    for metric in (train_loss, train_acc, val_loss, val_acc):\n"
                "        metric.reset_state()\n"
                "    for epoch in tqdm(range(epochs), desc=\"draft epochs\"):\n",
                "    for epoch in tqdm(range(epochs), desc=\"draft epochs\"):\n"
                "        for metric in (train_loss, train_acc, val_loss, val_acc):\n"
                "            metric.reset_state()\n")]


def test_the_fit_draft_fails_with_m67_then_m68():
    fails(checks.check_fit, fit_draft(), "M67", says="never read val_ds")
    fails(checks.check_fit, fit_draft(RESET_FIXED), "M67", says="never read val_ds")
    fails(checks.check_fit, fit_draft(VAL_FIXED), "M68", says="reset_state")


def test_the_fit_draft_fixed_passes(capsys):
    checks.check_fit(fit_draft(VAL_FIXED + RESET_FIXED))
    assert "fit: 1 case passed" in capsys.readouterr().out


def fit_reset_after_recording(model, optimizer, train_ds, val_ds, epochs):
    """Correct, written differently: metrics reset at the end of each epoch, after the history
    took their numbers, and the history built from a list of (key, metric) pairs."""
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    pairs = [("loss", tf.keras.metrics.Mean()),
             ("accuracy", tf.keras.metrics.SparseCategoricalAccuracy()),
             ("val_loss", tf.keras.metrics.Mean()),
             ("val_accuracy", tf.keras.metrics.SparseCategoricalAccuracy())]
    metric = dict(pairs)
    train_step = make_train_step(model, optimizer, loss_fn, metric["loss"], metric["accuracy"])
    eval_step = make_eval_step(model, loss_fn, metric["val_loss"], metric["val_accuracy"])
    history = {key: [] for key, _ in pairs}
    for _ in range(epochs):
        for batch in train_ds:
            train_step(*batch)
        for batch in val_ds:
            eval_step(*batch)
        for key, m in pairs:
            history[key].append(float(m.result()))
            m.reset_state()
    return history


def test_fit_accepts_metrics_reset_after_recording(capsys):
    checks.check_fit(fit_reset_after_recording)
    assert "fit: 1 case passed" in capsys.readouterr().out


def test_fit_rejects_validation_on_the_training_batches_in_grading():
    def on_training_data(model, optimizer, train_ds, val_ds, epochs):
        return fit(model, optimizer, train_ds, train_ds, epochs)
    entry = judge.load()["check_fit"]
    request = plain.dumps({"cases": [[1, 2, 300]], "hidden": True, "options": {}})
    reply = plain.loads(Entry.observe("check_fit", lambda: (on_training_data,), request))
    with pytest.raises(CheckFailed) as info:
        case = plain.roundtrip([1, 2, 300])
        judge.judge_observation(entry, case, reply["cases"][0],
                                entry.context(0, case, True, reveal=False), {})
    assert info.value.mistake == "M67", flat(info.value)


def test_fit_with_an_evaluation_that_trains_fails_with_m55_not_m68():
    def trains_while_measuring(model, optimizer, train_ds, val_ds, epochs):
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metrics = [tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy(),
                   tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy()]
        train_step = make_train_step(model, optimizer, loss_fn, *metrics[:2])
        eval_step = make_train_step(model, tf.keras.optimizers.SGD(0.1), loss_fn, *metrics[2:])
        history = {"loss": [], "accuracy": [], "val_loss": [], "val_accuracy": []}
        for _ in range(epochs):
            for metric in metrics:
                metric.reset_state()
            for batch in train_ds:
                train_step(*batch)
            for batch in val_ds:
                eval_step(*batch)
            for key, metric in zip(history, metrics):
                history[key].append(float(metric.result()))
        return history
    fails(checks.check_fit, trains_while_measuring, "M55", says="changed while fit read val_ds")


# ------------------------------------------------------------------ make_train_step: a decoy of the loss (#28)

def make_train_step_by_hand_beside_a_tape_of_the_loss(model, optimizer, loss_fn, loss_metric,
                                                       acc_metric):
    """Issue 28: gradients derived by hand, applied by the optimizer, beside a real, unused
    tape.gradient of the loss whose values are the same: the values agree, so only an experiment
    on where the applied gradients came from tells them apart."""
    @tf.function
    def step(x, y):
        k1, b1, k2, b2 = model.trainable_variables
        with tf.GradientTape() as tape:
            pre = x @ k1 + b1
            h = tf.nn.relu(pre)
            logits = h @ k2 + b2
            loss = loss_fn(y, logits)
        tape.gradient(loss, model.trainable_variables)
        n = tf.cast(tf.shape(x)[0], logits.dtype)
        d = (tf.nn.softmax(logits)
             - tf.one_hot(tf.cast(y, tf.int32), tf.shape(logits)[1], dtype=logits.dtype)) / n
        dh = (d @ tf.transpose(k2)) * tf.cast(pre > 0, pre.dtype)
        grads = [tf.transpose(x) @ dh, tf.reduce_sum(dh, axis=0), tf.transpose(h) @ d,
                 tf.reduce_sum(d, axis=0)]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return step


def make_train_step_scaled_gradients_as_a_dict(model, optimizer, loss_fn, loss_metric,
                                               acc_metric):
    """Correct, written differently: the tape's gradients of a dict of variables, each divided
    by 1.0, applied from a list of pairs."""
    @tf.function
    def step(x, y):
        variables = {v.path: v for v in model.trainable_variables}
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients([(grads[k] / 1.0, v) for k, v in variables.items()])
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return step


def test_make_train_step_rejects_hand_gradients_beside_a_tape_of_the_loss_that_agrees():
    text = fails(checks.check_make_train_step, make_train_step_by_hand_beside_a_tape_of_the_loss,
                 "M21", says="are not the ones tape.gradient returned for the loss")
    assert "let the optimizer apply them" in " ".join(text.split())


def make_train_step_one_gradient_call_per_variable(model, optimizer, loss_fn, loss_metric,
                                                   acc_metric):
    """Correct, written differently (a red-team round refused it): a persistent tape asked once
    per variable."""
    @tf.function
    def step(x, y):
        with tf.GradientTape(persistent=True) as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = [tape.gradient(loss, v) for v in model.trainable_variables]
        del tape
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        loss_metric.update_state(loss)
        acc_metric.update_state(y, logits)
        return loss
    return step


def test_make_train_step_accepts_the_tapes_gradients_however_they_are_held(capsys):
    checks.check_make_train_step(make_train_step_scaled_gradients_as_a_dict)
    checks.check_make_train_step(step_with_apply)
    checks.check_make_train_step(make_train_step_one_gradient_call_per_variable)
    assert capsys.readouterr().out.count("1 case passed") == 3


# ------------------------------------------------------------------ Keras' own loop, however reached (#28)

def _keras_original(name):
    """Keras' own method ``name``, as the checks' class-level wrapper holds it: what a reference
    saved before the checks were imported (a cell above the set-up cell) would be."""
    klass = next(k for k in tf.keras.Model.__mro__ if name in vars(k))
    return next(c.cell_contents for c in vars(klass)[name].__closure__
                if callable(c.cell_contents))


def fit_through_keras_originals(model, optimizer, train_ds, val_ds, epochs):
    """Issue 28: Keras' compile() and fit() from the originals, with the originals of the
    methods fit calls put on the model (so no wrapped method runs), and the compiled state
    reset afterwards."""
    originals = {name: _keras_original(name) for name in checks.KERAS_TRAINING}
    for name in ("make_train_function", "train_step"):
        object.__setattr__(model, name, types.MethodType(originals[name], model))
    originals["compile"](model, optimizer=optimizer,
                         loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                         metrics=[tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    history = originals["fit"](model, train_ds, validation_data=val_ds, epochs=epochs,
                               verbose=0).history
    _forget_keras(model)
    for name in ("make_train_function", "train_step"):
        object.__delattr__(model, name)
    return {k: [float(v) for v in history[k]] for k in ("loss", "accuracy", "val_loss",
                                                       "val_accuracy")}


def test_fit_rejects_keras_fit_reached_through_its_originals():
    # No wrapper of Keras' methods runs; the optimizer given, wrapped by the check on the
    # instance, is stepped from inside Keras' train step.
    fails(checks.check_fit, fit_through_keras_originals, "M21", says="not the custom training loop")


def test_the_check_sees_no_keras_step_in_a_custom_loop():
    seen = []
    model, optimizer = build_model(), tf.keras.optimizers.SGD(0.1)
    checks._watch_keras_steps(optimizer, seen)
    step = make_train_step(model, optimizer, tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), tf.keras.metrics.Mean(), tf.keras.metrics.SparseCategoricalAccuracy())
    step(tf.zeros((4, 64)), tf.constant([0, 1, 2, 3]))
    assert seen == [] and int(optimizer.iterations.numpy()) == 1


def test_fit_rejects_hand_gradients_beside_a_tape_of_the_loss_that_agrees():
    # Issue 28: the rule run hands every tape result back shifted by FIT_RULE["shift"]; the
    # grader replays the optimizer on the shifted gradients, which gradients by hand never are.
    text = fails(checks.check_fit, _fit_with_step(make_train_step_by_hand_beside_a_tape_of_the_loss),
                 "M21", says="not what the optimizer given makes from the gradients of the loss")
    assert "no update by hand beside it" in " ".join(text.split())


@pytest.mark.parametrize("factory", [make_train_step_scaled_gradients_as_a_dict, make_train_step])
def test_fit_accepts_the_tapes_gradients_however_they_are_held(factory, capsys):
    checks.check_fit(_fit_with_step(factory))
    assert "fit: 1 case passed" in capsys.readouterr().out


def test_grading_rejects_issue_28s_training_decoys_and_keras_originals():
    message = grading_message("check_make_train_step",
                              (make_train_step_by_hand_beside_a_tape_of_the_loss,), TRAIN_HIDDEN)
    assert message.startswith("[M21: the right numbers without the idea] make_train_step "
                              "(hidden case 1)") and "tape.gradient returned" in message
    message = grading_message("check_fit",
                              (_fit_with_step(make_train_step_by_hand_beside_a_tape_of_the_loss),),
                              [(1, 3, 600)])
    assert "[M21:" in message and "no update by hand beside it" in message
    message = grading_message("check_fit", (fit_through_keras_originals,), [(1, 3, 600)])
    assert "[M21:" in message and "custom training loop" in message
