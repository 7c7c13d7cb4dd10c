"""Checks of assignment 06, the custom training loop on scikit-learn's 8x8 digits: the ``tf.data``
pipeline, the Keras model, the ``tf.function`` train and evaluation steps, the epoch loop, and the
final model.

Every check is in two halves (:mod:`autograder.checks.judge`): the kernel half here,
``collect_<name>``, calls the student's code on one case, inside the student's kernel, and
returns what it observed as plain data (the batches a pipeline gives, the loss, weights and
metrics after each step, the optimizer's iteration count, which gradient calls a GradientTape
made, whether Keras' ``compile()``/``fit()`` touched a model, a model's predictions); the grader
half, in :mod:`autograder.checks.judge.training`, computes the references in NumPy (the checks'
small network, its cross-entropy and its SGD steps by backpropagation; the digits' labels from
the grader's own split) and decides. No reference is computed here.

Each check builds its own inputs (synthetic data whose rows carry their index, a small Keras
model whose weights come from the case's seed, a fixed split of the digits), so an exercise is
graded on its own: a wrong pipeline does not cost the points of the train step.

Besides the numbers, each check grades the idea of its exercise, and fails an answer that
reaches the right numbers without it with M21 ("the right numbers without the idea"):

================  ===================================================================
exercise          M21 when
================  ===================================================================
make_pipeline     the batches are right, but no tf.data batch (or, training, shuffle)
                  stage made them (a Python generator, NumPy shuffling)
build_model       the model is compile()d (the custom loop replaces Keras' fit), or its
                  outputs are the same for every input (a bias, the features multiplied
                  by 0)
make_train_step   tape.gradient never ran for the model's variables (tf.gradients,
                  gradients by hand), no gradient call's target is the loss returned or
                  the gradients applied are not that call's results (a decoy tape;
                  seen in one more call run eagerly), the optimizer given did not take
                  the step (optimizer.iterations does not advance once per call:
                  assign_sub), or Keras' compile()/fit()/train_on_batch() ran
make_eval_step    M55 (an evaluation step that trains): a tape in evaluation, or the
                  weights changed (the notebook's draft, a copy of the train step)
fit               one of Keras' training entry points ran on the model or on another
                  sharing its layers (wrapped on the classes at import, before the
                  student's first cell, so references saved later are caught, and a
                  compiled state reset afterwards hides nothing), or the optimizer given
                  took a step inside Keras' own train step (however fit was reached:
                  the originals saved before that wrap), the optimizer given
                  did not take epochs x batches steps, or, in a second run with SGD with
                  momentum on fixed batches that the grader replays, the optimizer's
                  momentum or the weights are not what its own rule gives for the
                  gradients of the loss (steps by hand with optimizer.iterations bumped;
                  other gradients applied, or an update by hand beside the optimizer's)
final model       the model was compile()d or trained by Keras' fit, has no trainable
                  weights (a lookup), or is not build_model's network with its weights
                  (the features it is scored on are made by the check, not the
                  notebook's; weights Keras learnt, copied into a fresh model, cannot
                  be told apart)
================  ===================================================================

Known mistakes are named by experiment as before: M05, M12, M13, M14 when the optimizer gets no
gradients (:func:`~autograder.checks.harness.explain_missing_gradient`), M07 for an optimizer or
metric created inside the tf.function.

Five exercises are find-and-fix: the notebook gives a broken draft (``make_pipeline_draft``:
float64 features, M65, shuffle after batch, M66; ``build_model_draft``: a hidden layer shared
by every model, M32, a softmax output under a from_logits=True loss, M85;
``make_train_step_draft``: an optimizer created inside the tf.function, the loss after the
tape's block, accuracy measured after the update; ``make_eval_step_draft``: a copy of the
train step that updates the weights by hand;
``fit_draft``: evaluation on the training batches, M67, seen as a ``val_ds`` the loop never
read, and metrics reset once before the loop, M68), runs a
cell that shows what it does, and the student writes the fix; two of them with predictions
committed before that cell runs. Their checks take the predictions as further positional arguments and judge them
after the code (a wrong one is answered with the reason; M08 for a trace per call); the hidden
cases judge the code alone.

Signatures: ``check_<name>(fn, cases=None, hidden=False)``;
``check_make_pipeline(fn, predicted_dtype, predicted_same_groups, cases=None, hidden=False)``
and ``check_make_train_step(fn, predicted_traces, predicted_iterations, cases=None,
hidden=False)``, whose predictions may be left out; ``check_final_model(model, x, y,
retrain=None, threshold=0.90, cases=None, hidden=False)``. Failing raises
:class:`~autograder.checks.compare.CheckFailed`, passing prints one line.
"""
from __future__ import annotations

import contextlib
import os
import sys
import weakref

import numpy as np
import tensorflow as tf

from . import kernel_entry  # noqa: F401  (the grader's way into a grading kernel)
from .compare import CheckFailed, fail, to_numpy
from .harness import TAPE_SHIFT, call, exercise_check, is_tf_function, recording_gradients
from .judge.training import (FIT_BATCH, FIT_RULE, FIT_VAL_BATCH, HISTORY_KEYS, NUM_CLASSES,
                             NUM_FEATURES, digits_split, eval_step_batch, fit_rule_data,
                             indexed_labels, small_model_weights, train_step_batch)

__all__ = [
    "check_make_pipeline",
    "check_build_model",
    "check_make_train_step",
    "check_make_eval_step",
    "check_fit",
    "check_final_model",
]

#: Examples of the probe build_model's model is called on (and again 1000 times larger).
PROBE_ROWS = 8

#: Most values of one history list sent to the grader (their number is sent too).
HISTORY_LIMIT = 1000

#: The default of a prediction argument a check was not given (the check then judges no
#: prediction: hidden cases, and tests of the code alone).
NOT_GIVEN = object()


