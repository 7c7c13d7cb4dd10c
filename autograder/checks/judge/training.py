"""Grader halves of the checks of assignment 06, the custom training loop (NumPy only).

Each judge takes a case, the observations of the kernel half (``autograder/checks/training.py``)
and a :class:`~autograder.checks.judge.Context`. References come from mathematics, here: the
forward pass, cross-entropy and backpropagation of the checks' small two-layer network in
float64 NumPy (plain SGD: ``w - lr * gradient``), the argmax accuracy, and the labels of the
digits split, which the grader makes itself (:func:`digits_split`, scikit-learn's bundled digits
and its stratified split, no TensorFlow): labels a notebook passes are never used.

The inputs the kernel half feeds the student's code (initial weights, batches) are made by the
functions of this module too (:func:`small_model_weights`, :func:`random_batch`), from the
case's seeds: inputs, not references, so both halves make the same ones.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import exercise

MODULE = "autograder.checks.training"

NUM_FEATURES = 64
NUM_CLASSES = 10
#: Batch size of the training data of the fit check (``utils.data.make_dataset``).
FIT_BATCH = 32
#: Batch size of the validation data of the fit check.
FIT_VAL_BATCH = 64
#: The fit check's second run, which the grader replays step by step: a small network (its
#: weights :func:`small_model_weights` of the case's seed plus ``seed_offset``), SGD with this
#: learning rate and momentum, ``epochs`` passes over the batches of :func:`fit_rule_data`.
FIT_RULE = {"lr": 0.1, "momentum": 0.9, "epochs": 2, "batches": 2, "hidden": 8,
            "seed_offset": 7, "shift": 0.6180339887}
# "shift": in that run every gradient a tape returns is handed back with this constant added, so
# the updates the optimizer makes from the tape's results are those of gradients + shift, and
# gradients computed beside an unused tape.gradient (equal to its unshifted values) are not.

CUSTOM_LOOP = "the custom training loop"
KERAS_FIT = ("Keras' compile()/fit() trained the model, not " + CUSTOM_LOOP)


# ----------------------------------------------------------------------------- data

@functools.lru_cache(maxsize=8)
def _digits_split(seed: int, val_fraction: float, test_fraction: float):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    held_out = val_fraction + test_fraction
    x_train, x_rest, y_train, y_rest = train_test_split(
        x, y, test_size=held_out, random_state=seed, stratify=y)
    x_val, x_test, y_val, y_test = train_test_split(
        x_rest, y_rest, test_size=test_fraction / held_out, random_state=seed, stratify=y_rest)
    arrays = {"x_train": x_train, "y_train": y_train, "x_val": x_val, "y_val": y_val,
              "x_test": x_test, "y_test": y_test}
    for array in arrays.values():
        array.setflags(write=False)
    return arrays


def digits_split(seed: int = 0, val_fraction: float = 0.15, test_fraction: float = 0.15) -> dict:
    """scikit-learn's 8x8 digits split into train, validation and test sets, stratified by label
    and fixed by ``seed`` (NumPy and scikit-learn only: the grader makes the labels it scores
    against with it, and :func:`utils.data.load_digits_splits` is made from it).

    Returns:
        a dict of fresh arrays ``x_train``, ``y_train``, ``x_val``, ``y_val``, ``x_test``,
        ``y_test``: float32 pixels in [0, 1] of shape ``(n, 64)``, int32 labels ``(n,)``.
    """
    arrays = _digits_split(int(seed), float(val_fraction), float(test_fraction))
    return {name: array.copy() for name, array in arrays.items()}


def _labels(seed: int, split: str) -> np.ndarray:
    return _digits_split(int(seed), 0.15, 0.15)[f"y_{split}"]


def small_model_weights(seed: int, hidden: int = 16) -> list:
    """Initial weights ``[kernel 64 x hidden, bias, kernel hidden x 10, bias]`` (float32) of the
    checks' small network ``Dense(hidden, relu) -> Dense(10)``: Glorot-uniform kernels and small
    biases from ``seed``."""
    rng = np.random.default_rng([int(seed), 6])
    weights = []
    for fan_in, fan_out in ((NUM_FEATURES, hidden), (hidden, NUM_CLASSES)):
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        weights.append(rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32))
        weights.append(rng.uniform(-0.1, 0.1, (fan_out,)).astype(np.float32))
    return weights


def random_batch(seed: int, n: int):
    """A batch of the train and evaluation step checks: float32 features in [0, 1) of shape
    ``(n, 64)`` and int32 labels ``(n,)``, from ``seed``."""
    rng = np.random.default_rng(int(seed))
    x = rng.uniform(0, 1, (n, NUM_FEATURES)).astype(np.float32)
    y = rng.integers(0, NUM_CLASSES, n).astype(np.int32)
    return x, y


def train_step_batch(seed: int, batch: int, call: int):
    """The batch of call ``call`` (0-based) of a make_train_step case."""
    return random_batch(1000 * int(seed) + call, batch)


def eval_step_batch(seed: int, batch: int, call: int):
    """The batch of call ``call`` (0-based) of a make_eval_step case."""
    return random_batch(2000 + 100 * int(seed) + call, batch)


def fit_rule_data(seed: int):
    """The training batches of the fit check's second run, in order: the first
    ``FIT_RULE["batches"] * FIT_BATCH`` examples of the digits' training split of ``seed``
    (float32 features, int32 labels)."""
    split = _digits_split(int(seed), 0.15, 0.15)
    n = FIT_RULE["batches"] * FIT_BATCH
    return split["x_train"][:n].copy(), split["y_train"][:n].copy()


def sgd_momentum_replay(weights, x, y, *, lr: float, momentum: float, epochs: int,
                        batch: int, shift: float = 0.0):
    """``(weights, slots)`` after ``epochs`` passes of Keras' SGD with momentum (``m = momentum
    * m - lr * g``, ``w = w + m``) over the batches of ``(x, y)`` in order, the gradients
    those of the small network's mean cross-entropy (float64), each entry plus ``shift``."""
    weights = [np.asarray(w, dtype=np.float64) for w in weights]
    slots = [np.zeros_like(w) for w in weights]
    for _ in range(int(epochs)):
        for start in range(0, len(y), batch):
            _, _, grads = loss_and_gradients(weights, x[start:start + batch],
                                             y[start:start + batch])
            slots = [momentum * m - lr * (g + shift) for m, g in zip(slots, grads)]
            weights = [w + m for w, m in zip(weights, slots)]
    return weights, slots


def indexed_labels(n: int, seed: int) -> np.ndarray:
    """Labels of the pipeline check's data: row ``i`` (whose features all equal ``i``) has label
    ``(i + seed) % 10``."""
    return (np.arange(n) + seed) % NUM_CLASSES


# ----------------------------------------------------------------------------- mathematics

def cross_entropy(logits, labels) -> float:
    """Mean sparse softmax cross-entropy (float64, log-sum-exp shifted for stability)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), np.asarray(labels)].mean())


def forward(weights, x):
    """``(z1, a1, logits)`` of ``Dense(relu) -> Dense`` in float64."""
    k1, b1, k2, b2 = (np.asarray(w, dtype=np.float64) for w in weights)
    z1 = np.asarray(x, dtype=np.float64) @ k1 + b1
    a1 = np.maximum(z1, 0.0)
    return z1, a1, a1 @ k2 + b2


def loss_and_gradients(weights, x, y):
    """``(loss, logits, gradients)`` of the mean cross-entropy of the small network on one batch,
    by backpropagation (float64); the gradients in the order of ``weights``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y)
    k2 = np.asarray(weights[2], dtype=np.float64)
    z1, a1, logits = forward(weights, x)
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    d_logits = probs
    d_logits[np.arange(len(y)), y] -= 1.0
    d_logits /= len(y)
    d_z1 = (d_logits @ k2.T) * (z1 > 0)
    grads = [x.T @ d_z1, d_z1.sum(axis=0), a1.T @ d_logits, d_logits.sum(axis=0)]
    return cross_entropy(logits, y), logits, grads


