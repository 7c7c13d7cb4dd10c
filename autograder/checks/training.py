"""Checks of assignment 06, the custom training loop on scikit-learn's 8x8 digits: the ``tf.data``
pipeline, the Keras model, the ``tf.function`` train and evaluation steps, the epoch loop, and the
final accuracy.

Each check builds its own inputs (synthetic data whose rows carry their index, a small Keras model
made by the check, a fixed split of the digits), so an exercise is graded on its own: a wrong
pipeline does not cost the points of the train step. Reference values come from mathematics:
the update of plain SGD (``w - lr * gradient``, gradients by automatic differentiation), the mean
cross-entropy and the argmax accuracy computed in NumPy.

Signatures follow ``check_<name>(fn, cases=None, hidden=False)``; failing raises
:class:`~autograder.checks.compare.CheckFailed`, passing prints one line.
"""
from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from .compare import CheckFailed, assert_close, case_label, fail, passed, to_numpy
from .harness import call, check, is_tf_function

__all__ = [
    "check_make_pipeline",
    "check_build_model",
    "check_make_train_step",
    "check_make_eval_step",
    "check_fit",
    "check_final_model",
]

NUM_FEATURES = 64
NUM_CLASSES = 10


# ----------------------------------------------------------------------------- helpers
def _indexed_data(n: int, seed: int):
    """Features whose every entry equals the row index (float64, as NumPy gives) and labels
    ``index % 10`` (int64), so a batch tells which rows it holds."""
    x = np.repeat(np.arange(n, dtype=np.float64)[:, None], NUM_FEATURES, axis=1)
    y = (np.arange(n) + seed) % NUM_CLASSES
    return x, y.astype(np.int64)


def _dataset_classes(dataset) -> list[str]:
    """Class names of a dataset and of the datasets it was built from (TF 2.21 internals,
    used only to find a prefetch stage; an empty list when they cannot be read)."""
    names = []
    try:
        while dataset is not None and len(names) < 50:
            names.append(type(dataset).__name__)
            dataset = getattr(dataset, "_input_dataset", None)
    except Exception:  # pragma: no cover - internals changed
        return []
    return names


def _small_model(seed: int, hidden: int = 16):
    """A small Keras model made by the check (Glorot-initialised, fixed by ``seed``): logits of 10
    classes from 64 features."""
    init = tf.keras.initializers.GlorotUniform(seed=seed)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(NUM_FEATURES,)),
        tf.keras.layers.Dense(hidden, activation="relu", kernel_initializer=init),
        tf.keras.layers.Dense(NUM_CLASSES, kernel_initializer=init),
    ])
    return model


def _batch(seed: int, n: int):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, NUM_FEATURES)).astype(np.float32)
    y = rng.integers(0, NUM_CLASSES, n).astype(np.int32)
    return x, y