# ----------------------------------------------------------------------------- helpers
def _indexed_data(n: int, seed: int):
    """Features whose every entry equals the row index (float64, as NumPy gives) and labels
    ``(index + seed) % 10`` (int64), so a batch tells which rows it holds."""
    x = np.repeat(np.arange(n, dtype=np.float64)[:, None], NUM_FEATURES, axis=1)
    return x, indexed_labels(n, seed).astype(np.int64)


def _dataset_classes(dataset) -> list[str]:
    """Class names of a dataset and of the datasets it was built from (TF 2.21 internals,
    used only to find its tf.data stages; an empty list when they cannot be read)."""
    names = []
    try:
        while dataset is not None and len(names) < 50:
            names.append(type(dataset).__name__)
            dataset = getattr(dataset, "_input_dataset", None)
    except Exception:  # pragma: no cover - internals changed
        return []
    return names


class _TrainingSeen(tf.keras.layers.Layer):
    """An identity layer without weights that keeps the ``training`` argument Keras gives each
    of its calls (a Python bool or None, read while a tf.function traces): how the model was
    called, which Dropout and BatchNormalization would obey."""

    def __init__(self, seen: list, **kwargs):
        super().__init__(**kwargs)
        self._keep = seen.append  # a list set on a Keras layer would be copied into a tracked one

    def call(self, inputs, training=None):
        self._keep(training)
        return inputs


def _small_model(seed: int, hidden: int = 16, training_seen: list | None = None):
    """A small Keras model made by the check: logits of 10 classes from 64 features, its weights
    :func:`~autograder.checks.judge.training.small_model_weights` of ``seed`` (the grader makes
    the same ones for its references). With ``training_seen``, its first layer appends the
    ``training`` argument of every call to that list (:class:`_TrainingSeen`)."""
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(NUM_FEATURES,)),
        *([_TrainingSeen(training_seen)] if training_seen is not None else []),
        tf.keras.layers.Dense(hidden, activation="relu"),
        tf.keras.layers.Dense(NUM_CLASSES),
    ])
    for variable, value in zip(model.trainable_variables, small_model_weights(seed, hidden)):
        variable.assign(value)
    return model