def hits(logits, labels) -> int:
    """How many rows' argmax is the label."""
    return int(np.sum(np.argmax(logits, axis=1) == np.asarray(labels)))


VARIABLES = ("the first layer's kernel", "the first layer's bias", "the last layer's kernel",
             "the last layer's bias")


def _scalar(ctx, value, part: str) -> float:
    """A scalar observation (one number of any shape) as a float; fails otherwise."""
    if value is None:
        ctx.fail(f"{ctx.what}{part} is None.", code="none")
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.number) or array.size != 1:
        ctx.fail(f"{ctx.what}{part} should be one number.", code="type")
    return float(array.reshape(()))


# ----------------------------------------------------------------------------- predictions
# Two exercises (make_pipeline, make_train_step) are find-and-fix: the notebook gives a broken
# draft, the student predicts what it (or the fixed code) will do, runs a cell that shows it,
# then writes the fix. The kernel half passes the predicted values on as they are (plain data);
# the judge compares them with what TensorFlow does, known from its documented behaviour and
# the notebook's set-up, and answers a wrong one with the reason.

def _prediction_named(ctx, name: str) -> str:
    return f"{ctx.exercise}: your prediction {name}"


def _wrong_prediction(ctx, name: str, got, want, why: str, mistake: str | None = None,
                      fix: str | None = None) -> None:
    """Fail: the prediction ``name`` is not what happens; ``why`` says what does happen and why
    (it names no value of the student's; the values only when ``ctx.reveal``)."""
    __tracebackhide__ = True
    shown = f" (you predicted {got!r}; it is {want!r})" if ctx.reveal else ""
    ctx.fail(f"{_prediction_named(ctx, name)} is not what happens{shown}. {why}",
             mistake=mistake, code="wrong_prediction",
             fix=fix or "run the cell that shows it, read the explanation under it, and "
                        "correct your prediction.")


def _prediction_kind(ctx, name: str, value, kind: str) -> None:
    """Fail unless ``value`` is a plain Python value of ``kind``: ``"count"`` (an int >= 0),
    ``"bool"`` or ``"dtype"`` (a dtype's name, a str)."""
    __tracebackhide__ = True
    ok = {"count": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
          "bool": isinstance(value, bool),
          "dtype": isinstance(value, str) and len(value) <= 40}[kind]
    if not ok:
        wanted = {"count": "a whole number written down, such as 5",
                  "bool": "True or False",
                  "dtype": 'a dtype\'s name in quotes, such as "int32"'}[kind]
        ctx.fail(f"{_prediction_named(ctx, name)} should be {wanted} (a prediction is written "
                 "down before the cell that shows it runs, not measured by running code).",
                 fix=f"set `{name} = ...` in the prediction cell, then run that cell.",
                 code="prediction_type")


# ----------------------------------------------------------------------------- 1. pipeline

PIPELINE_IDEA = ("a tf.data pipeline makes the batches: from_tensor_slices((x, y)) of float32 "
                 "features, .shuffle before .batch for training data (new groups of examples "
                 "in every epoch), .prefetch at the end; the student predicts what the broken "
                 "draft (float64 features, shuffle after batch) gives, then fixes it.")

#: What the notebook's make_pipeline_draft (``from_tensor_slices((x, y)).batch(...)``, then
#: ``.shuffle`` when training) gives for NumPy float64 features: the predictions' reference,
#: from tf.data's documented behaviour (from_tensor_slices keeps the array's dtype; a shuffle
#: after batch reorders whole batches).
DRAFT_PIPELINE = {"dtype": "float64", "same_groups": True}


def _judge_pipeline_prediction(ctx, predicted) -> None:
    dtype, same = predicted["dtype"], predicted["same_groups"]
    _prediction_kind(ctx, "predicted_dtype", dtype, "dtype")
    _prediction_kind(ctx, "predicted_same_groups", same, "bool")
    if dtype.strip().lower().removeprefix("tf.").removeprefix("np.") != DRAFT_PIPELINE["dtype"]:
        _wrong_prediction(ctx, "predicted_dtype", dtype, DRAFT_PIPELINE["dtype"],
                          "from_tensor_slices keeps the dtype of the NumPy array it is given, "
                          "and NumPy's default float dtype is float64; Keras' layers compute "
                          "in float32, so the fixed pipeline converts first.")
    if same is not DRAFT_PIPELINE["same_groups"]:
        _wrong_prediction(ctx, "predicted_same_groups", same, DRAFT_PIPELINE["same_groups"],
                          "the draft batches first, so the shuffle's elements are whole batches: "
                          "it changes the order of the batches, never which examples share one. "
                          "Shuffling before batching regroups the examples every epoch.")


@exercise("make_pipeline", module=MODULE, cases=[(50, 8, 0)],
          label=lambda case: f"input n = {case[0]}, batch_size = {case[1]}",
          idea=PIPELINE_IDEA,
          kernel_evidence="the dataset's tf.data stages (read from its classes) and the batches "
                          "it gave when the kernel iterated it",
          findings={"not_dataset": ("{what} should return a tf.data.Dataset.",
                                    "return the tf.data.Dataset itself, built from the arrays "
                                    "with the pipeline's steps (read from_tensor_slices)."),
                    "not_pairs": ("{what} should give (features, labels) pairs.",
                                  "build it with tf.data from the arrays (read "
                                  "tf.data.Dataset.from_tensor_slices).")})
def make_pipeline(case, obs, ctx):
    """``obs``: ``{"eval": ..., "train": ...}``, each the observation of one call (training
    False / True): ``x_rank``, ``x_dtype``, ``y_dtype``, ``y_integer``, ``x_shape`` of the
    element spec, ``epochs`` (two lists of batches, each ``[rows, labels]``: the row index each
    feature row holds, and the labels; None when the spec cannot be read as batches),
    ``truncated`` (an epoch went on past the read limit), ``stages`` (class names, outermost
    first; empty when unreadable); ``prediction``: None (the check was not given the
    predictions) or ``{"dtype", "same_groups"}``, the student's predictions of what the
    notebook's draft gives (:data:`DRAFT_PIPELINE`), judged after the pipeline."""
    n, batch_size, seed = (int(v) for v in case)
    labels = indexed_labels(n, seed)
    for training in (False, True):
        _judge_pipeline(ctx, obs["train" if training else "eval"], training, n, batch_size,
                        labels)
    if obs["prediction"] is not None:
        _judge_pipeline_prediction(ctx, obs["prediction"])