def _cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean sparse softmax cross-entropy in float64 NumPy (log-sum-exp, shifted for stability)."""
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), labels].mean())


def _accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def _new_metrics():
    return (tf.keras.metrics.Mean(name="loss"),
            tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy"))


def _loss_fn():
    return tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


# ------------------------------------------------------------------- 1. the pipeline
def _pipeline_cases():
    # (number of examples, batch size, seed of the labels)
    return [(50, 8, 0)]


@check("make_pipeline")
def check_make_pipeline(fn, cases=None, hidden=False):
    """Check ``fn(x, y, batch_size, training) -> tf.data.Dataset`` of ``(features, labels)`` batches.

    Each case feeds float64 features whose entries equal the row index (as NumPy arrays come from
    scikit-learn) and int64 labels, then reads the dataset: float32 features of shape
    ``(None, 64)``, integer labels ``(None,)``, every example exactly once per epoch, full batches
    but the last; with ``training=True`` shuffled before batching and in a new order every epoch;
    with ``training=False`` in the original order; a prefetch stage at the end.

    Args:
        fn: the student's function.
        cases: list of ``(n, batch_size, seed)``.
    """
    __tracebackhide__ = True
    cases = _pipeline_cases() if cases is None else cases
    for index, (n, batch_size, seed) in enumerate(cases):
        label = case_label(f"n = {n}, batch_size = {batch_size}", hidden, index)
        x, y = _indexed_data(n, seed)
        for training in (False, True):
            what = f"make_pipeline(..., training={training}) for {label}"
            dataset = call(fn, x.copy(), y.copy(), batch_size, training, what=what)
            if not isinstance(dataset, tf.data.Dataset):
                fail(f"{what} should return a tf.data.Dataset, got {type(dataset).__name__}.")
            spec = dataset.element_spec
            if not isinstance(spec, tuple) or len(spec) != 2:
                fail(f"{what} should give (features, labels) pairs: build it with "
                     "tf.data.Dataset.from_tensor_slices((x, y)).")
            x_spec, y_spec = spec
            if x_spec.shape.rank == 1:
                fail(f"{what} gives single examples of shape {x_spec.shape}, not batches: "
                     "add .batch(batch_size).")
            if x_spec.dtype != tf.float32:
                fail(f"{what} gives features of dtype {x_spec.dtype.name}; Keras layers compute "
                     "in float32: convert with x.astype('float32') (or tf.cast) first.")
            if not y_spec.dtype.is_integer:
                fail(f"{what} gives labels of dtype {y_spec.dtype.name}; they should stay "
                     "integers for SparseCategoricalCrossentropy.")
            if x_spec.shape.as_list() != [None, NUM_FEATURES]:
                fail(f"{what} gives feature batches of shape {x_spec.shape}, expected "
                     f"(None, {NUM_FEATURES}); keep the last, smaller batch (no drop_remainder).")
            epochs = []
            for _ in range(2):
                ids, sizes = [], []
                for x_batch, y_batch in dataset:
                    rows = x_batch.numpy()[:, 0].astype(int)
                    if not np.array_equal(y_batch.numpy(), y[rows]):
                        fail(f"{what}: labels no longer match their features; shuffle the "
                             "(x, y) pairs together, in one dataset.")
                    ids.append(rows)
                    sizes.append(len(rows))
                epochs.append((np.concatenate(ids) if ids else np.array([], int), sizes))
            order, sizes = epochs[0]
            if training and len(sizes) > 1 and not np.array_equal(order, np.arange(n)) and all(
                    np.array_equal(np.sort(block), np.arange(block.min(), block.min() + len(block)))
                    for block in np.split(order, np.cumsum(sizes)[:-1])):
                fail(f"{what}: each batch holds consecutive examples, so only the order of "
                     "the batches is shuffled. Shuffle before batching: "
                     ".shuffle(len(x)).batch(batch_size).")
            if sorted(order.tolist()) != list(range(n)):
                fail(f"{what}: one epoch should hold each of the {n} examples exactly once, got "
                     f"{len(order)} examples ({len(set(order.tolist()))} different).")
            want_sizes = [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])
            if sizes != want_sizes:
                fail(f"{what}: expected {math.ceil(n / batch_size)} batches of sizes "
                     f"{want_sizes}, got sizes {sizes}.")
            identity = np.arange(n)
            if not training and not np.array_equal(order, identity):
                fail(f"{what} changed the order of the examples: shuffle only when training is "
                     "True (evaluation data stays in order).")
            if training:
                if np.array_equal(order, identity):
                    fail(f"{what} is not shuffled: add .shuffle(len(x)) before .batch when "
                         "training is True.")
                if np.array_equal(order, epochs[1][0]):
                    fail(f"{what} gives the same order in every epoch: keep the default "
                         "reshuffle_each_iteration=True.")
            classes = _dataset_classes(dataset)
            if classes and not any("Prefetch" in name for name in classes[:2]):
                fail(f"{what} has no prefetch stage at the end: add "
                     ".prefetch(tf.data.AUTOTUNE) after .batch.")
    passed("make_pipeline", len(cases))


# ---------------------------------------------------------------------- 2. the model
@check("build_model")
def check_build_model(fn, cases=None, hidden=False):
    """Check ``fn() -> tf.keras.Model`` mapping ``(batch, 64)`` float32 features to ``(batch, 10)``
    float32 **logits** (no softmax: the loss uses ``from_logits=True``), a new model with its own
    weights on every call.

    Args:
        fn: the student's function.
        cases: list of batch sizes to feed (default ``[5]``).
    """
    __tracebackhide__ = True
    cases = [5] if cases is None else cases
    first = call(fn, what="build_model()")
    second = call(fn, what="build_model()")
    for model in (first, second):
        if not isinstance(model, tf.keras.Model):
            fail(f"build_model should return a tf.keras.Model, got {type(model).__name__}.")
    for index, batch in enumerate(cases):
        label = case_label(f"a batch of {batch}", hidden, index)
        x = np.random.default_rng(index).uniform(0, 1, (batch, NUM_FEATURES)).astype(np.float32)
        out = to_numpy(call(first, x, what=f"the model built by build_model, called on {label}"),
                       f"the model's output for {label}")
        if out.shape != (batch, NUM_CLASSES):
            fail(f"the model's output for {label} should have shape ({batch}, {NUM_CLASSES}), "
                 f"got {out.shape}: the last layer needs {NUM_CLASSES} units, one per digit.")
        if out.dtype != np.float32:
            fail(f"the model's output for {label} should be float32, got {out.dtype}.")
        if np.all(out >= 0) and np.allclose(out.sum(axis=1), 1.0, atol=1e-4):
            fail(f"the model's outputs for {label} are probabilities (rows sum to 1): remove the "
                 "softmax from the last layer; the loss applies it (from_logits=True).")
    if not first.trainable_variables:
        fail("the model has no trainable weights.")
    ids = {id(v) for v in first.trainable_variables}
    if first is second or ids & {id(v) for v in second.trainable_variables}:
        fail("build_model returned the same model (or shared weights) twice: create the layers "
             "inside build_model, so each call gives a fresh model.")
    passed("build_model", len(cases))


# ----------------------------------------------------------------- 3. the train step
def _train_cases():
    # (seed, batch size, learning rate of SGD, steps)
    return [(0, 32, 0.5, 3)]


@check("make_train_step")
def check_make_train_step(fn, cases=None, hidden=False):
    """Check ``fn(model, optimizer, loss_fn, loss_metric, acc_metric) -> train_step`` where
    ``train_step(x, y)`` is a ``tf.function`` that runs one update and returns the batch loss.

    The check gives a small Keras model, plain SGD (so the update must be exactly
    ``w - lr * gradient``), ``SparseCategoricalCrossentropy(from_logits=True)`` and the metrics
    ``Mean`` / ``SparseCategoricalAccuracy``; it calls the step several times as a graph and checks
    after each call the returned loss (NumPy cross-entropy at the weights before the update), the
    updated weights and the metrics (running mean of the losses, accuracy of the batches seen).

    Args:
        fn: the student's factory.
        cases: list of ``(seed, batch_size, learning_rate, steps)``.
    Mistakes named: when the optimizer gets no gradients, the cause found by tracing the step
    again on a fresh model (M05 loss outside the tape, M12 op without gradient, M13
    tf.stop_gradient, M14 NumPy); M07 (a variable, e.g. a new optimizer or metric, created
    inside the tf.function).
    """
    __tracebackhide__ = True
    cases = _train_cases() if cases is None else cases
    for index, (seed, batch, lr, steps) in enumerate(cases):
        label = case_label(f"seed {seed}, batch {batch}, SGD({lr})", hidden, index)
        model = _small_model(seed)
        optimizer = tf.keras.optimizers.SGD(learning_rate=lr)
        loss_metric, acc_metric = _new_metrics()
        step = call(fn, model, optimizer, _loss_fn(), loss_metric, acc_metric,
                    what=f"make_train_step ({label})")
        if not is_tf_function(step):
            fail("make_train_step should return a function decorated with @tf.function.",
                 fix="define `@tf.function def train_step(x, y): ...` inside and return it.")
        seen_losses, seen_hits, seen_n = [], 0, 0
        for n_call in range(steps):
            x, y = _batch(1000 * seed + n_call, batch)
            weights = [v.numpy().astype(np.float64) for v in model.trainable_variables]
            with tf.GradientTape() as tape:
                logits_tf = model(x)
                loss_tf = _loss_fn()(y, logits_tf)
            grads = [g.numpy() for g in tape.gradient(loss_tf, model.trainable_variables)]
            logits = logits_tf.numpy()
            want_loss = _cross_entropy(logits, y)
            loss = call(step, tf.constant(x), tf.constant(y),
                        what=f"the train_step made by make_train_step ({label})",
                        rerun=lambda seed=seed, lr=lr, x=x, y=y: _fresh_train_step(
                            fn, seed, lr)(tf.constant(x), tf.constant(y)))
            if loss is None:
                fail("train_step should return the batch loss, got None.")
            loss_np = to_numpy(loss, "the loss returned by train_step")
            if loss_np.size != 1:
                fail(f"train_step should return the mean loss of the batch (one number), got "
                     f"shape {loss_np.shape}.")
            if not np.isclose(float(loss_np.reshape(())), want_loss, rtol=1e-4, atol=1e-5):
                fail(f"train_step returned the loss {float(loss_np.reshape(())):.5f} in call "
                     f"{n_call + 1} for {label}; the cross-entropy of the batch before the update "
                     f"is {want_loss:.5f}. Use loss_fn(y, logits) with the logits of "
                     "model(x) computed on the tape.")
            after = [v.numpy().astype(np.float64) for v in model.trainable_variables]
            if all(np.array_equal(a, w) for a, w in zip(after, weights)):
                fail(f"the model's weights did not change after train_step ({label}): the "
                     "parameters never update. Call optimizer.apply_gradients(zip(grads, "
                     "model.trainable_variables)).")
            for v, a, w, g in zip(model.trainable_variables, after, weights, grads):
                want = w - lr * g
                if not np.allclose(a, want, rtol=1e-4, atol=1e-5):
                    if np.allclose(a, w + lr * g, rtol=1e-4, atol=1e-5):
                        fail(f"{v.name} moved uphill ({label}): apply the gradients of the loss "
                             "itself (not of -loss).")
                    fail(f"{v.name} after one SGD step ({label}) should be w - lr * gradient of "
                         "the batch loss; it is not. Take the gradients of the loss with respect "
                         "to model.trainable_variables and apply them once per step.")
            seen_losses.append(want_loss)
            seen_hits += int(np.sum(np.argmax(logits, axis=1) == y))
            seen_n += batch
            got_metric = float(loss_metric.result())
            if got_metric == 0.0:
                fail("loss_metric was never updated: call loss_metric.update_state(loss) in "
                     "train_step.")
            if not np.isclose(got_metric, np.mean(seen_losses), rtol=1e-4, atol=1e-5):
                fail(f"loss_metric after {n_call + 1} calls should be the mean of the batch losses, "
                     f"{np.mean(seen_losses):.5f}, got {got_metric:.5f}: call "
                     "loss_metric.update_state(loss) once per step.")
            got_acc = float(acc_metric.result())
            want_acc = seen_hits / seen_n
            if not np.isclose(got_acc, want_acc, atol=1e-6):
                if got_acc == 0 and want_acc > 0:
                    fail("acc_metric was never updated: call acc_metric.update_state(y, logits) "
                         "in train_step.")
                fail(f"acc_metric after {n_call + 1} calls should be {want_acc:.4f}, got "
                     f"{got_acc:.4f}: call acc_metric.update_state(y, logits) (labels first) "
                     "with the logits computed before the update.")
    passed("make_train_step", len(cases))


def _fresh_train_step(fn, seed, lr):
    """The student's train step on a new model, optimizer and metrics (for a diagnosis)."""
    return fn(_small_model(seed), tf.keras.optimizers.SGD(learning_rate=lr), _loss_fn(),
              *_new_metrics())