def _new_metrics():
    return (tf.keras.metrics.Mean(name="loss"),
            tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy"))


def _loss_fn():
    return tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


#: Keras' own training entry points: compile() and fit(), and what fit() runs (train_on_batch,
#: make_train_function, train_step). They are wrapped once, on the classes that define them,
#: when this module is imported (the notebook's set-up cell, before any cell of the student's),
#: so a reference saved later (``f = tf.keras.Model.fit``, the class's ``__dict__``) is the
#: wrapped one, and a model's compiled state reset afterwards does not hide the call.
KERAS_TRAINING = ("compile", "fit", "train_on_batch", "make_train_function", "train_step")
#: Most Keras training calls reported by one watched block.
KERAS_CALL_LIMIT = 20
#: Most models and variables remembered as touched by Keras' training.
KERAS_SEEN_LIMIT = 200_000

#: ``{id: weakref}`` of every model, and every variable of a model, that one of Keras'
#: training entry points ran on since the import (ids, not a WeakSet: Keras variables compare
#: with ``==`` element-wise).
_KERAS_SEEN: dict = {}
#: The call lists of the :func:`_watching_keras` blocks open now.
_KERAS_BLOCKS: list = []


def _remember_keras(model, name: str) -> None:
    """Note that Keras' training entry point ``name`` ran on ``model``: the model and its
    variables (a model sharing its layers shares them), and the call in every open block."""
    for calls in _KERAS_BLOCKS:
        if len(calls) < KERAS_CALL_LIMIT:
            calls.append(f"{type(model).__name__}.{name}")
    try:
        touched = [model] + list(model.variables)
    except Exception:  # a model whose variables cannot be listed yet
        touched = [model]
    for obj in touched:
        if len(_KERAS_SEEN) < KERAS_SEEN_LIMIT:
            try:
                _KERAS_SEEN[id(obj)] = weakref.ref(obj)
            except TypeError:
                continue


def _keras_seen(obj) -> bool:
    ref = _KERAS_SEEN.get(id(obj))
    return ref is not None and ref() is obj


def _keras_entry(name: str, original):
    """``original`` (a Keras training method) wrapped to remember the model it runs on, before
    and after it runs (a first call builds variables)."""
    def method(self, *args, **kwargs):
        _remember_keras(self, name)
        try:
            return original(self, *args, **kwargs)
        finally:
            _remember_keras(self, name)
    method.__name__, method.__doc__ = name, getattr(original, "__doc__", None)
    method.__qualname__ = getattr(original, "__qualname__", name)
    method._autograder_keras_entry = True
    return method


def _install_keras_watch() -> None:
    """Wrap :data:`KERAS_TRAINING` on every model class loaded now that defines them (Keras'
    Trainer and TensorFlowTrainer; later subclasses inherit the wrapped ones); once."""
    for klass in _model_classes():
        for name in KERAS_TRAINING:
            original = vars(klass).get(name)
            if callable(original) and not getattr(original, "_autograder_keras_entry", False):
                setattr(klass, name, _keras_entry(name, original))


def _keras_trained(*models) -> bool:
    """Whether Keras' own training touched one of ``models``: one of its training entry points
    ran on it, or on a model sharing one of its variables, since this module was imported
    (however the method was reached), or its state says so (compiled, a History, a train
    function)."""
    for model in models:
        try:
            if _keras_seen(model) or any(_keras_seen(v) for v in model.variables):
                return True
            if (getattr(model, "compiled", False) or getattr(model, "history", None) is not None
                    or getattr(model, "train_function", None) is not None):
                return True
        except Exception:  # a student's model whose attributes raise: not Keras-trained
            continue
    return False


def _model_classes() -> list:
    """tf.keras.Model, the classes it inherits from and every subclass of it loaded now
    (Sequential, Functional, a student's own): where Keras' training methods may be defined."""
    seen, stack = [], [tf.keras.Model, tf.keras.Sequential]
    for klass in tf.keras.Model.__mro__:
        if klass is not object and klass not in seen:
            seen.append(klass)
    while stack and len(seen) < 2000:
        klass = stack.pop()
        if klass not in seen:
            seen.append(klass)
        try:
            stack.extend(k for k in type.__subclasses__(klass) if k not in seen)
        except Exception:  # pragma: no cover - an odd metaclass
            continue
    return seen


@contextlib.contextmanager
def _watching_keras():
    """Report, in the list it yields, every call of one of Keras' training entry points made
    inside the block (on any model: the given one or another sharing its layers)."""
    calls = []
    _KERAS_BLOCKS.append(calls)
    try:
        yield calls
    finally:
        _KERAS_BLOCKS.remove(calls)


_install_keras_watch()


def _keras_trainer_files() -> frozenset:
    """The source files of Keras' own training loop: the modules of the classes of
    tf.keras.Model's MRO that define ``fit``, ``train_step`` or ``train_on_batch`` (Keras'
    TensorFlow trainer)."""
    files = set()
    for klass in tf.keras.Model.__mro__:
        if any(name in vars(klass) for name in ("fit", "train_step", "train_on_batch")):
            path = getattr(sys.modules.get(klass.__module__), "__file__", None)
            if path:
                files.add(os.path.realpath(path))
    return frozenset(files)


#: See :func:`_keras_trainer_files`.
KERAS_TRAINER_FILES = _keras_trainer_files()
#: Most frames :func:`_in_keras_training` reads (a traced step's stack holds a few hundred).
KERAS_STACK_LIMIT = 2000
#: ``{co_filename: whether it is one of KERAS_TRAINER_FILES}``, read once per file name.
_TRAINER_FRAME: dict = {}


def _in_keras_training() -> bool:
    """Whether a frame of Keras' own training loop (:data:`KERAS_TRAINER_FILES`) is on the call
    stack. However ``fit`` or ``train_on_batch`` was reached (a reference to Keras' own method
    saved before the checks wrapped it, the originals put back on a model), its train step runs
    there, so an optimizer step taken from it is Keras' training."""
    frame = sys._getframe(1)
    for _ in range(KERAS_STACK_LIMIT):
        if frame is None:
            return False
        name = frame.f_code.co_filename
        found = _TRAINER_FRAME.get(name)
        if found is None:
            found = os.path.realpath(name) in KERAS_TRAINER_FILES
            if len(_TRAINER_FRAME) < 10_000:
                _TRAINER_FRAME[name] = found
        if found:
            return True
        frame = frame.f_back
    return False


def _watch_keras_steps(optimizer, seen: list) -> None:
    """Wrap ``apply_gradients`` and ``apply`` on this optimizer (the instance only, made by the
    check, so no reference to them exists before): each call made from inside Keras' own
    training loop (:func:`_in_keras_training`, while a step runs or traces) appends a line to
    ``seen``."""
    def watched(name):
        original = getattr(optimizer, name)

        def method(*args, **kwargs):
            if len(seen) < KERAS_CALL_LIMIT and _in_keras_training():
                seen.append(f"{type(optimizer).__name__}.{name} in Keras' train step")
            return original(*args, **kwargs)
        return method

    for name in ("apply_gradients", "apply"):
        if callable(getattr(optimizer, name, None)):
            object.__setattr__(optimizer, name, watched(name))


def _weights(model) -> list:
    return [np.asarray(v.numpy()) for v in model.trainable_variables]


def _observed(value):
    """A value the student's code returned, as the grader may read it: None, an array, or the
    value itself (plain data encodes anything else by its type's name)."""
    if value is None:
        return None
    try:
        return np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    except Exception:
        return value


def _tape_covered(record, variables) -> bool:
    """Whether some ``tape.gradient`` call of ``record`` had every one of ``variables`` among
    its sources."""
    sources = []
    for _, _, given, _ in record.calls:
        try:
            sources.extend(tf.nest.flatten(given))
        except Exception:
            continue
    return bool(variables) and all(any(s is v for s in sources) for v in variables)


@contextlib.contextmanager
def _full_precision():
    """float32 matmuls inside the block (no TensorFloat-32 on GPUs that have it), so that the
    grader's float64 references apply on any device; restored afterwards."""
    try:
        was = tf.config.experimental.tensor_float_32_execution_enabled()
    except Exception:  # pragma: no cover - API gone
        was = False
    if was:
        tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        yield
    finally:
        if was:
            tf.config.experimental.enable_tensor_float_32_execution(True)


def _predicted(value):
    """A predicted value as the grader reads it: plain Python values as they are, a dtype by its
    name, anything else as :func:`_observed` sends it (the judge then says a prediction is a
    value written down)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tf.DType, np.dtype)):
        return value.name
    return _observed(value)


def _predictions(**given):
    """``{name: predicted value}``, or None when none of them was given to the check."""
    if all(value is NOT_GIVEN for value in given.values()):
        return None
    return {name: None if value is NOT_GIVEN else _predicted(value)
            for name, value in given.items()}


# ------------------------------------------------------------------- 1. the pipeline
def _read_epoch(dataset, n: int):
    """The batches of one epoch as ``[rows, labels]`` pairs, and whether it went on past ``n``
    examples (or ``n + 1`` batches), where reading stops."""
    batches, count = [], 0
    for x_batch, y_batch in dataset:
        rows = np.asarray(x_batch.numpy())[:, 0].astype(np.int64)
        batches.append([rows, np.asarray(y_batch.numpy()).astype(np.int64)])
        count += len(rows)
        if count > n or len(batches) > n + 1:
            return batches, True
    return batches, False


def collect_make_pipeline(fn, predicted_dtype=NOT_GIVEN, predicted_same_groups=NOT_GIVEN, *,
                          case, ctx):
    """Kernel half of ``check_make_pipeline``: call ``make_pipeline(x, y, batch_size,
    training)`` with training False, then True, on float64 features whose entries equal the
    row index (as NumPy arrays come from scikit-learn) and int64 labels, and read two epochs of
    each dataset; pass on the student's predictions of what the notebook's broken draft gives
    (``predicted_dtype``: its features' dtype; ``predicted_same_groups``: whether its training
    batches hold the same groups of examples in every epoch), when the check is given them.

    The grader then asks: float32 features of shape ``(None, 64)``, integer labels ``(None,)``,
    every example exactly once per epoch, full batches but the last; with ``training=True``
    shuffled before batching and in a new order every epoch; with ``training=False`` in the
    original order; a prefetch stage at the end; and tf.data's own batch and shuffle stages
    (M21 when Python or NumPy made the batches); then the predictions, against what the draft
    does.

    Args:
        case: ``(n, batch_size, seed)``.
    Returns:
        ``{"eval": ..., "train": ..., "prediction": None or {"dtype", "same_groups"}}`` (see
        :func:`autograder.checks.judge.training.make_pipeline`).
    Raises:
        CheckFailed: not a dataset; not (features, labels) pairs; a cause of :func:`call`.
    """
    __tracebackhide__ = True
    n, batch_size, seed = (int(v) for v in case)
    x, y = _indexed_data(n, seed)
    observed = {}
    for training in (False, True):
        what = f"{ctx.what} with training={training}"
        dataset = call(fn, x.copy(), y.copy(), batch_size, training, what=what)
        if not isinstance(dataset, tf.data.Dataset):
            fail(f"{what} should return a tf.data.Dataset, got {type(dataset).__name__}.",
                 code="not_dataset")
        spec = dataset.element_spec
        if (not isinstance(spec, tuple) or len(spec) != 2
                or not all(isinstance(s, tf.TensorSpec) for s in spec)):
            fail(f"{what} should give (features, labels) pairs: build it with "
                 "tf.data.Dataset.from_tensor_slices((x, y)).", code="not_pairs")
        x_spec, y_spec = spec
        rank = x_spec.shape.rank
        seen = {"x_rank": rank, "x_dtype": x_spec.dtype.name, "y_dtype": y_spec.dtype.name,
                "y_integer": bool(y_spec.dtype.is_integer),
                "x_shape": x_spec.shape.as_list() if rank is not None else None,
                "epochs": None, "truncated": False, "stages": _dataset_classes(dataset)}
        if (seen["x_shape"] == [None, NUM_FEATURES] and x_spec.dtype == tf.float32
                and seen["y_integer"]):
            epochs = []
            for _ in range(2):
                batches, truncated = call(_read_epoch, dataset, n,
                                          what=f"reading the dataset of {what}")
                epochs.append(batches)
                seen["truncated"] = seen["truncated"] or truncated
            seen["epochs"] = epochs
        observed["train" if training else "eval"] = seen
    observed["prediction"] = _predictions(dtype=predicted_dtype,
                                          same_groups=predicted_same_groups)
    return observed


check_make_pipeline = exercise_check("check_make_pipeline", collect_make_pipeline)


# ---------------------------------------------------------------------- 2. the model
def collect_build_model(fn, case, ctx):
    """Kernel half of ``check_build_model``: call ``build_model()`` twice, and call the first
    model on a batch of ``case`` float32 examples.

    The grader then asks: logits of shape ``(batch, 10)``, float32, not probabilities (M85),
    outputs that depend on the input (different examples, different outputs: M21 where they do
    not) and that grow with it, however they are rescaled (M85: a squashing last layer; seen on
    a probe of 8 other examples and on the probe times 1000, where a ReLU network's logits
    spread 1000 times wider and a bounded output cannot), trainable weights, a new model with
    its own weights on every call (M32: the draft's hidden layer, made once outside the
    factory, is in every model), and not compile()d (M21: the custom loop needs no compile).

    Returns:
        ``{"output", "probe" (the first model's outputs for the probe), "probe_big"
        (for the probe times 1000), "trainable", "shared", "compiled"}``.
    Raises:
        CheckFailed: not a Keras model; a cause of :func:`call`.
    """
    __tracebackhide__ = True
    batch = int(case)
    first = call(fn, what="build_model()")
    second = call(fn, what="build_model()")
    for model in (first, second):
        if not isinstance(model, tf.keras.Model):
            fail(f"build_model should return a tf.keras.Model, got {type(model).__name__}.",
                 code="not_model")
    x = np.random.default_rng(ctx.index).uniform(0, 1, (batch, NUM_FEATURES)).astype(np.float32)
    out = to_numpy(call(first, x, what=f"the model built by build_model, called on {ctx.label}"),
                   f"the model's output for {ctx.label}")
    if out.size > 16 * batch * NUM_CLASSES:  # the wrong shape: no need to send it all
        out = out.reshape(-1)[:batch * NUM_CLASSES + 1]
    # A probe of other examples, and the same examples 1000 times larger: outputs that ignore
    # the input are the same for every row (M21); a ReLU network's logits spread 1000 times
    # wider on the larger features, a squashed output (softmax, sigmoid, tanh, then any
    # rescaling) stays within its bounds (M85).
    probe = np.random.default_rng(1000 + ctx.index).uniform(
        0, 1, (PROBE_ROWS, NUM_FEATURES)).astype(np.float32)
    seen = {}
    for key, features, said in (("probe", probe, "a probe of other examples"),
                                ("probe_big", probe * 1000.0,
                                 "the probe's examples times 1000")):
        got = to_numpy(call(first, features, what=f"the model built by build_model, called on "
                                                  f"{said}"),
                       f"the model's output for {said}")
        seen[key] = got.reshape(-1)[:PROBE_ROWS * NUM_CLASSES + 1] \
            if got.size > 16 * PROBE_ROWS * NUM_CLASSES else got
    ids = {id(v) for v in first.trainable_variables}
    return {"output": out, **seen, "trainable": len(first.trainable_variables),
            "shared": first is second or bool(ids & {id(v) for v in second.trainable_variables}),
            "compiled": _keras_trained(first, second)}


check_build_model = exercise_check("check_build_model", collect_build_model)


# ----------------------------------------------------------------- 3. the train step
def _fresh_train_step(fn, seed, lr):
    """The student's train step on a new model, optimizer and metrics (for a diagnosis)."""
    return fn(_small_model(seed), tf.keras.optimizers.SGD(learning_rate=lr), _loss_fn(),
              *_new_metrics())


def _close_values(a, b) -> bool:
    try:
        a = np.asarray(tf.convert_to_tensor(a).numpy(), np.float64)
        b = np.asarray(tf.convert_to_tensor(b).numpy(), np.float64)
    except Exception:
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-5, atol=1e-6))