def _judge_pipeline(ctx, seen, training, n, batch_size, labels):
    what = f"{ctx.what} with training={training}"
    reveal = ctx.reveal
    shows_inputs = reveal and not ctx.hidden
    if seen["x_rank"] == 1:
        fail_shape = f" of shape {seen['x_shape']}" if reveal else ""
        ctx.fail(f"{what} gives single examples{fail_shape}, not batches: add "
                 ".batch(batch_size).")
    if seen["x_dtype"] != "float32":
        got = f" of dtype {seen['x_dtype']}" if reveal else " that are not float32"
        ctx.fail(f"{what} gives features{got}: from_tensor_slices keeps the dtype of the "
                 "array it is given, and the model computes in float32.", mistake="M65",
                 fix="convert the features to float32 before slicing them into a dataset (or cast "
                     "them in a .map).")
    if seen["y_integer"] is not True:
        got = f" of dtype {seen['y_dtype']}" if reveal else " that are not integers"
        ctx.fail(f"{what} gives labels{got}; they should stay integers for "
                 "SparseCategoricalCrossentropy.")
    if seen["x_shape"] != [None, NUM_FEATURES]:
        got = f" of shape {tuple(seen['x_shape'])}" if reveal and isinstance(
            seen["x_shape"], list) else ""
        ctx.fail(f"{what} gives feature batches{got}, expected (None, {NUM_FEATURES}); keep the "
                 "last, smaller batch (no drop_remainder).")
    epochs = []
    for batches in seen["epochs"]:
        ids, sizes = [], []
        for rows, got_labels in batches:
            rows, got_labels = np.asarray(rows), np.asarray(got_labels)
            if (rows.ndim != 1 or got_labels.shape != rows.shape
                    or not np.issubdtype(rows.dtype, np.integer)
                    or np.any(rows < 0) or np.any(rows >= n)):
                ctx.fail(f"{what}: the feature rows are not the rows of x (each should be one "
                         "example of x, converted to float32, labels alongside).")
            if not np.array_equal(got_labels, labels[rows]):
                ctx.fail(f"{what}: labels no longer match their features; shuffle the (x, y) "
                         "pairs together, in one dataset.")
            ids.append(rows)
            sizes.append(len(rows))
        epochs.append((np.concatenate(ids) if ids else np.array([], int), sizes))
    order, sizes = epochs[0]
    if training and len(sizes) > 1 and not np.array_equal(order, np.arange(n)) and all(
            len(block) and np.array_equal(np.sort(block),
                                          np.arange(block.min(), block.min() + len(block)))
            for block in np.split(order, np.cumsum(sizes)[:-1])):
        ctx.fail(f"{what}: each batch holds consecutive examples, so only the order of the "
                 "batches is shuffled: the shuffle comes after the batch.", mistake="M66",
                 fix="shuffle before batching, over every example: shuffling after batch only "
                     "moves whole batches.")
    if seen["truncated"] or sorted(order.tolist()) != list(range(n)):
        got = (f", got {len(order)} examples ({len(set(order.tolist()))} different)"
               if shows_inputs and not seen["truncated"] else "")
        count = f" {n}" if shows_inputs else ""
        ctx.fail(f"{what}: one epoch should hold each of the{count} examples exactly once{got}.")
    want_sizes = [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])
    if sizes != want_sizes:
        detail = (f": expected {math.ceil(n / batch_size)} batches of sizes {want_sizes}, got "
                  f"sizes {sizes}" if shows_inputs else
                  ": batches of batch_size examples, the last one smaller")
        ctx.fail(f"{what} gives batches of the wrong sizes{detail}.")
    identity = np.arange(n)
    if not training and not np.array_equal(order, identity):
        ctx.fail(f"{what} changed the order of the examples: shuffle only when training is True "
                 "(evaluation data stays in order).")
    stages = [s for s in seen["stages"] if isinstance(s, str)]
    if training and (np.array_equal(order, identity) or np.array_equal(order, epochs[1][0])):
        _fixed_order(ctx, what, stages, shuffled=not np.array_equal(order, identity))
    if stages and not any("Prefetch" in name for name in stages[:2]):
        ctx.fail(f"{what} has no prefetch stage at the end: add .prefetch(tf.data.AUTOTUNE) after "
                 ".batch.")
    missing = [stage for stage, needed in (("batch", True), ("shuffle", training))
               if needed and not any(stage.title() in name for name in stages)]
    if stages and missing:
        ctx.fail(f"{what} gives the right batches, but tf.data did not make them: the pipeline "
                 f"has no {' and no '.join(missing)} stage (the batches came from Python or "
                 "NumPy code). The exercise is the tf.data pipeline.",
                 mistake="M21", code="not_tf_data",
                 fix="build it with tf.data from its own arrays: shuffled over every example "
                     "(training only) before it is batched, then prefetched.")


def _fixed_order(ctx, what: str, stages: list, shuffled: bool) -> None:
    """Fail (M29) for training data in one order every epoch, with the fix for what was
    written, read from the dataset's stages (class names, outermost first): no tf.data
    shuffle at all (the examples in x's order, or permuted once by NumPy), a shuffle whose
    buffer keeps the order, a cache after the shuffle, or reshuffle_each_iteration=False."""
    __tracebackhide__ = True
    shuffle = next((i for i, name in enumerate(stages) if "Shuffle" in name), None)
    order = ("is not shuffled" if not shuffled
             else "gives the same order of examples in every epoch")
    if not stages and shuffled:  # stages unreadable: both fixes
        ctx.fail(f"{what} {order}.", mistake="M29", code="same_order",
                 fix="shuffle in the tf.data pipeline, with a buffer as large as the data, before "
                     "batching, and leave its reshuffle_each_iteration at the default True.")
    if shuffle is None:
        once = (" (examples permuted once, before tf.data, stay in that order)" if shuffled
                else "")
        ctx.fail(f"{what} {order}: the pipeline has no .shuffle stage{once}.", mistake="M29",
                 fix="shuffle the training pipeline (when training is True) over every example, "
                     "before it is batched; tf.data then draws a new order every epoch.", code="no_shuffle")
    if not shuffled:
        ctx.fail(f"{what} {order}: its .shuffle keeps the order of the examples (a buffer of "
                 "one example shuffles nothing).", mistake="M29",
                 fix="shuffle over the whole training set: a shuffle buffer as large as the data "
                     "(a smaller one only mixes neighbours), before batching.",
                 code="small_shuffle_buffer")
    if any("Cache" in name for name in stages[:shuffle]):
        ctx.fail(f"{what} {order}: a .cache() after the .shuffle stores the first epoch's "
                 "order and replays it.", mistake="M29",
                 fix="cache before shuffling: a cache after the shuffle replays the first epoch's "
                     "order in every epoch.",
                 code="cache_after_shuffle")
    ctx.fail(f"{what} {order}: its .shuffle draws one order and keeps it "
             "(reshuffle_each_iteration=False).", mistake="M29",
             fix="leave reshuffle_each_iteration out of .shuffle(...) (its default, True, draws "
                 "a new order every epoch).", code="no_reshuffle")


# ----------------------------------------------------------------------------- 2. build_model

#: How many times wider build_model's outputs must spread for features 1000 times larger: a
#: ReLU network's logits about 1000 (its biases start at 0), a squashed output under 11 (the
#: untrained draft's softmax about 5-10, a sigmoid or tanh, rescaled, 2-5).
GROWTH = 100.0