# ------------------------------------------------------------------ 4. the eval step
def _eval_cases():
    return [(1, 40, 2)]


@check("make_eval_step")
def check_make_eval_step(fn, cases=None, hidden=False):
    """Check ``fn(model, loss_fn, loss_metric, acc_metric) -> eval_step`` where
    ``eval_step(x, y)`` is a ``tf.function`` that updates the metrics with the batch's loss and
    accuracy, returns the batch loss and never changes the weights.

    Args:
        fn: the student's factory.
        cases: list of ``(seed, batch_size, calls)``.
    """
    __tracebackhide__ = True
    cases = _eval_cases() if cases is None else cases
    for index, (seed, batch, calls) in enumerate(cases):
        label = case_label(f"seed {seed}, batch {batch}", hidden, index)
        model = _small_model(seed + 100)
        loss_metric, acc_metric = _new_metrics()
        step = call(fn, model, _loss_fn(), loss_metric, acc_metric,
                    what=f"make_eval_step ({label})")
        if not is_tf_function(step):
            fail("make_eval_step should return a function decorated with @tf.function.",
                 fix="define `@tf.function def eval_step(x, y): ...` inside and return it.")
        weights = [v.numpy().copy() for v in model.trainable_variables]
        losses, hits, n = [], 0, 0
        for n_call in range(calls):
            x, y = _batch(2000 + 100 * seed + n_call, batch)
            logits = model(x).numpy()
            loss = call(step, tf.constant(x), tf.constant(y),
                        what=f"the eval_step made by make_eval_step ({label})")
            want_loss = _cross_entropy(logits, y)
            if loss is None:
                fail("eval_step should return the batch loss, got None.")
            assert_close(to_numpy(loss, "loss").reshape(()), want_loss,
                         f"the loss returned by eval_step for {label}", rtol=1e-4, atol=1e-5)
            losses.append(want_loss)
            hits += int(np.sum(np.argmax(logits, axis=1) == y))
            n += batch
            if any(not np.array_equal(v.numpy(), w)
                   for v, w in zip(model.trainable_variables, weights)):
                fail("eval_step changed the model's weights: evaluation only measures; no "
                     "gradients, no optimizer.")
            assert_close(float(loss_metric.result()), np.mean(losses),
                         f"loss_metric after {n_call + 1} calls of eval_step ({label}); call "
                         "loss_metric.update_state(loss)", rtol=1e-4, atol=1e-5)
            got_acc = float(acc_metric.result())
            if not np.isclose(got_acc, hits / n, atol=1e-6):
                if float(acc_metric.count) == 0:
                    fail("acc_metric was never updated: call acc_metric.update_state(y, logits) "
                         "in eval_step.")
                fail(f"acc_metric after {n_call + 1} calls of eval_step ({label}) should be "
                     f"{hits / n:.4f}, got {got_acc:.4f}: call acc_metric.update_state(y, logits), "
                     "labels first.")
    passed("make_eval_step", len(cases))