def _watch_applied(optimizer, applied: list) -> None:
    """Wrap ``apply_gradients`` and ``apply`` on this optimizer (the instance only): the
    outermost call of each step appends ``[(gradient, variable), ...]`` to ``applied``."""
    depth = [0]

    def watched(name):
        original = getattr(optimizer, name)

        def method(*args, **kwargs):
            if name == "apply_gradients":
                pairs = list(args[0] if args else kwargs.pop("grads_and_vars"))
                args = (pairs,) + tuple(args[1:])
            else:
                grads = list(args[0] if args else kwargs.pop("grads"))
                variables = args[1] if len(args) > 1 else kwargs.get("trainable_variables")
                args = (grads,) + tuple(args[1:])
                pairs = list(zip(grads, list(variables) if variables is not None
                                 else optimizer._trainable_variables))
            if depth[0] == 0:
                applied.append(pairs)
            depth[0] += 1
            try:
                return original(*args, **kwargs)
            finally:
                depth[0] -= 1
        return method

    for name in ("apply_gradients", "apply"):
        if callable(getattr(optimizer, name, None)):
            object.__setattr__(optimizer, name, watched(name))


def _step_gradients(fn, seed, batch, lr) -> str:
    """How the gradients the optimizer applied were made, from one call of a fresh step of the
    student's (new model, SGD, metrics; the case's first batch) run eagerly, so that values can
    be read, every tape result handed back shifted by :data:`~.harness.TAPE_SHIFT` (so gradients
    computed beside the tape, equal to its unshifted values, are not its results): ``"ok"``
    (the gradient applied to each variable is the result, for that variable, of a tape.gradient
    call whose target equals the loss the step returned: one call for all, or several),
    ``"target_not_loss"`` (no gradient call's target is that loss: a decoy), ``"not_applied"``
    (the gradients applied are not a gradient call's results: made by hand), ``"no_apply"`` (the
    optimizer applied nothing) or ``"failed"`` (the step raised when run eagerly)."""
    model = _small_model(seed)
    optimizer = tf.keras.optimizers.SGD(learning_rate=lr)
    applied = []
    was_eager = tf.config.functions_run_eagerly()
    try:
        step = fn(model, optimizer, _loss_fn(), *_new_metrics())
        _watch_applied(optimizer, applied)
        x, y = train_step_batch(seed, batch, 0)
        tf.config.run_functions_eagerly(True)
        with recording_gradients(shift=TAPE_SHIFT) as record, _full_precision():
            loss = step(tf.constant(x), tf.constant(y))
    except Exception:
        return "failed"
    finally:
        tf.config.run_functions_eagerly(was_eager)
    variables = model.trainable_variables
    calls = [(target, tf.nest.flatten(sources), tf.nest.flatten(result))
             for _, target, sources, result in record.calls[:50]]
    calls = [c for c in calls if _close_values(c[0], loss)]
    if not calls:
        return "target_not_loss"
    if not applied:
        return "no_apply"
    given = {}
    for pairs in applied:
        for gradient, variable in pairs:
            given.setdefault(id(variable), gradient)

    def from_a_call(v) -> bool:  # one call for all variables, or one per variable, or any split
        return id(v) in given and any(
            s is v and g is not None and _close_values(given[id(v)], g)
            for _, sources, results in calls if len(sources) == len(results)
            for s, g in zip(sources, results))

    return "ok" if all(from_a_call(v) for v in variables) else "not_applied"