@exercise("build_model", module=MODULE, cases=[5],
          label=lambda case: f"a batch of {case}",
          idea="find and fix the notebook's draft from what its experiments show (a hidden "
               "layer made once, outside the factory, so changing one model changes another, "
               "M32; a softmax output, which Keras' from_logits=True loss rescues with a "
               "warning while tf.nn's loss, given the same outputs, applies a second softmax "
               "and charges right, certain outputs 1.46, M85): a new, untrained Keras model "
               "maps 64 features to 10 logits that depend on the features and grow with them "
               "(no softmax, sigmoid or other squashing, however rescaled: checked on features "
               "1000 times larger) with trainable weights of its own, ready for the custom "
               "loop: not compile()d, because no Keras fit() will train it.",
          kernel_evidence="whether the returned model was compiled, and whether two calls gave "
                          "models sharing weights",
          findings={"not_model": ("build_model should return a tf.keras.Model.",
                                  "return the tf.keras.Sequential (or tf.keras.Model) you build.")})
def build_model(case, obs, ctx):
    """``obs``: ``output`` (the first model called on a batch of ``case`` examples), ``probe``
    and ``probe_big`` (its outputs for 8 other examples, and for them times 1000),
    ``trainable`` (its number of trainable variables), ``shared`` (the two models are one, or
    share a variable), ``compiled`` (compile() was called on one of them)."""
    batch = int(case)
    out = obs["output"]
    where = f"the model's output for {ctx.label}"
    if out is None or not isinstance(out, np.ndarray):
        ctx.fail(f"{where} should be a float32 tensor of logits.", code="type")
    if out.shape != (batch, NUM_CLASSES):
        shape = (f"have shape ({batch}, {NUM_CLASSES}), got {out.shape}"
                 if ctx.reveal and not ctx.hidden else f"hold {NUM_CLASSES} logits per example")
        ctx.fail(f"{where} should {shape}: the last layer needs {NUM_CLASSES} units, one per "
                 "digit.")
    if out.dtype != np.float32:
        got = f", got {out.dtype}" if ctx.reveal else ""
        ctx.fail(f"{where} should be float32{got}.")
    if np.all(out >= 0) and np.allclose(out.sum(axis=1), 1.0, atol=1e-4):
        ctx.fail(f"the model's outputs for {ctx.label} are probabilities (rows sum to 1), but "
                 "what takes them takes logits: tf.nn's losses, a metric from log_softmax, any "
                 "op between the model and SparseCategoricalCrossentropy(from_logits=True), a "
                 "caller of the exported model all apply a second softmax, and even right, "
                 f"certain outputs then cost {'1.46' if ctx.reveal else 'far more'} instead of "
                 "0 (Keras' loss recovers the logits only from the softmax layer's own output, "
                 "with a warning).", mistake="M85", code="probabilities",
                 fix="remove the softmax from the last layer (a Dense layer with no activation): "
                     "the model gives logits, the loss turns them into probabilities.")
    small, big = obs.get("probe"), obs.get("probe_big")
    for got in (small, big):
        if not isinstance(got, np.ndarray) or got.ndim != 2 or got.shape[1] != NUM_CLASSES:
            ctx.fail(f"the model's outputs for other examples should hold {NUM_CLASSES} logits "
                     "per example.", code="probe_shape")
    small, big = small.astype(np.float64), big.astype(np.float64)
    # Spread: the widest range of one output over the probe's examples.
    spread = float(np.max(np.ptp(small, axis=0))) if np.all(np.isfinite(small)) else np.inf
    if spread <= 1e-6 * max(1.0, float(np.max(np.abs(small)))):
        ctx.fail("the model gives the same outputs whatever examples it is given: they do not "
                 "depend on the features (a layer that multiplies them by 0, or outputs made "
                 "of a bias alone), so nothing it learns can tell one digit from another.",
                 mistake="M21", code="ignores_input",
                 fix="let the features flow through the network: each layer applied to the "
                     "previous layer's output, from the input to the logits, none that zeroes "
                     "them.")
    spread_big = (float(np.max(np.ptp(big, axis=0))) if np.all(np.isfinite(big)) else np.inf)
    if np.isfinite(spread) and spread_big < GROWTH * spread:  # inf: not bounded, not squashed
        ctx.fail("the model's outputs hardly spread wider for features 1000 times larger "
                 f"(a ReLU network's logits spread 1000 times wider; "
                 f"{f'these {spread_big / spread:.3g} times' if ctx.reveal else 'these far less'}"
                 "): its last layer squashes them into bounds (a softmax, sigmoid or tanh, "
                 "rescaled or not), and what takes them as logits then applies a softmax to "
                 "squashed values, which cannot come near a right, certain answer.",
                 mistake="M85", code="squashed",
                 fix="end the model with a Dense layer of one unit per class and no activation: "
                     "its outputs are logits, any real numbers.")
    if not obs["trainable"]:
        ctx.fail("the model has no trainable weights.")
    if obs["shared"] is not False:
        ctx.fail("build_model returned the same model (or shared weights) twice: a layer made "
                 "once, outside the factory, is in every model it builds, so training one "
                 "model changes the next.", mistake="M32", code="shared",
                 fix="create every layer inside build_model, so each call gives a fresh model "
                     "with weights of its own.")
    if obs["compiled"] is not False:
        ctx.fail("build_model returns a model of the right shape, but a compile()d one: compile() "
                 "prepares Keras' own fit(), which this notebook replaces with "
                 f"{CUSTOM_LOOP}.", mistake="M21", code="compiled",
                 fix="return the model without calling model.compile; the train step of the "
                     "custom loop takes the loss and the optimizer.")


# ----------------------------------------------------------------------------- 3. train step

def _no_tf_function(what):
    return (f"{what} should return a function decorated with @tf.function.",
            "define the train step as a tf.function inside and return it.")


def _restarted(result, batch_value, running_value, rtol=1e-4, atol=1e-5) -> bool:
    """Whether a metric's result is this batch's own value where the running value over every
    batch so far differs (the step reset the metric: M97)."""
    try:
        result = float(result)
    except (TypeError, ValueError):
        return False
    return (not np.isclose(batch_value, running_value, rtol=rtol, atol=atol)
            and bool(np.isclose(result, batch_value, rtol=rtol, atol=atol)))


#: The run the train-step predictions are about (the notebook's cell after them): a fresh model
#: and a fresh Adam, the student's make_train_step, this many epochs of train_ds, batches of
#: this size of the digits' training split (seed 0).
PREDICTION_EPOCHS = 3
PREDICTION_BATCH = 32


def step_prediction_reference() -> dict:
    """``{"traces", "iterations", "batches", "last"}`` of the run the predictions are about,
    from tf.function's and the optimizer's documented behaviour: the first call traces twice
    (Adam creates its moment variables in its first apply_gradients, and a tf.function that
    created variables traces again, a trace that may create none), a smaller last batch is a
    new input shape (one more trace, in the first epoch only), and optimizer.iterations counts
    apply_gradients calls, one per batch."""
    n = len(_labels(0, "train"))
    batches = math.ceil(n / PREDICTION_BATCH)
    last = n % PREDICTION_BATCH
    return {"traces": 2 + (1 if last else 0), "iterations": PREDICTION_EPOCHS * batches,
            "batches": batches, "last": last}