# ---------------------------------------------------------------------- 5. the loop
def _fit_cases():
    # (seed of model and data, epochs, training examples used)
    return [(0, 2, 400)]


@check("fit")
def check_fit(fn, cases=None, hidden=False):
    """Check ``fn(model, optimizer, train_ds, val_ds, epochs) -> history`` on the digits.

    The check trains its own small model with Adam on part of the digits' training split for a
    few epochs, then asks: ``history`` holds lists ``"loss"``, ``"accuracy"``, ``"val_loss"``,
    ``"val_accuracy"`` of one number per epoch; the training loss fell; the last
    ``val_loss`` / ``val_accuracy`` equal the final model's cross-entropy and accuracy on the
    validation set (computed here in NumPy), which holds only when the metrics are reset at the
    start of every epoch.

    Args:
        fn: the student's function.
        cases: list of ``(seed, epochs, n_train)``.
    Mistakes named: those of the train step that ``fit`` builds (M05, M07, M12, M13, ...),
    found by running ``fit`` again as a graph for one batch.
    """
    __tracebackhide__ = True
    from utils.data import load_digits_splits, make_dataset

    cases = _fit_cases() if cases is None else cases
    for index, (seed, epochs, n_train) in enumerate(cases):
        label = case_label(f"seed {seed}, {epochs} epochs", hidden, index)
        splits = load_digits_splits(seed=seed)
        train_ds = make_dataset(splits.x_train[:n_train], splits.y_train[:n_train], 32,
                                shuffle=True, seed=seed)
        val_ds = make_dataset(splits.x_val, splits.y_val, 64)
        model = _small_model(seed, hidden=32)
        optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
        start_weights = [v.numpy().copy() for v in model.trainable_variables]
        small_ds = train_ds.take(1)
        history = call(fn, model, optimizer, train_ds, val_ds, epochs, what=f"fit ({label})",
                       rerun=lambda seed=seed: fn(_small_model(seed, hidden=32),
                                                  tf.keras.optimizers.Adam(learning_rate=0.01),
                                                  small_ds, small_ds, 1))
        if not isinstance(history, dict):
            fail(f"fit should return a dict of lists, got {type(history).__name__}.")
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            if key not in history:
                fail(f"the history returned by fit has no key {key!r} (keys: {sorted(history)}).")
            if len(history[key]) != epochs:
                fail(f"history[{key!r}] should hold one number per epoch ({epochs}), got "
                     f"{len(history[key])} values ({label}).")
        values = {k: [float(to_numpy(v, f"history[{k!r}]").reshape(())) for v in history[k]]
                  for k in ("loss", "accuracy", "val_loss", "val_accuracy")}
        if all(np.array_equal(v.numpy(), w)
               for v, w in zip(model.trainable_variables, start_weights)):
            fail(f"the model's weights did not change during fit ({label}): call the train step "
                 "on every batch of train_ds.")
        if not values["loss"][-1] < values["loss"][0]:
            fail(f"the training loss did not fall over {epochs} epochs ({label}): "
                 f"{np.round(values['loss'], 4).tolist()}.")
        logits = model(splits.x_val).numpy()
        want_loss, want_acc = _cross_entropy(logits, splits.y_val), _accuracy(logits, splits.y_val)
        # A Mean metric fed one loss per batch averages the batch means (the smaller last batch
        # weighs as much as the others); accept that as well as the mean over examples.
        batch_means = np.mean([_cross_entropy(model(xb).numpy(), yb.numpy()) for xb, yb in val_ds])
        loss_ok = any(np.isclose(values["val_loss"][-1], want, rtol=1e-4, atol=1e-5)
                      for want in (want_loss, batch_means))
        if not np.isclose(values["val_accuracy"][-1], want_acc, atol=1e-6) or not loss_ok:
            fail(f"the last epoch's validation values ({label}) should describe the final model "
                 f"on the validation set: val_loss {want_loss:.4f}, val_accuracy {want_acc:.4f}; "
                 f"got {values['val_loss'][-1]:.4f} and {values['val_accuracy'][-1]:.4f}. Reset "
                 "every metric (metric.reset_state()) at the start of each epoch, and evaluate "
                 "on all of val_ds after training the epoch.")
        for key in ("accuracy", "val_accuracy"):
            if not all(0.0 <= v <= 1.0 for v in values[key]):
                fail(f"history[{key!r}] should hold fractions in [0, 1], got {values[key]}.")
    passed("fit", len(cases))


