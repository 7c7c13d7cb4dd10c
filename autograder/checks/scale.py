"""Checks of assignment 08, training for real: a custom loop under ``tf.distribute``
(MirroredStrategy over the CPU split in logical devices), checkpoints that resume a run exactly,
a step that clips its gradients by their global norm and logs the norm, and predictions on
gradient clipping, SavedModel export and float16 underflow.

Every check is in two halves (:mod:`autograder.checks.judge`): the kernel half here calls the
student's code on the checks' own small linear model (weights and data from the case's seed,
:func:`~autograder.checks.judge.scale.case_data`) and returns the weights it ends with; the
grader half, :mod:`autograder.checks.judge.scale`, trains the same model in NumPy, the right way
and each wrong way this lesson teaches, and decides. No reference is computed here.
"""
from __future__ import annotations

import functools
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from . import kernel_entry  # noqa: F401  (the grader's way in)
from .compare import fail
from .graphs import show_prediction
from .harness import TAPE_SHIFT, call, collect_prediction, exercise_check, recording_gradients
from .judge.scale import case_data

__all__ = ["check_predict_replica_factor", "check_make_distributed_step",
           "check_make_checkpoint", "check_predict_clipping", "check_predict_export",
           "check_predict_underflow", "check_make_clipped_step", "check_predict_draft_log",
           "show_prediction", "linear_model", "cpu_strategy", "split_batch"]

check_predict_replica_factor = exercise_check("check_predict_replica_factor", collect_prediction)
check_predict_clipping = exercise_check("check_predict_clipping", collect_prediction)
check_predict_export = exercise_check("check_predict_export", collect_prediction)
check_predict_underflow = exercise_check("check_predict_underflow", collect_prediction)
check_predict_draft_log = exercise_check("check_predict_draft_log", collect_prediction)


def linear_model(kernel, bias) -> tf.keras.Model:
    """The checks' model: one Dense unit on 3 features, its weights set to ``kernel`` and
    ``bias`` (built in the current distribution strategy's scope)."""
    model = tf.keras.Sequential([tf.keras.Input((kernel.shape[0],)), tf.keras.layers.Dense(1)])
    model.set_weights([kernel, bias])
    return model


def cpu_strategy(replicas: int) -> tf.distribute.MirroredStrategy:
    """A MirroredStrategy over the first ``replicas`` logical CPU devices; CheckFailed (code
    ``no_devices``) when the kernel has fewer."""
    __tracebackhide__ = True
    devices = [d.name for d in tf.config.list_logical_devices("CPU")][:replicas]
    if len(devices) < replicas:
        fail(f"This kernel has {len(devices)} logical CPU device(s) and the check needs "
             f"{replicas}: the set-up cell splits the CPU before TensorFlow starts.",
             fix="restart the kernel and run the notebook from the top.", code="no_devices")
    return tf.distribute.MirroredStrategy(devices)


def split_batch(strategy, x, y, split):
    """A distributed batch: replica i gets the next ``split[i]`` rows of ``x`` and ``y``."""
    edges = np.cumsum([0] + list(split))

    def part(context):
        i = context.replica_id_in_sync_group
        return tf.constant(x[edges[i]:edges[i + 1]]), tf.constant(y[edges[i]:edges[i + 1]])

    return strategy.experimental_distribute_values_from_function(part)


def _plain_weights(model) -> list:
    return [np.asarray(v.numpy()).tolist() for v in model.trainable_variables]