def _judge_step_prediction(ctx, predicted) -> None:
    traces, iterations = predicted["traces"], predicted["iterations"]
    _prediction_kind(ctx, "predicted_traces", traces, "count")
    _prediction_kind(ctx, "predicted_iterations", iterations, "count")
    want = step_prediction_reference()
    calls = want["iterations"]
    if traces != want["traces"]:
        if traces >= want["batches"]:  # a trace for every call, of one epoch at least
            why = ("A tf.function runs its Python body only while it traces: afterwards every "
                   "call with an input of a known shape and dtype runs the graph it made, "
                   "without Python.")
            mistake = "M08"
        elif traces >= PREDICTION_EPOCHS * (want["traces"] - 1):
            why = ("A tf.function keeps its graphs from one epoch to the next: the later epochs "
                   "bring no new input shape, so they trace nothing.")
            mistake = None
        else:
            why = ("Count the traces of the first epoch: the first call traces twice (Adam "
                   "creates its moment variables in its first apply_gradients, and a "
                   "tf.function that created variables traces once more, a trace that may "
                   "create none), and the smaller last batch is a new input shape, one more "
                   "trace; the later epochs trace nothing.")
            mistake = None
        _wrong_prediction(ctx, "predicted_traces", traces, want["traces"], why, mistake=mistake)
    if iterations != calls:
        _wrong_prediction(ctx, "predicted_iterations", iterations, calls,
                          "optimizer.iterations counts the optimizer's steps: one "
                          "apply_gradients per batch, the last, smaller batch included, in "
                          "every epoch.")


@exercise("make_train_step", module=MODULE, cases=[(0, 32, 0.5, 3)],
          label=lambda case: f"seed {case[0]}, batch {case[1]}, SGD({case[2]})",
          idea="find and fix: the notebook's draft creates an optimizer inside the tf.function "
               "(M07), resets the metrics at every step (M97) and measures accuracy after the "
               "update; the fixed tf.function train step computes the loss on a "
               "GradientTape, takes tape.gradient of it and lets the optimizer it was given "
               "apply the gradients (optimizer.iterations advances once per step), then "
               "updates its metrics with the logits of the forward pass; the student predicts "
               "how often such a step traces and how many steps the optimizer takes.",
          kernel_evidence="which gradient calls a GradientTape made while the step ran, the "
                          "optimizer's iteration count after each call, whether Keras' "
                          "compile()/fit()/train_on_batch() ran meanwhile, and, from one more "
                          "call of a fresh step run eagerly, whether a gradient call's target "
                          "equals the loss the step returned and the gradients the optimizer "
                          "applied equal that call's results",
          findings={"not_tf_function": ("make_train_step should return a function decorated "
                                        "with @tf.function.",
                                        "define the train step as a tf.function inside and return "
                                        "it."),
                    "none": ("train_step should return the batch loss, got None.",
                             "return the loss of the batch.")})
def make_train_step(case, obs, ctx):
    """``obs``: ``calls``, one per call of the step: ``loss`` (returned), ``weights`` (the four
    variables after the call), ``loss_metric``, ``acc_metric`` (their results),
    ``iterations`` (the optimizer's); ``tape`` (whether tape.gradient ran while the step did);
    ``prediction``: None (the check was not given the predictions) or ``{"traces",
    "iterations"}``, judged after the step (:func:`step_prediction_reference`).
    Reference: the small network's SGD steps in float64 from the case's weights and batches."""
    seed, batch, lr, steps = int(case[0]), int(case[1]), float(case[2]), int(case[3])
    weights = [w.astype(np.float64) for w in small_model_weights(seed)]
    before = weights
    seen_losses, seen_hits, seen_n = [], 0, 0
    calls = obs["calls"]
    reveal = ctx.reveal
    for n_call in range(steps):
        got = calls[n_call]
        x, y = train_step_batch(seed, batch, n_call)
        want_loss, logits, grads = loss_and_gradients(weights, x, y)
        if got["loss"] is None:
            ctx.fail("train_step should return the batch loss, got None.", code="none")
        loss = np.asarray(got["loss"])
        if not np.issubdtype(loss.dtype, np.number) or loss.size != 1:
            shape = f", got shape {loss.shape}" if reveal else ""
            ctx.fail(f"train_step should return the mean loss of the batch (one number){shape}.")
        loss = float(loss.reshape(()))
        if not np.isclose(loss, want_loss, rtol=1e-4, atol=1e-5):
            values = (f"the loss {loss:.5f} in call {n_call + 1} for {ctx.label}; the "
                      f"cross-entropy of the batch before the update is {want_loss:.5f}"
                      if reveal else f"a loss in call {n_call + 1} ({ctx.label}) that is not "
                      "the cross-entropy of the batch before the update")
            ctx.fail(f"train_step returned {values}. Use loss_fn(y, logits) with the logits of "
                     "model(x) computed on the tape.")
        after = [np.asarray(w, dtype=np.float64) for w in got["weights"]]
        if len(after) != len(weights) or any(a.shape != w.shape for a, w in zip(after, weights)):
            ctx.fail(f"the model's variables changed shape after train_step ({ctx.label}).")
        if all(np.array_equal(a, w) for a, w in zip(after, before)):
            ctx.fail(f"the model's weights did not change after train_step ({ctx.label}): the "
                     "parameters never update. Call optimizer.apply_gradients(zip(grads, "
                     "model.trainable_variables)).")
        for name, a, w, g in zip(VARIABLES, after, weights, grads):
            if not np.allclose(a, w - lr * g, rtol=1e-4, atol=1e-5):
                if np.allclose(a, w + lr * g, rtol=1e-4, atol=1e-5):
                    ctx.fail(f"{name} moved uphill ({ctx.label}): apply the gradients of the "
                             "loss itself (not of -loss).")
                ctx.fail(f"{name} after one SGD step ({ctx.label}) should be w - lr * gradient "
                         "of the batch loss; it is not. Take the gradients of the loss with "
                         "respect to model.trainable_variables and apply them once per step.")
        seen_losses.append(want_loss)
        seen_hits += hits(logits, y)
        seen_n += batch
        got_metric = _scalar(ctx, got["loss_metric"], ", loss_metric's result")
        if got_metric == 0.0:
            ctx.fail("loss_metric was never updated: call loss_metric.update_state(loss) in "
                     "train_step.")
        # The loss metric decides (an accuracy of k/batch can meet a running one by chance).
        if n_call > 0 and _restarted(got_metric, want_loss, np.mean(seen_losses)):
            both = " and acc_metric hold" if _restarted(
                got["acc_metric"], hits(logits, y) / batch, seen_hits / seen_n, 0, 1e-6) else \
                " holds"
            ctx.fail(f"after {n_call + 1} calls ({ctx.label}) loss_metric{both} the last batch "
                     "alone, not every batch so far: the step resets it, so an epoch's log "
                     "shows one batch's numbers.", mistake="M97",
                     code="metrics_reset_in_step",
                     fix="only update the metrics in train_step; the loop resets them once per "
                         "epoch.")
        if not np.isclose(got_metric, np.mean(seen_losses), rtol=1e-4, atol=1e-5):
            values = (f", {np.mean(seen_losses):.5f}, got {got_metric:.5f}" if reveal else "")
            ctx.fail(f"loss_metric after {n_call + 1} calls should be the mean of the batch "
                     f"losses{values}: call loss_metric.update_state(loss) once per step.")
        got_acc = _scalar(ctx, got["acc_metric"], ", acc_metric's result")
        want_acc = seen_hits / seen_n
        if not np.isclose(got_acc, want_acc, atol=1e-6):
            if got_acc == 0 and want_acc > 0:
                ctx.fail("acc_metric was never updated: call acc_metric.update_state(y, logits) "
                         "in train_step.")
            values = f" should be {want_acc:.4f}, got {got_acc:.4f}" if reveal else " is wrong"
            ctx.fail(f"acc_metric after {n_call + 1} calls{values}: call "
                     "acc_metric.update_state(y, logits) (labels first) with the logits computed "
                     "before the update.")
        weights = [w - lr * g for w, g in zip(weights, grads)]
        before = after
    if obs["tape"] is not True:
        ctx.fail(f"{ctx.what} returns the right loss and weights, but no GradientTape computed "
                 "the gradients (tape.gradient never ran): the exercise is the tape-based step "
                 f"of {CUSTOM_LOOP}.", mistake="M21", code="no_tape",
                 fix="compute the logits and the loss inside the tape's block, then the gradients "
                     "of the loss with respect to the model's trainable variables.")
    iterations = [calls[k]["iterations"] for k in range(steps)]
    if iterations != list(range(1, steps + 1)):
        ctx.fail(f"{ctx.what} updates the weights right, but the optimizer it was given did not "
                 "take the steps (optimizer.iterations did not advance once per call): the "
                 "weights were changed by hand, or by another optimizer.", mistake="M21",
                 code="not_the_optimizer",
                 fix="apply the gradients with the optimizer passed to make_train_step (read its "
                     "apply_gradients; an Adam optimizer is not w - lr * g: only the optimizer "
                     "knows its rule).")
    if obs["keras"] is not False:
        ctx.fail(f"{ctx.what} gives the right numbers, but Keras' compile()/fit()/"
                 "train_on_batch() ran while it did: the exercise is the tape-based step of "
                 f"{CUSTOM_LOOP}.", mistake="M21", code="keras_fit",
                 fix="compute the loss on a GradientTape, take tape.gradient of it and apply "
                     "the gradients with the optimizer given; no model.compile, no model.fit.")
    gradients = obs["gradients"]
    if gradients != "ok":
        why = {"target_not_loss": "no tape.gradient call took the gradient of the loss the step "
                                  "returns (a gradient of something else is not the step's)",
               "not_applied": "the gradients the optimizer applied are not the ones "
                              "tape.gradient returned for the loss (they were computed "
                              "another way)",
               "no_apply": "the optimizer applied no gradients",
               }.get(gradients, "the step, run again eagerly to read its values, raised an "
                                "error, so it could not be seen to apply the tape's gradients")
        ctx.fail(f"{ctx.what} returns the right loss and weights, but {why}: the exercise is "
                 f"the tape-based step of {CUSTOM_LOOP}.", mistake="M21", code="not_the_tape",
                 fix="compute the logits and the loss inside the tape's block, take the gradients "
                     "with respect to the model's trainable variables and let the optimizer apply "
                     "them; return that loss.")
    if obs["prediction"] is not None:
        _judge_step_prediction(ctx, obs["prediction"])