# --------------------------------------------------------------- 6. the final model
@check("final model")
def check_final_model(model, x, y, threshold: float = 0.90, hidden: bool = False, retrain=None):
    """Check that a trained model classifies ``x`` (float32 ``(n, 64)``) with accuracy at least
    ``threshold`` against the int labels ``y`` ``(n,)``; the accuracy is computed here
    (argmax of the model's outputs), not taken from the notebook.

    Args:
        model: the trained Keras model, or None when the cell that trains it failed (the
            notebook sets ``model = None`` first in that cell).
        retrain: a function of no arguments that runs that cell's training again; called only
            when ``model`` is None, to say why the training failed.
    Raises:
        CheckFailed: the training cell failed (with its error), or the accuracy is too low.
    """
    __tracebackhide__ = True
    if model is None:
        why = ""
        if retrain is not None:
            try:
                call(retrain, what="train_final_model(train_ds, val_ds)")
                why = " (it works now: run that cell again)"
            except CheckFailed as error:
                why = f". Its error: {error.cause}"
        fail(f"there is no trained model: the cell that runs `model, history = "
             f"train_final_model(train_ds, val_ds)` failed{why}",
             fix="fix the error shown under that cell, run it until it finishes, then run the "
                 "checks again.")
    if not isinstance(model, tf.keras.Model):
        fail(f"expected the trained Keras model, got {type(model).__name__}.")
    logits = to_numpy(call(model, np.asarray(x, np.float32), what="the trained model"),
                      "the model's output")
    if logits.shape != (len(y), NUM_CLASSES):
        fail(f"the model's output should have shape ({len(y)}, {NUM_CLASSES}), got {logits.shape}.")
    accuracy = _accuracy(logits, np.asarray(y))
    where = "the held-out examples" if hidden else f"these {len(y)} examples"
    if accuracy < threshold:
        fail(f"the model's accuracy on {where} is {accuracy:.3f}, below the required "
             f"{threshold:.2f}.",
             fix="check that the loss fell during training (plot the history), then train for "
                 "more epochs or with another learning rate.")
    print(f"\u2714 final model: accuracy {accuracy:.3f} >= {threshold:.2f} on {where}")