def collect_make_train_step(fn, predicted_traces=NOT_GIVEN, predicted_iterations=NOT_GIVEN, *,
                            case, ctx):
    """Kernel half of ``check_make_train_step``: ``make_train_step(model, optimizer, loss_fn,
    loss_metric, acc_metric)`` gets a small Keras model (weights from the case's seed), plain
    SGD (so the update must be exactly ``w - lr * gradient``),
    ``SparseCategoricalCrossentropy(from_logits=True)`` and the metrics ``Mean`` /
    ``SparseCategoricalAccuracy``; the step it returns is called several times as a graph, and
    after each call the loss it returned, the weights, the metrics and the optimizer's
    iteration count are observed, with which gradient calls a GradientTape made. When the check
    is given them, the student's predictions of the notebook's run of three epochs
    (``predicted_traces``: how many times the step traces; ``predicted_iterations``: the
    optimizer's iterations afterwards) are passed on.

    The grader then compares the loss (cross-entropy at the weights before the update), the
    weights (one SGD step), the metrics (running mean of the losses, accuracy of the batches
    seen) with its own, and asks for the idea (M21): a tape computed the gradients of the
    model's variables, and the optimizer given took one step per call.

    Args:
        case: ``(seed, batch_size, learning_rate, steps)``.
    Returns:
        ``{"calls": [{"loss", "weights", "loss_metric", "acc_metric", "iterations"}, ...],
        "tape": bool, "prediction": None or {"traces", "iterations"}}``.
    Raises:
        CheckFailed: not a tf.function; when the optimizer gets no gradients, the cause found
            by tracing the step again on a fresh model (M05 loss outside the tape, M12 op
            without gradient, M13 tf.stop_gradient, M14 NumPy); M07 (a variable, e.g. a new
            optimizer or metric, created inside the tf.function).
    """
    __tracebackhide__ = True
    seed, batch, lr, steps = int(case[0]), int(case[1]), float(case[2]), int(case[3])
    model = _small_model(seed)
    optimizer = tf.keras.optimizers.SGD(learning_rate=lr)
    keras_steps = []
    _watch_keras_steps(optimizer, keras_steps)
    loss_metric, acc_metric = _new_metrics()
    with _watching_keras() as made_keras:
        step = call(fn, model, optimizer, _loss_fn(), loss_metric, acc_metric, what=ctx.what)
    if not is_tf_function(step):
        fail("make_train_step should return a function decorated with @tf.function.",
             fix="define the train step as a tf.function inside and return it.",
             code="not_tf_function")
    calls = []
    with _watching_keras() as early_keras, recording_gradients() as record, _full_precision():
        for n_call in range(steps):
            x, y = train_step_batch(seed, batch, n_call)
            loss = call(step, tf.constant(x), tf.constant(y),
                        what=f"the train_step made by make_train_step ({ctx.label})",
                        rerun=lambda x=x, y=y: _fresh_train_step(fn, seed, lr)(
                            tf.constant(x), tf.constant(y)))
            calls.append({"loss": _observed(loss), "weights": _weights(model),
                          "loss_metric": float(loss_metric.result()),
                          "acc_metric": float(acc_metric.result()),
                          "iterations": int(optimizer.iterations.numpy())})
        tape = _tape_covered(record, model.trainable_variables)
    with _watching_keras() as keras_calls:
        gradients = _step_gradients(fn, seed, batch, lr)
    keras_calls += made_keras + early_keras + keras_steps
    return {"calls": calls, "tape": tape, "gradients": gradients, "keras": bool(keras_calls),
            "prediction": _predictions(traces=predicted_traces, iterations=predicted_iterations)}