# ----------------------------------------------------------------------------- 4. eval step

@exercise("make_eval_step", module=MODULE, cases=[(1, 40, 2)],
          label=lambda case: f"seed {case[0]}, batch {case[1]}",
          idea="find and fix the notebook's draft, a copy of the train step: a tf.function "
               "evaluation step only measures, the loss and the metrics of the batch, with no "
               "GradientTape, no gradients and no change to the weights (M55).",
          kernel_evidence="which gradient calls a GradientTape made while the step ran",
          findings={"not_tf_function": ("make_eval_step should return a function decorated "
                                        "with @tf.function.",
                                        "define the evaluation step as a tf.function inside and "
                                        "return it."),
                    "none": ("eval_step should return the batch loss, got None.",
                             "return the loss of the batch.")})
def make_eval_step(case, obs, ctx):
    """``obs``: ``calls``, one per call: ``loss``, ``weights`` (after the call), ``loss_metric``,
    ``acc_metric``, ``acc_count`` (the accuracy metric's count); ``tape`` (whether
    tape.gradient ran). Reference: the small network's loss and accuracy in float64."""
    seed, batch, calls = int(case[0]), int(case[1]), int(case[2])
    weights = small_model_weights(seed + 100)
    losses, seen_hits, n = [], 0, 0
    for n_call in range(calls):
        got = obs["calls"][n_call]
        x, y = eval_step_batch(seed, batch, n_call)
        logits = forward(weights, x)[2]
        want_loss = cross_entropy(logits, y)
        if got["loss"] is None:
            ctx.fail("eval_step should return the batch loss, got None.", code="none")
        loss = np.asarray(got["loss"])
        if np.issubdtype(loss.dtype, np.number) and loss.size == 1:
            loss = loss.reshape(())
        ctx.close(loss, want_loss, ", the loss returned by eval_step", rtol=1e-4, atol=1e-5)
        losses.append(want_loss)
        seen_hits += hits(logits, y)
        n += batch
        after = got["weights"]
        if len(after) != len(weights) or any(
                np.asarray(a).shape != w.shape or not np.array_equal(np.asarray(a), w)
                for a, w in zip(after, weights)):
            ctx.fail("eval_step changed the model's weights: it trains on the data it should "
                     "measure, so its numbers no longer describe the model. Evaluation only "
                     "measures.", mistake="M55", code="eval_trains",
                     fix="remove the tape, the gradients and the update from eval_step: compute "
                         "the logits with training=False, the loss and the metrics, and return "
                         "the loss.")
        ctx.close(_scalar(ctx, got["loss_metric"], ", loss_metric's result"), np.mean(losses),
                  f", loss_metric after {n_call + 1} calls of eval_step; call "
                  "loss_metric.update_state(loss)", rtol=1e-4, atol=1e-5)
        got_acc = _scalar(ctx, got["acc_metric"], ", acc_metric's result")
        if not np.isclose(got_acc, seen_hits / n, atol=1e-6):
            if _scalar(ctx, got["acc_count"], ", acc_metric's count") == 0:
                ctx.fail("acc_metric was never updated: call acc_metric.update_state(y, logits) "
                         "in eval_step.")
            values = (f" should be {seen_hits / n:.4f}, got {got_acc:.4f}" if ctx.reveal
                      else " is wrong")
            ctx.fail(f"acc_metric after {n_call + 1} calls of eval_step ({ctx.label}){values}: "
                     "call acc_metric.update_state(y, logits), labels first.")
    if obs["tape"] is not False:
        ctx.fail(f"{ctx.what} measures the right numbers, but it takes gradients (a "
                 "GradientTape's gradient ran in it): an evaluation step only measures, so "
                 "it never trains and costs no backward pass.", mistake="M55", code="tape_in_eval",
                 fix="compute the logits (calling the model in inference mode, training=False) "
                     "and the loss without a tape, update the metrics and return the loss; no "
                     "tape.gradient, no optimizer.")
    if obs.get("training_mode") is True:
        ctx.fail(f"{ctx.what} measures the right numbers with this model, but it calls the model "
                 f"with training=True, the train step's mode: in a model with dropout every "
                 f"evaluation would be random, and batch normalization would move its "
                 f"statistics on validation data.", mistake="M55", code="training_mode",
                 fix="evaluate in inference mode: training=False where the step calls the model.")


# ----------------------------------------------------------------------------- 5. fit

HISTORY_KEYS = ("loss", "accuracy", "val_loss", "val_accuracy")