def collect_make_distributed_step(make_fn, case, ctx):
    """Kernel half of ``check_make_distributed_step``: builds the checks' model and an SGD
    optimizer (the case's ``lr``) in a MirroredStrategy over ``len(split)`` logical CPUs, calls
    ``make_fn(strategy, model, optimizer, global_batch_size)`` and its step once on a batch
    split across the replicas as the case says.

    Returns:
        ``{"weights": [kernel, bias] after the step, "loss": what the step returned,
        "shifted_weights": [kernel, bias] after one step of a second run from the same start
        with every tape result shifted by TAPE_SHIFT}``.
    """
    __tracebackhide__ = True
    split = [int(n) for n in case["split"]]
    kernel, bias, x, y = case_data(int(case["seed"]), sum(split))
    strategy = cpu_strategy(len(split))
    with strategy.scope():
        model = linear_model(kernel, bias)
        optimizer = tf.keras.optimizers.SGD(float(case["lr"]))
    step = call(make_fn, strategy, model, optimizer, sum(split), what=ctx.what)
    loss = call(step, split_batch(strategy, x, y, split), what=ctx.what)
    try:
        loss = float(np.asarray(loss))
    except (TypeError, ValueError):
        fail(f"{ctx.what}: the step should return the loss, a float32 scalar.",
             fix="return the loss reduced across the replicas (read strategy.reduce).",
             code="type")
    weights = _plain_weights(model)
    # Once more from the start, every tape result handed back shifted by TAPE_SHIFT (in every
    # replica): a step applied from the tape's gradients moves with them.
    with strategy.scope():
        model = linear_model(kernel, bias)
        optimizer = tf.keras.optimizers.SGD(float(case["lr"]))
    with recording_gradients(shift=TAPE_SHIFT):
        step = call(make_fn, strategy, model, optimizer, sum(split), what=ctx.what)
        call(step, split_batch(strategy, x, y, split), what=ctx.what)
    return {"weights": weights, "loss": loss, "shifted_weights": _plain_weights(model)}


check_make_distributed_step = exercise_check("check_make_distributed_step",
                                             collect_make_distributed_step)


class Trainer:
    """What 08's training loop keeps between steps, as its notebook defines it: ``model``,
    ``optimizer``, ``dataset`` (the tf.data.Dataset), ``batches`` (the iterator the loop takes
    its batches from) and ``losses`` (the log: a Python list, one loss per step)."""

    def __init__(self, model, optimizer, dataset):
        self.model = model
        self.optimizer = optimizer
        self.dataset = dataset
        self.batches = iter(dataset)
        self.losses = []


def _training(case, kernel, bias, x, y):
    """The checks' trainer (SGD with momentum and ExponentialDecay with decay_steps=1, batches
    of ``batch`` rows in order) and its train step."""
    model = linear_model(kernel, bias)
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(
        float(case["lr"]), decay_steps=1, decay_rate=float(case["decay"]))
    optimizer = tf.keras.optimizers.SGD(schedule, momentum=float(case["momentum"]))
    optimizer.build(model.trainable_variables)
    trainer = Trainer(model, optimizer, tf.data.Dataset.from_tensor_slices((x, y)).batch(
        int(case["batch"])))

    def step():
        xb, yb = next(trainer.batches)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb) - yb))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        trainer.losses.append(float(loss))

    return trainer, step


def _not_trackable(error, what):
    """make_checkpoint's own detector: tf.train.Checkpoint given a value it cannot track."""
    if isinstance(error, ValueError) and "to be a trackable object" in str(error):
        return ("M98", f"{what}: tf.train.Checkpoint was given something it cannot save: it takes "
                "trackable objects (a model, an optimizer, a data iterator, tf.Variables), each "
                "by a name, and a plain Python object, int or float is none of them.",
                "give the checkpoint, each under a name of your choice, the pieces of the "
                "trainer's state that the run reads (read tf.train.Checkpoint's keyword "
                "arguments); leave out what the run does not read.")
    return None