check_make_train_step = exercise_check("check_make_train_step", collect_make_train_step)


# ------------------------------------------------------------------ 4. the eval step
def collect_make_eval_step(fn, case, ctx):
    """Kernel half of ``check_make_eval_step``: ``make_eval_step(model, loss_fn, loss_metric,
    acc_metric)`` gets a small Keras model (weights from the case's seed); the step it returns
    is called on a few batches as a graph, and after each call the loss, the weights and the
    metrics are observed, with whether a GradientTape's gradient ran.

    The grader then compares the loss and the metrics with its own, requires the weights
    unchanged, and asks for the idea (M21): evaluation takes no gradients.

    Args:
        case: ``(seed, batch_size, calls)``.
    Returns:
        ``{"calls": [{"loss", "weights", "loss_metric", "acc_metric", "acc_count"}, ...],
        "tape": bool, "training_mode": whether the step called the model with training=True}``.
    Raises:
        CheckFailed: not a tf.function; a cause of :func:`call`.
    """
    __tracebackhide__ = True
    seed, batch, n_calls = int(case[0]), int(case[1]), int(case[2])
    training_seen = []
    model = _small_model(seed + 100, training_seen=training_seen)
    loss_metric, acc_metric = _new_metrics()
    step = call(fn, model, _loss_fn(), loss_metric, acc_metric, what=ctx.what)
    if not is_tf_function(step):
        fail("make_eval_step should return a function decorated with @tf.function.",
             fix="define the evaluation step as a tf.function inside and return it.",
             code="not_tf_function")
    calls = []
    with recording_gradients() as record, _full_precision():
        for n_call in range(n_calls):
            x, y = eval_step_batch(seed, batch, n_call)
            loss = call(step, tf.constant(x), tf.constant(y),
                        what=f"the eval_step made by make_eval_step ({ctx.label})")
            calls.append({"loss": _observed(loss), "weights": _weights(model),
                          "loss_metric": float(loss_metric.result()),
                          "acc_metric": float(acc_metric.result()),
                          "acc_count": float(acc_metric.count)})
    return {"calls": calls, "tape": bool(record.calls),
            "training_mode": any(flag is True for flag in training_seen)}


check_make_eval_step = exercise_check("check_make_eval_step", collect_make_eval_step)


# ---------------------------------------------------------------------- 5. the loop
def collect_fit(fn, case, ctx):
    """Kernel half of ``check_fit``: ``fit(model, optimizer, train_ds, val_ds, epochs)`` trains
    a small model of the check (weights from the case's seed) with Adam on part of the digits'
    training split for a few epochs; the history it returns, the weights, the trained model's
    logits on the validation set, the optimizer's iteration count and whether Keras'
    compile()/fit() touched the model are observed.

    The grader then asks: ``history`` holds lists ``"loss"``, ``"accuracy"``, ``"val_loss"``,
    ``"val_accuracy"`` of one number per epoch; the weights changed; the training loss fell;
    the last ``val_loss`` / ``val_accuracy`` equal the final model's cross-entropy and accuracy
    on the validation set (against the grader's own labels), which holds only when the metrics
    are reset at the start of every epoch; and the idea (M21): the optimizer given took one
    step per batch of every epoch, and Keras' compile()/fit() played no part.

    Args:
        case: ``(seed, epochs, n_train)``.
    A second run (:func:`_fit_rule_run`) trains a fresh small model with SGD with momentum on
    fixed batches, for the grader to replay: the weights and the optimizer's momentum slots
    after it.

    Returns:
        ``{"history", "lengths", "weights", "val_logits", "iterations", "keras", "rule",
        "val_passes": how many times fit read val_ds from its start, "eval_trains": the
        model's weights changed while val_ds was read}``.
    Raises:
        CheckFailed: not a dict, a key missing, a value that is not a number; the mistakes of
            the train step that ``fit`` builds (M05, M07, M12, M13, ...), found by running
            ``fit`` again as a graph for one batch.
    """
    __tracebackhide__ = True
    from utils.data import load_digits_splits, make_dataset

    seed, epochs, n_train = int(case[0]), int(case[1]), int(case[2])
    splits = load_digits_splits(seed=seed)
    train_ds = make_dataset(splits.x_train[:n_train], splits.y_train[:n_train], FIT_BATCH,
                            shuffle=True, seed=seed)
    model = _small_model(seed, hidden=32)
    val_ds, val_passes = _counted_dataset(splits.x_val, splits.y_val, FIT_VAL_BATCH, model)
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
    keras_steps = []
    _watch_keras_steps(optimizer, keras_steps)
    # One batch of a static shape for the diagnosis: with op determinism on (the notebook's
    # set-up), the cross-entropy of an unknown batch size computes its indices from the logits'
    # shape (comparisons, integer casts), which the diagnosis would take for an op without a
    # gradient (M12) where the loss was computed outside the tape (M05).
    small_ds = tf.data.Dataset.from_tensors((splits.x_train[:FIT_BATCH], splits.y_train[:FIT_BATCH]))
    with _watching_keras() as keras_calls, _full_precision():
        history = call(fn, model, optimizer, train_ds, val_ds, epochs, what=ctx.what,
                       rerun=lambda: fn(_small_model(seed, hidden=32),
                                        tf.keras.optimizers.Adam(learning_rate=0.01),
                                        small_ds, small_ds, 1))
        val_logits = to_numpy(call(model, splits.x_val, what="the model trained by fit"),
                              "the trained model's output")
    if not isinstance(history, dict):
        fail(f"fit should return a dict of lists, got {type(history).__name__}.",
             code="history_type")
    values, lengths = {}, {}
    for key in HISTORY_KEYS:
        if key not in history:
            fail(f"the history returned by fit has no key {key!r} (keys: "
                 f"{sorted(map(str, history))}).", code="history_keys")
        try:
            lengths[key] = len(history[key])
            values[key] = [float(to_numpy(v, f"history[{key!r}]").reshape(()))
                           for v in list(history[key])[:HISTORY_LIMIT]]
        except (CheckFailed, TypeError, ValueError):
            fail(f"history[{key!r}] should be a list of numbers, one per epoch.",
                 code="history_type")
    with _watching_keras() as rule_keras:
        rule = _fit_rule_run(fn, seed, ctx, keras_steps)
    return {"history": values, "lengths": lengths, "weights": _weights(model),
            "val_logits": val_logits, "iterations": int(optimizer.iterations.numpy()),
            "keras": (bool(keras_calls) or bool(rule_keras) or bool(keras_steps)
                      or _keras_trained(model)),
            "rule": rule, "val_passes": val_passes[0], "eval_trains": val_passes[1]}