@exercise("fit", module=MODULE, cases=[(0, 2, 400)],
          label=lambda case: f"seed {case[0]}, {case[1]} epochs",
          idea="the custom training loop: every epoch resets the metrics, runs the train step "
               "(its optimizer takes one step per batch) and the evaluation step, and records "
               "the metrics in the history; the optimizer given makes every update, from the "
               "gradients of the loss, by its own rule (its state moves as the rule says); no "
               "Keras compile()/fit(), however they are reached.",
          kernel_evidence="the optimizer's iteration count after fit; whether one of Keras' "
                          "training entry points (wrapped on the classes when the checks were "
                          "imported, before the student's first cell) ran on the model or on "
                          "one sharing its variables, or the optimizer given took a step from "
                          "inside Keras' own train step (its frames on the stack, however fit "
                          "was reached); and, from a second run with SGD with "
                          "momentum on fixed batches, the weights after it and the "
                          "optimizer's momentum slots, which the grader replays step by step; "
                          "how many times fit read val_ds from its start, and whether the "
                          "model's weights changed while it was read",
          findings={"history_type": ("fit should return a dict of lists (the history).",
                                     "return `history`, a dict with the lists \"loss\", "
                                     "\"accuracy\", \"val_loss\" and \"val_accuracy\"."),
                    "history_keys": ("the history returned by fit lacks one of the keys "
                                     "\"loss\", \"accuracy\", \"val_loss\", \"val_accuracy\".",
                                     "append one number per epoch to each of the four lists.")})
def fit(case, obs, ctx):
    """``obs``: ``history`` (the four lists, each at most the read limit), ``lengths`` (their
    true lengths), ``weights`` (the model's after fit), ``val_logits`` (the trained model on the
    validation set, in order), ``iterations`` (the optimizer's), ``keras`` (whether the model
    was compiled or trained by Keras' fit). References: the validation labels of the case's
    digits split (the grader's own), the cross-entropy and accuracy of the final model's logits,
    epochs x batches optimizer steps."""
    seed, epochs, n_train = int(case[0]), int(case[1]), int(case[2])
    reveal = ctx.reveal
    shows_inputs = reveal and not ctx.hidden
    for key in HISTORY_KEYS:
        if obs["lengths"][key] != epochs:
            got = (f" ({epochs}), got {obs['lengths'][key]} values" if shows_inputs
                   else f", got {obs['lengths'][key]} values" if reveal else "")
            ctx.fail(f"history[{key!r}] should hold one number per epoch{got} ({ctx.label}).")
    values = {k: [float(v) for v in obs["history"][k]] for k in HISTORY_KEYS}
    start = small_model_weights(seed, hidden=32)
    after = obs["weights"]
    if len(after) == len(start) and all(np.asarray(a).shape == w.shape and np.array_equal(
            np.asarray(a), w) for a, w in zip(after, start)):
        ctx.fail(f"the model's weights did not change during fit ({ctx.label}): call the train "
                 "step on every batch of train_ds.")
    if not values["loss"][-1] < values["loss"][0]:
        got = f": {np.round(values['loss'], 4).tolist()}" if reveal else ""
        over = f" over {epochs} epochs" if shows_inputs else ""
        ctx.fail(f"the training loss did not fall{over} ({ctx.label}){got}.")
    labels = _labels(seed, "val")
    logits = np.asarray(obs["val_logits"], dtype=np.float64)
    if logits.shape != (len(labels), NUM_CLASSES):
        ctx.fail(f"the trained model's output on the validation set has the wrong shape "
                 f"({ctx.label}).")
    want_loss, want_acc = cross_entropy(logits, labels), hits(logits, labels) / len(labels)
    # A Mean metric fed one loss per batch averages the batch means (the smaller last batch
    # weighs as much as the others); accept that as well as the mean over examples.
    batch_means = np.mean([cross_entropy(logits[i:i + FIT_VAL_BATCH], labels[i:i + FIT_VAL_BATCH])
                           for i in range(0, len(labels), FIT_VAL_BATCH)])
    loss_ok = any(np.isclose(values["val_loss"][-1], want, rtol=1e-4, atol=1e-5)
                  for want in (want_loss, batch_means))
    passes = obs.get("val_passes")
    if passes == 0:
        ctx.fail(f"{ctx.what} never read val_ds ({ctx.label}): its validation values were "
                 "measured on other data (the training set?), so they say nothing about examples "
                 "the model did not learn from.", mistake="M67", code="val_not_read",
                 fix="run the evaluation step on every batch of val_ds, the argument fit was "
                     "given, after training each epoch.")
    if obs.get("eval_trains") is True:
        ctx.fail(f"{ctx.what}: the model's weights changed while fit read val_ds "
                 f"({ctx.label}): the evaluation trains, so the validation numbers describe a "
                 "model that learnt from the validation set.", mistake="M55",
                 code="eval_trains_in_fit",
                 fix="make the evaluation step measure only (make_eval_step: logits with "
                     "training=False, the loss and the metrics; no tape, no update), and call "
                     "the train step only on train_ds.")
    if not np.isclose(values["val_accuracy"][-1], want_acc, atol=1e-6) or not loss_ok:
        numbers = (f": val_loss {want_loss:.4f}, val_accuracy {want_acc:.4f}; got "
                   f"{values['val_loss'][-1]:.4f} and {values['val_accuracy'][-1]:.4f}"
                   if reveal else "")
        read = (f" val_ds was read {passes} times in {epochs} epochs."
                if shows_inputs and isinstance(passes, int) and passes != epochs else "")
        ctx.fail(f"the last epoch's validation values ({ctx.label}) should describe the final "
                 f"model on the validation set{numbers}: metrics accumulate until they are "
                 f"reset, so values never reset (or reset only once, before the loop) average "
                 f"over every epoch so far.{read}", mistake="M68", code="metrics_not_reset",
                 fix="call reset_state() on every metric at the start of each epoch, and "
                     "evaluate on all of val_ds, once, after training the epoch.")
    for key in ("accuracy", "val_accuracy"):
        if not all(0.0 <= v <= 1.0 for v in values[key]):
            got = f", got {values[key]}" if reveal else ""
            ctx.fail(f"history[{key!r}] should hold fractions in [0, 1]{got}.")
    if obs["keras"] is not False:
        ctx.fail(f"{ctx.what} returns the right history, but {KERAS_FIT} (the model was "
                 "compile()d, or trained by model.fit).", mistake="M21", code="keras_fit",
                 fix="loop over the epochs yourself: reset the metrics, call your train_step on "
                     "every batch of train_ds and your eval_step on every batch of val_ds, and "
                     "append the metrics' results to the history; no model.compile, no "
                     "model.fit.")
    batches = math.ceil(min(n_train, len(_labels(seed, "train"))) / FIT_BATCH)
    if obs["iterations"] != epochs * batches:
        got = (f" (it took {obs['iterations']} steps; {epochs} epochs of {batches} batches "
               f"make {epochs * batches})" if shows_inputs else "")
        ctx.fail(f"{ctx.what} returns a history, but the optimizer given to fit did not take one "
                 f"step per batch of every epoch{got}: the training did not run through "
                 f"{CUSTOM_LOOP} with that optimizer.", mistake="M21", code="steps",
                 fix="make the train step once, through make_train_step with the model and the "
                     "optimizer fit was given, and call it once on every batch of train_ds, in "
                     "every epoch.")
    _judge_fit_rule(ctx, seed, obs["rule"])


_OPTIMIZER_FIX = ("make the train step with the optimizer fit was given (through make_train_step) "
                  "and let that optimizer apply the gradients the tape returned; never change the "
                  "weights, or optimizer.iterations, by hand.")