def collect_make_checkpoint(make_fn, case, ctx):
    """Kernel half of ``check_make_checkpoint``: trains the checks' trainer (:class:`Trainer`)
    ``stop`` steps, saves ``make_fn(trainer)``, then builds a fresh trainer (a model with other
    weights, a fresh optimizer and iterator), restores ``make_fn`` of it from the save and trains
    the remaining ``steps - stop`` steps.

    Returns:
        ``{"weights": [kernel, bias] at the end, "iterations": the fresh optimizer's step
        count just after the restore}``.
    Raises:
        CheckFailed: not a tf.train.Checkpoint; M98, a value a checkpoint cannot track.
    """
    __tracebackhide__ = True
    steps, seed = int(case["steps"]), int(case["seed"])
    kernel, bias, x, y = case_data(seed, steps * int(case["batch"]))
    other_kernel, other_bias, _, _ = case_data(seed + 1, 1)
    folder = tempfile.mkdtemp(prefix="checkpoint-check-")
    not_trackable = functools.partial(_not_trackable, what=ctx.what)
    try:
        trainer, step = _training(case, kernel, bias, x, y)
        for _ in range(int(case["stop"])):
            step()
        checkpoint = call(make_fn, trainer, what=ctx.what, explain=not_trackable)
        if not isinstance(checkpoint, tf.train.Checkpoint):
            fail(f"{ctx.what} should return a tf.train.Checkpoint.",
                 fix="return a tf.train.Checkpoint of the training state.", code="type")
        path = call(checkpoint.save, f"{folder}/ckpt", what=f"saving {ctx.what}",
                    explain=not_trackable)
        trainer, step = _training(case, other_kernel, other_bias, x, y)
        fresh = call(make_fn, trainer, what=ctx.what, explain=not_trackable)
        call(fresh.restore, path, what=f"restoring {ctx.what}")
        iterations = int(trainer.optimizer.iterations.numpy())
        for _ in range(steps - int(case["stop"])):
            call(step, what=f"{ctx.what}, training after the restore")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"weights": _plain_weights(trainer.model), "iterations": iterations}


check_make_checkpoint = exercise_check("check_make_checkpoint", collect_make_checkpoint)


def collect_make_clipped_step(make_fn, case, ctx):
    """Kernel half of ``check_make_clipped_step``: builds the checks' model and SGD (the
    case's ``lr``), calls ``make_fn(model, optimizer, clip)`` and its step once on the case's
    batch (``rows`` rows of :func:`~autograder.checks.judge.scale.case_data`, the targets times
    ``scale``).

    Returns:
        ``{"weights": [kernel, bias] after the step, "loss": the loss it returned, "norm": the
        gradient norm it returned, "iterations": the optimizer's step count after it,
        "shifted_weights": [kernel, bias] after one step of a second run from the same start
        with every tape result shifted by TAPE_SHIFT}``.
    """
    __tracebackhide__ = True
    kernel, bias, x, y = case_data(int(case["seed"]), int(case["rows"]))
    y = y * np.float32(case["scale"])
    model = linear_model(kernel, bias)
    optimizer = tf.keras.optimizers.SGD(float(case["lr"]))
    step = call(make_fn, model, optimizer, float(case["clip"]), what=ctx.what)
    returned = call(step, tf.constant(x), tf.constant(y), what=ctx.what)
    try:
        loss, norm = (float(np.asarray(value)) for value in returned)
    except (TypeError, ValueError):
        fail(f"{ctx.what}: the step should return two float32 scalars, the loss and the "
             f"gradients' norm.", fix="return the pair (loss, norm) from the step.",
             code="type")
    weights, iterations = _plain_weights(model), int(optimizer.iterations.numpy())
    # Once more from the start, every tape result handed back shifted by TAPE_SHIFT: a step
    # applied from the tape's gradients moves with them; one computed beside the tape does not.
    model = linear_model(kernel, bias)
    optimizer = tf.keras.optimizers.SGD(float(case["lr"]))
    with recording_gradients(shift=TAPE_SHIFT):
        step = call(make_fn, model, optimizer, float(case["clip"]), what=ctx.what)
        call(step, tf.constant(x), tf.constant(y), what=ctx.what)
    return {"weights": weights, "loss": loss, "norm": norm, "iterations": iterations,
            "shifted_weights": _plain_weights(model)}


check_make_clipped_step = exercise_check("check_make_clipped_step", collect_make_clipped_step)