def _counted_dataset(x, y, batch_size: int, model):
    """A dataset of ``(x_batch, y_batch)`` in order (float32 features, int32 labels, batches of
    ``batch_size``, the last smaller) that counts how often it is read from its start, in
    Python or in a graph, and sees whether ``model``'s weights change while it is read:
    ``(dataset, seen)``, ``seen[0]`` the count, ``seen[1]`` True once the weights changed
    between two batches of one pass. Used for fit's ``val_ds``: a loop that evaluates on other
    data never reads it (M67); an evaluation that trains changes the weights (M55)."""
    x, y = np.asarray(x, dtype=np.float32), np.asarray(y, dtype=np.int32)
    seen = [0, False]

    def batches():
        seen[0] += 1
        before = _weights(model)
        for start in range(0, len(y), batch_size):
            yield x[start:start + batch_size], y[start:start + batch_size]
            if not seen[1] and any(not np.array_equal(a, b)
                                   for a, b in zip(before, _weights(model))):
                seen[1] = True

    spec = (tf.TensorSpec((None,) + x.shape[1:], tf.float32), tf.TensorSpec((None,), tf.int32))
    return tf.data.Dataset.from_generator(batches, output_signature=spec), seen


def _momentum_slots(optimizer, variables) -> list:
    """The momentum slot of each of ``variables`` in an SGD ``optimizer`` (Keras 3: the
    ``momentums`` list, in the order of the variables it was built for), None for a variable
    it holds none for (an optimizer never built, or built for other variables)."""
    try:
        built = list(optimizer._trainable_variables)
        momentums = list(optimizer.momentums)
    except Exception:
        return [None] * len(variables)
    slots = []
    for variable in variables:
        index = next((i for i, v in enumerate(built) if v is variable), None)
        slots.append(None if index is None or index >= len(momentums)
                     else np.asarray(momentums[index].numpy()))
    return slots


def _fit_rule_run(fn, seed: int, ctx, keras_steps: list) -> dict:
    """A second run of the student's ``fit``, whose every step the grader can replay: a fresh
    small model, SGD with momentum (an optimizer with state of its own), the fixed batches of
    :func:`~autograder.checks.judge.training.fit_rule_data` in their order (no shuffle), a few
    epochs, every tape result handed back with ``FIT_RULE["shift"]`` added (the grader replays
    the optimizer's rule on the loss's gradients plus that shift, so an update from gradients
    computed beside the tape does not match). Returns the weights after it, the optimizer's
    momentum slots for the model's
    variables (None where it has none) and its iteration count; a step of that optimizer taken
    inside Keras' train step is noted in ``keras_steps``."""
    __tracebackhide__ = True
    x, y = fit_rule_data(seed)
    train_ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(FIT_BATCH)
    val_ds = tf.data.Dataset.from_tensor_slices((x[:FIT_BATCH], y[:FIT_BATCH])).batch(FIT_BATCH)
    model = _small_model(seed + FIT_RULE["seed_offset"], hidden=FIT_RULE["hidden"])
    optimizer = tf.keras.optimizers.SGD(learning_rate=FIT_RULE["lr"],
                                        momentum=FIT_RULE["momentum"])
    _watch_keras_steps(optimizer, keras_steps)
    with _full_precision(), recording_gradients(shift=FIT_RULE["shift"]):
        call(fn, model, optimizer, train_ds, val_ds, FIT_RULE["epochs"],
             what=f"{ctx.what} (a second run: SGD with momentum, batches in a fixed order)")
    return {"weights": _weights(model),
            "slots": _momentum_slots(optimizer, model.trainable_variables),
            "iterations": int(optimizer.iterations.numpy())}


check_fit = exercise_check("check_fit", collect_fit)


# --------------------------------------------------------------- 6. the final model
#: The trainable variables' shapes of the notebook's network (64 features, Dense(64, relu),
#: Dense(10)), used when the notebook's build_model cannot be found or called.
NOTEBOOK_SHAPES = [[NUM_FEATURES, 64], [64], [64, NUM_CLASSES], [NUM_CLASSES]]


def _shapes(variables) -> list:
    return [[int(d) for d in v.shape] for v in variables]