def _judge_fit_rule(ctx, seed: int, rule) -> None:
    """The fit check's second run (:data:`FIT_RULE`), replayed here: the optimizer given
    (SGD with momentum) must hold the momentum its own rule gives for the gradients the tape
    handed back (those of the loss plus ``FIT_RULE["shift"]``), step after step, and the
    weights must be what those updates, and nothing else, make."""
    __tracebackhide__ = True
    start = small_model_weights(seed + FIT_RULE["seed_offset"], FIT_RULE["hidden"])
    x, y = fit_rule_data(seed)
    want_weights, want_slots = sgd_momentum_replay(
        start, x, y, lr=FIT_RULE["lr"], momentum=FIT_RULE["momentum"],
        epochs=FIT_RULE["epochs"], batch=FIT_BATCH, shift=FIT_RULE["shift"])

    def same(got, want) -> bool:
        if not isinstance(got, list) or len(got) != len(want):
            return False
        for g, w in zip(got, want):
            g = None if g is None else np.asarray(g)
            if (g is None or not np.issubdtype(g.dtype, np.number) or g.shape != w.shape
                    or not np.allclose(g.astype(np.float64), w, rtol=1e-4, atol=1e-5)):
                return False
        return True

    weights_ok, slots_ok = same(rule["weights"], want_weights), same(rule["slots"], want_slots)
    slots = rule["slots"] if isinstance(rule["slots"], list) else []
    empty = all(m is None or not np.any(np.asarray(m, dtype=np.float64)) for m in slots)
    run = ("in a second run (a fresh model, SGD with momentum, batches in a fixed order), "
           if ctx.reveal else "")
    if empty or (weights_ok and not slots_ok):
        how = ("it holds no momentum at all" if empty else
               "the weights moved as it would move them, but its momentum is not what its own "
               "rule gives")
        ctx.fail(f"{ctx.what} returns a history, but {run}the optimizer fit was given did not "
                 f"make the updates: {how}. The steps were made by hand or by another optimizer "
                 "(a count of steps, optimizer.iterations, can be bumped by hand; an "
                 "optimizer's state moves only by its own rule).", mistake="M21",
                 code="optimizer_state", fix=_OPTIMIZER_FIX)
    if not weights_ok:
        ctx.fail(f"{ctx.what} returns a history, but {run}the weights after it are not what the "
                 "optimizer given makes from the gradients of the loss, step after step: every "
                 "update applied to the weights must be the optimizer's, from the results of "
                 "tape.gradient of the loss (not other gradients given to it, and no update by "
                 "hand beside it).", mistake="M21", code="update_not_rule", fix=_OPTIMIZER_FIX)


# ----------------------------------------------------------------------------- 6. final model

SPLIT_NAMES = {"val": "the validation set", "test": "the test set"}

#: The trainable variables' shapes of the notebook's network (64 features, Dense(64, relu),
#: Dense(10)), when the kernel could not make a model of the notebook's build_model.
NOTEBOOK_SHAPES = [[NUM_FEATURES, 64], [64], [64, NUM_CLASSES], [NUM_CLASSES]]

_TRAIN_IT = ("in train_final_model, build a fresh model with build_model() and train it with "
             "your own fit (your train and evaluation steps, your epoch loop); return that "
             "model.")


@exercise("final model", check="check_final_model", module=MODULE, cases=["val"],
          label=lambda case: SPLIT_NAMES.get(case, f"split {case}"),
          idea="the model trained by the notebook's own custom training loop (fit, with its "
               "train and evaluation steps) classifies held-out digits well: a network of "
               "build_model whose trained weights give its outputs; a model that Keras' "
               "compile()/fit() trained, or one with no trainable weights (a lookup), fails.",
          kernel_evidence="the model's predictions (computed by the model in the kernel, on "
                          "the features of the case's split that the kernel half makes from "
                          "digits_split, never the notebook's), whether Keras' compile() or "
                          "fit() touched the model, its trainable variables' shapes against a "
                          "fresh model of the notebook's build_model, and whether that network "
                          "with the model's weights gives its outputs. Not told apart: weights "
                          "that Keras' fit() learnt on another model, copied into a fresh, "
                          "never-compiled model of build_model (set_weights): the kernel sees "
                          "only the final model, not the training that made its weights",
          findings={"no_model": ("there is no trained model: the cell that runs `model, "
                                 "history = train_final_model(train_ds, val_ds)` failed.",
                                 "fix the error shown under that cell, run it until it "
                                 "finishes, then run the checks again."),
                    "not_model": ("{what}: `model` should be the trained Keras model.",
                                  "return the trained model from train_final_model."),
                    "output_shape": ("{what}: the model's output should have shape "
                                     "(examples, 10).",
                                     "the model should give 10 logits per example.")})
def final_model(case, obs, ctx, threshold=0.90):
    """``obs``: ``predictions`` (argmax of the model's outputs on the split's features, which
    the kernel half makes from :func:`digits_split`), ``keras`` (whether the model was
    compiled or trained by Keras' fit), ``shapes`` (its trainable variables' shapes),
    ``build_shapes`` (those of a fresh model of the notebook's build_model), ``same_network``
    (whether that network with the model's weights gives its outputs; None when unknown).
    Reference: the labels of the case's split (``"val"`` or ``"test"`` of the digits split of
    seed 0, the notebook's), made here; the accuracy is computed here."""
    labels = _labels(0, str(case))
    threshold = float(threshold)
    predictions = np.asarray(obs["predictions"])
    if predictions.shape != labels.shape or not np.issubdtype(predictions.dtype, np.integer):
        got = f" ({predictions.size} came back)" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: the model should give one prediction per example of "
                 f"{ctx.label if not ctx.hidden else 'the held-out examples'}{got}; pass it "
                 "the split's features.")
    accuracy = float(np.mean(predictions == labels))
    if ctx.hidden:
        where = "the held-out examples"
    elif ctx.reveal:
        where = f"these {len(labels)} examples"
    else:
        where = ctx.label
    if accuracy < threshold:
        ctx.fail(f"the model's accuracy on {where} is "
                 f"{f'{accuracy:.3f}, ' if ctx.reveal else ''}below the required "
                 f"{threshold:.2f}.", mistake="M86", code="low_accuracy",
                 fix="read the training curves of train_final_model: a validation loss still "
                     "falling at the last epoch wants more epochs (within the budget); one that "
                     "stalls or jumps wants another learning rate. Choose by the validation "
                     "accuracy, never the test set.")
    shapes, build_shapes = obs["shapes"], obs["build_shapes"]
    if not isinstance(shapes, list) or not shapes:
        ctx.fail(f"{ctx.what}: the model has no trainable weights, so it was never trained by "
                 f"your loop: {CUSTOM_LOOP} trains the weights of build_model's network.",
                 mistake="M21", code="untrained", fix=_TRAIN_IT)
    if not isinstance(build_shapes, list) or not build_shapes:
        build_shapes = NOTEBOOK_SHAPES
    if shapes != build_shapes or obs["same_network"] is False:
        ctx.fail(f"{ctx.what}: the model is not the network build_model makes (its trainable "
                 "weights, or the outputs they give, are not a build_model network's), so it "
                 f"was never trained by your loop: {CUSTOM_LOOP} trains the weights of "
                 "build_model's network.", mistake="M21", code="not_build_model", fix=_TRAIN_IT)
    if obs["keras"] is not False:
        ctx.fail(f"{ctx.what}: the model is accurate enough, but {KERAS_FIT} (the model was "
                 "compile()d, or trained by model.fit).", mistake="M21", code="keras_fit",
                 fix="in train_final_model, build a fresh model and train it with your own fit "
                     "(your train and evaluation steps, your epoch loop); no model.compile, no "
                     "model.fit.")