def _build_model_network(model, features, logits):
    """``(shapes, same)``: the trainable variables' shapes of a fresh model of the notebook's
    ``build_model`` (:data:`NOTEBOOK_SHAPES` when the notebook has none, or it fails), and
    whether that fresh model, given ``model``'s weights, gives ``logits``, ``model``'s outputs
    on ``features`` (the notebook's network stands in for a build_model that is missing or
    fails, or makes no trainable variables): whether the trained model is
    build_model's network, its accuracy in the weights it learnt."""
    build = getattr(sys.modules.get("__main__"), "build_model", None)
    try:
        fresh = build()
        shapes = _shapes(fresh.trainable_variables)
        if not shapes:
            raise ValueError("no trainable variables")
    except Exception:  # no build_model in the notebook, or it fails: the notebook's network
        fresh = tf.keras.Sequential([tf.keras.Input(shape=(NUM_FEATURES,)),
                                     tf.keras.layers.Dense(64, activation="relu"),
                                     tf.keras.layers.Dense(NUM_CLASSES)])
        shapes = NOTEBOOK_SHAPES
    try:
        fresh.set_weights(model.get_weights())
        same = bool(np.allclose(to_numpy(fresh(features), "out"), logits,
                                rtol=1e-4, atol=1e-4))
    except Exception:
        same = False
    return shapes, same


def collect_final_model(model, x, y=None, retrain=None, *, case, ctx, threshold=0.90):
    """Kernel half of ``check_final_model``: the trained model's predictions (argmax of its
    outputs) on the features of the case's split, which this half makes itself from
    :func:`~autograder.checks.judge.training.digits_split` (seed 0, the notebook's split: the
    inputs of the case, never what the notebook holds); whether Keras' compile()/fit() touched
    the model; its trainable variables' shapes, those of a fresh model of the notebook's
    ``build_model``, and whether that network with the model's weights gives the model's
    outputs. ``x`` and ``y``, the notebook's features and labels, are not used: the grader
    scores the predictions against its own labels of the split.

    Args:
        model: the trained Keras model, or None when the cell that trains it failed (the
            notebook sets ``model = None`` first in that cell).
        x: the notebook's features of the case's split; accepted, not used.
        retrain: a function of no arguments that runs that cell's training again; called only
            in a visible check when ``model`` is None, to say why the training failed.
        case: ``"val"`` or ``"test"``: the split (of the notebook's digits split, seed 0).
    Returns:
        ``{"predictions": int64 (n,), "keras": bool, "shapes": [[int, ...], ...],
        "build_shapes": [[int, ...], ...], "same_network": bool or None}``.
    Raises:
        CheckFailed: no model (the training cell failed, with its error); not a Keras model; an
            output of the wrong shape.
    """
    __tracebackhide__ = True
    if model is None:
        why = ""
        if retrain is not None and ctx.reveal:
            try:
                call(retrain, what="train_final_model(train_ds, val_ds)")
                why = " (it works now: run that cell again)"
            except CheckFailed as error:
                why = f". Its error: {error.cause}"
        fail(f"there is no trained model: the cell that runs `model, history = "
             f"train_final_model(train_ds, val_ds)` failed{why}",
             fix="fix the error shown under that cell, run it until it finishes, then run the "
                 "checks again.", code="no_model")
    if not isinstance(model, tf.keras.Model):
        fail(f"expected the trained Keras model, got {type(model).__name__}.", code="not_model")
    split = str(case)
    if split not in ("val", "test"):
        fail(f"unknown split {split!r}: the cases of check_final_model are 'val' or 'test'.",
             code="split")
    features = tf.constant(digits_split(0)[f"x_{split}"])
    logits = to_numpy(call(model, features, what="the trained model"), "the model's output")
    if logits.shape != (len(features), NUM_CLASSES):
        fail(f"the model's output should have shape ({len(features)}, {NUM_CLASSES}), got "
             f"{logits.shape}.", code="output_shape")
    try:
        shapes = _shapes(model.trainable_variables)
    except Exception:
        shapes = []
    build_shapes, same = _build_model_network(model, features, logits)
    return {"predictions": np.argmax(logits, axis=1).astype(np.int64),
            "keras": _keras_trained(model), "shapes": shapes, "build_shapes": build_shapes,
            "same_network": same}


_check_final_model = exercise_check("check_final_model", collect_final_model)


def check_final_model(model, x, y=None, retrain=None, *, threshold: float = 0.90, cases=None,
                      hidden: bool = False):
    """Check ``final model``: the model trained by the notebook's own custom training loop
    classifies held-out digits with accuracy at least ``threshold``; a model that Keras'
    compile()/fit() trained fails (M21).

    The accuracy is computed by the grader (the judge) from the model's predictions on the
    features of the case's split, which the check makes itself (the notebook's split, seed 0),
    and the grader's own labels of that split, never from ``x``, ``y`` or anything else the
    notebook holds. The model must be build_model's network (its trainable variables' shapes,
    and the outputs that network gives with its weights): a model with no trainable weights
    (a lookup) fails (M21). Weights that Keras' fit() learnt elsewhere, copied into a fresh
    model, cannot be told apart here: the checks of fit and of the train step grade the loop.

    Args:
        model: the trained Keras model, or None when the cell that trains it failed.
        x: the notebook's features of the split the case names (``splits.x_val`` for
            ``"val"``); accepted, not used.
        y: the notebook's labels of that split; accepted, not used.
        retrain: a function of no arguments that runs the training cell again, called when
            ``model`` is None to say why the training failed (positional in graded cells,
            whose keyword arguments the grader evaluates).
        threshold: the accuracy required.
        cases: the splits, ``["val"]`` (default) or ``["test"]``.
        hidden: name cases by number in messages.
    Raises:
        CheckFailed: the training cell failed (with its error), the accuracy is too low, or
            Keras trained the model.
    """
    __tracebackhide__ = True
    return _check_final_model(model, x, y, retrain, cases=cases, hidden=hidden,
                              threshold=threshold)
