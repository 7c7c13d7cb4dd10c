"""The checks of 08 (training for real) against right answers written three ways, the notebook's
drafts, and answers that reach the right numbers on the notebook's own cells without the idea
(a 2 written by hand for the number of replicas, the optimizer's step count restored without
its momentum, every gradient scaled to the clip norm); the grading path (kernel half, plain
data, judge with reveal=False); the grader's NumPy references; and the logical CPU split of
utils.

The distribution checks need two logical CPU devices, which TensorFlow makes only before its
first operation. This module asks for them when it is the first to start TensorFlow (run alone);
run after other modules have started it, its two-device tests run again in a fresh process
(test_two_device_tests_in_a_fresh_process) and are skipped here.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

_saved = os.environ.get("WORKBOOK_LOGICAL_CPUS")
os.environ["WORKBOOK_LOGICAL_CPUS"] = "2"  # only while utils starts TensorFlow, if it does now
import utils  # noqa: E402,F401
from utils.notebook import logical_cpus, split_cpu  # noqa: E402

if _saved is None:
    del os.environ["WORKBOOK_LOGICAL_CPUS"]
else:
    os.environ["WORKBOOK_LOGICAL_CPUS"] = _saved

import tensorflow as tf  # noqa: E402

from autograder.checks import judge, plain  # noqa: E402
from autograder.checks import scale as checks  # noqa: E402
from autograder.checks.compare import CheckFailed  # noqa: E402
from autograder.checks.judge.scale import (case_data, clipped_updates, replica_updates,  # noqa: E402
                                           resumed_runs)
from autograder.checks.kernel_entry import Entry  # noqa: E402
from tests.expect import fails, flat  # noqa: E402

TWO_CPUS = len(tf.config.list_logical_devices("CPU")) >= 2
two_cpus = pytest.mark.skipif(not TWO_CPUS, reason="TensorFlow started with one CPU device in "
                              "this process: test_two_device_tests_in_a_fresh_process runs these")

HIDDEN_SPLITS = [{"seed": 7, "split": [5, 1], "lr": 0.2}, {"seed": 8, "split": [2, 2], "lr": 0.01},
                 {"seed": 9, "split": [3], "lr": 0.3}]


# ------------------------------------------------------------------ distributed step
def distributed_step(strategy, model, optimizer, global_batch_size, *, loss="global"):
    """The solution (loss="global") and the wrong ways of averaging the loss."""
    @tf.function
    def step(dist_batch):
        def replica_step(batch):
            x, y = batch
            with tf.GradientTape() as tape:
                if loss == "global":
                    per_example = tf.reduce_sum(tf.square(model(x) - y), axis=1)
                    value = tf.nn.compute_average_loss(per_example,
                                                       global_batch_size=global_batch_size)
                else:
                    value = tf.reduce_mean(tf.square(model(x) - y))
                    if loss == "halved":
                        value = value / 2
                    elif loss == "per_replicas":
                        value = value / strategy.num_replicas_in_sync
                    elif loss == "absolute":
                        value = tf.reduce_mean(tf.abs(model(x) - y))
            grads = tape.gradient(value, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return value
        return strategy.reduce("SUM", strategy.run(replica_step, args=(dist_batch,)), axis=None)
    return step


def distributed_step_summed(strategy, model, optimizer, global_batch_size):
    """Another right spelling: the share's squared errors summed, divided by the global batch."""
    def replica_step(x, y):
        with tf.GradientTape() as tape:
            value = tf.reduce_sum(tf.square(model(x) - y)) / global_batch_size
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(value, variables), variables))
        return value

    @tf.function
    def step(dist_batch):
        losses = strategy.run(replica_step, args=dist_batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
    return step


def distributed_step_weighted(strategy, model, optimizer, global_batch_size):
    """A third: the share's mean times its size over the global batch."""
    @tf.function
    def step(dist_batch):
        def replica_step(batch):
            x, y = batch
            share = tf.cast(tf.shape(x)[0], tf.float32)
            with tf.GradientTape() as tape:
                value = tf.reduce_mean(tf.square(model(x) - y)) * share / global_batch_size
            grads = tape.gradient(value, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return value
        return strategy.reduce("SUM", strategy.run(replica_step, args=(dist_batch,)), axis=None)
    return step


def distributed_step_gradients_divided(strategy, model, optimizer, global_batch_size):
    """A fourth (a red-team round found it refused): the tape differentiates the share's summed
    squared errors, and its gradients are divided by the global batch before they are applied."""
    @tf.function
    def step(dist_batch):
        def replica_step(batch):
            x, y = batch
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(model(x) - y))
            grads = [g / global_batch_size for g in tape.gradient(loss, model.trainable_variables)]
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss / global_batch_size
        return strategy.reduce("SUM", strategy.run(replica_step, args=(dist_batch,)), axis=None)
    return step


@two_cpus
@pytest.mark.parametrize("answer", [distributed_step, distributed_step_summed,
                                    distributed_step_weighted, distributed_step_gradients_divided],
                         ids=["compute_average_loss", "summed", "weighted_mean", "gradients_divided"])
def test_distributed_step_passes_right_answers(answer, capsys):
    checks.check_make_distributed_step(answer)
    checks.check_make_distributed_step(answer, cases=HIDDEN_SPLITS, hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


@two_cpus
@pytest.mark.parametrize("loss, says", [
    ("mean", "the number of replicas times the global batch's (2)"),
    ("halved", "times a constant factor (0.5)"),
    ("per_replicas", "batches differ in size"),
], ids=["draft_per_replica_mean", "halved_by_hand", "divided_by_replicas"])
def test_distributed_step_names_a_loss_averaged_per_replica(loss, says):
    fails(checks.check_make_distributed_step,
          lambda *a: distributed_step(*a, loss=loss), "M88", says=says)


@two_cpus
def test_distributed_step_another_loss_is_a_wrong_value_not_m88():
    message = fails(checks.check_make_distributed_step,
                    lambda *a: distributed_step(*a, loss="absolute"), None, says="the kernel")
    assert "M88" not in message


@two_cpus
def test_distributed_step_halved_by_hand_is_right_on_the_notebooks_case():
    """The known-wrong answer reaches the right numbers with two equal shares: only the other
    cases catch it."""
    checks.check_make_distributed_step(lambda *a: distributed_step(*a, loss="halved"),
                                       cases=[{"seed": 0, "split": [4, 4], "lr": 0.1}])


@two_cpus
def test_distributed_step_grading_path_names_m88_without_values():
    with pytest.raises(CheckFailed) as info:
        grade("check_make_distributed_step", (lambda *a: distributed_step(*a, loss="mean"),),
              [{"seed": 5, "split": [3, 3], "lr": 0.1}])
    assert info.value.mistake == "M88"
    assert "(2)" not in flat(info.value) and "hidden case 1" in flat(info.value)


def test_distributed_step_with_too_few_devices_says_so():
    with pytest.raises(CheckFailed) as info:
        checks.check_make_distributed_step(distributed_step,
                                           cases=[{"seed": 0, "split": [1] * 9, "lr": 0.1}])
    assert info.value.code == "no_devices"


# ------------------------------------------------------------------ checkpoint
HIDDEN_RUNS = [{"seed": 3, "steps": 5, "stop": 3, "batch": 2, "lr": 0.05, "decay": 0.8,
                "momentum": 0.5},
               {"seed": 4, "steps": 3, "stop": 1, "batch": 3, "lr": 0.2, "decay": 0.9,
                "momentum": 0.95}]


def checkpoint_named(trainer):
    return tf.train.Checkpoint(model=trainer.model, optimizer=trainer.optimizer,
                               iterator=trainer.batches)


def checkpoint_of_variables(trainer):
    return tf.train.Checkpoint(weights=trainer.model.trainable_variables, opt=trainer.optimizer,
                               batches=trainer.batches)


def checkpoint_by_attribute(trainer):
    checkpoint = tf.train.Checkpoint()
    checkpoint.net, checkpoint.optimizer = trainer.model, trainer.optimizer
    checkpoint.data = trainer.batches
    return checkpoint


def checkpoint_of_every_attribute(trainer):
    return tf.train.Checkpoint(**vars(trainer))  # the dataset and the log too: harmless


@pytest.mark.parametrize("answer", [checkpoint_named, checkpoint_of_variables,
                                    checkpoint_by_attribute, checkpoint_of_every_attribute],
                         ids=["keywords", "variables_list", "attributes", "every_attribute"])
def test_checkpoint_passes_right_answers(answer, capsys):
    checks.check_make_checkpoint(answer)
    checks.check_make_checkpoint(answer, cases=HIDDEN_RUNS, hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("answer, mistake, says", [
    (lambda t: tf.train.Checkpoint(model=t.model), "M89", "step count is back to 0"),
    (lambda t: tf.train.Checkpoint(model=t.model, iterator=t.batches), "M89", "starts again"),
    (lambda t: tf.train.Checkpoint(model=t.model, step=t.optimizer.iterations,
                                   iterator=t.batches), "M89",
     "right step count but no momentum"),
    (lambda t: tf.train.Checkpoint(model=t.model, optimizer=t.optimizer), "M90",
     "first batches again"),
    (lambda t: tf.train.Checkpoint(model=t.model, optimizer=t.optimizer, data=t.dataset),
     "M90", "first batches again"),
    (lambda t: tf.train.Checkpoint(trainer=t), "M98", "cannot save"),
    (lambda t: tf.train.Checkpoint(iterator=t.batches), None, "the kernel"),
    (lambda t: {"model": t.model}, None, "tf.train.Checkpoint"),
], ids=["draft_model_only", "model_and_data", "iterations_by_hand", "no_iterator",
        "dataset_not_iterator", "trainer_object", "data_only", "not_a_checkpoint"])
def test_checkpoint_names_what_the_resume_lost(answer, mistake, says):
    fails(checks.check_make_checkpoint, answer, mistake, says=says)


def test_checkpoint_grading_path_names_m89_without_values():
    with pytest.raises(CheckFailed) as info:
        grade("check_make_checkpoint",
              (lambda t: tf.train.Checkpoint(model=t.model, step=t.optimizer.iterations,
                                             iterator=t.batches),),
              HIDDEN_RUNS[:1])
    assert info.value.mistake == "M89" and info.value.code == "slots_lost"
    assert not any(ch.isdigit() for ch in flat(info.value).replace("hidden case 1", "")
                   .replace("M89", ""))


# ------------------------------------------------------------------ clipped step
HIDDEN_CLIPS = [{"seed": 4, "rows": 6, "scale": 20.0, "clip": 2.0, "lr": 0.05},
                {"seed": 5, "rows": 10, "scale": 0.5, "clip": 10.0, "lr": 0.1},
                {"seed": 6, "rows": 4, "scale": 100.0, "clip": 0.5, "lr": 0.2}]


def clipped_step(model, optimizer, clip_norm, *, clip="global", log="before"):
    """The solution (clip="global", log="before") and the wrong ways to clip and to log."""
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        norm = tf.linalg.global_norm(grads)
        if clip == "global":
            grads, _ = tf.clip_by_global_norm(grads, clip_norm)
        elif clip == "per_tensor":
            grads = [tf.clip_by_norm(g, clip_norm) for g in grads]
        elif clip == "normalized":
            grads = [g * clip_norm / norm for g in grads]
        elif clip == "by_value":
            grads = [tf.clip_by_value(g, -clip_norm, clip_norm) for g in grads]
        elif clip == "constant":  # the factor of the notebook's first case, written by hand
            grads = [g * 0.03 for g in grads]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss, (tf.linalg.global_norm(grads) if log == "after" else norm)
    return step


def clipped_by_the_optimizer(model, optimizer, clip_norm):
    """Keras clips with global_clipnorm; the norm logged is the tape's, before clipping."""
    optimizer.global_clipnorm = clip_norm

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss, tf.linalg.global_norm(grads)
    return step


def clipped_as_one_vector(model, optimizer, clip_norm):
    def step(x, y):
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        flat = tf.concat([tf.reshape(g, [-1]) for g in tape.gradient(loss, variables)], 0)
        parts = tf.split(tf.clip_by_norm(flat, clip_norm), [tf.size(v) for v in variables])
        optimizer.apply_gradients((tf.reshape(p, v.shape), v) for p, v in zip(parts, variables))
        return loss, tf.norm(flat)
    return tf.function(step)


@pytest.mark.parametrize("answer", [clipped_step, clipped_by_the_optimizer,
                                    clipped_as_one_vector],
                         ids=["clip_by_global_norm", "global_clipnorm", "one_vector"])
def test_clipped_step_passes_right_answers(answer, capsys):
    checks.check_make_clipped_step(answer)
    checks.check_make_clipped_step(answer, cases=HIDDEN_CLIPS, hidden=True)
    assert capsys.readouterr().out.count("passed") == 2


@pytest.mark.parametrize("clip, log, mistake, says", [
    ("per_tensor", "after", "M91", "clipped by its own norm"),
    ("per_tensor", "before", "M91", "update turns"),
    ("global", "after", "M94", "cannot show the exploding batch"),
    ("normalized", "before", "M95", "although their norm is below it (4.61 < 100)"),
    ("none", "before", None, "not clipped"),
    ("by_value", "before", None, "value by value"),
    ("constant", "before", None, "the kernel after the step"),
], ids=["draft", "per_tensor_logged_right", "logged_after_clipping", "normalized_always",
        "unclipped", "by_value", "factor_by_hand"])
def test_clipped_step_names_the_wrong_clip_or_log(clip, log, mistake, says):
    fails(checks.check_make_clipped_step,
          lambda *a: clipped_step(*a, clip=clip, log=log), mistake, says=says)


def numpy_clipped_step(model, optimizer, clip_norm, *, tape_beside=False):
    """Right weights without the tape's gradients: the squared error's gradient by hand, the
    clip by hand; with ``tape_beside``, an agreeing tape call is made and ignored, and the
    optimizer applies the hand gradients."""
    def step(x, y):
        kernel, bias = model.trainable_variables
        error = x @ kernel + bias - y
        n = tf.cast(tf.shape(x)[0], tf.float32)
        grads = [2.0 * tf.transpose(x) @ error / n, 2.0 * tf.reduce_sum(error, axis=0) / n]
        norm = tf.linalg.global_norm(grads)
        factor = tf.minimum(1.0, clip_norm / norm)
        if tape_beside:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip([g * factor for g in grads], [kernel, bias]))
        else:
            kernel.assign_sub(optimizer.learning_rate * factor * grads[0])
            bias.assign_sub(optimizer.learning_rate * factor * grads[1])
        return tf.reduce_mean(tf.square(error)), norm
    return tf.function(step)


@pytest.mark.parametrize("tape_beside, says", [
    (False, "did not make the step"), (True, "computed beside the tape")],
    ids=["no_tape_no_optimizer", "hand_gradients_beside_a_tape"])
def test_clipped_step_rejects_right_weights_not_from_the_tape_and_optimizer(tape_beside, says):
    fails(checks.check_make_clipped_step,
          lambda *a: numpy_clipped_step(*a, tape_beside=tape_beside), "M21", says=says)


def test_clipped_step_normalized_is_right_on_an_exploding_batch():
    """The known-wrong answer reaches the right numbers where the gradient is above the bound
    (the notebook's corrupt batch): only the case below the bound catches it."""
    checks.check_make_clipped_step(lambda *a: clipped_step(*a, clip="normalized"),
                                   cases=[judge.by_name("make_clipped_step").cases[0]])


def test_clipped_step_returning_the_loss_alone_says_what_to_return():
    def loss_only(model, optimizer, clip_norm):
        step = clipped_step(model, optimizer, clip_norm)
        return lambda x, y: step(x, y)[0]
    fails(checks.check_make_clipped_step, loss_only, None, says="the loss and the gradients' norm")


def test_clipped_step_grading_path_names_m95_without_values():
    with pytest.raises(CheckFailed) as info:
        grade("check_make_clipped_step", (lambda *a: clipped_step(*a, clip="normalized"),),
              HIDDEN_CLIPS[1:2])
    assert info.value.mistake == "M95" and info.value.code == "normalized"
    assert "<" not in flat(info.value) and "hidden case 1" in flat(info.value)


def test_clipped_updates_follow_tensorflows_formula():
    case = {"seed": 0, "rows": 8, "scale": 50.0, "clip": 1.0, "lr": 0.1}
    ways = clipped_updates(case)
    kernel, bias, x, y = case_data(0, 8)
    variables = [tf.Variable(kernel, dtype=tf.float64), tf.Variable(bias, dtype=tf.float64)]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.constant(x, tf.float64) @ variables[0] + variables[1]
                                        - tf.constant(y, tf.float64) * 50.0))
    grads = tape.gradient(loss, variables)
    clipped, norm = tf.clip_by_global_norm(grads, 1.0)
    assert ways["norm"] == pytest.approx(float(norm), rel=1e-9) and ways["norm"] > 1.0
    np.testing.assert_allclose(ways["right"][0], kernel - 0.1 * clipped[0].numpy(), rtol=1e-9)
    per_tensor = [tf.clip_by_norm(g, 1.0) for g in grads]
    np.testing.assert_allclose(ways["per_tensor"][1], bias - 0.1 * per_tensor[1].numpy(), rtol=1e-9)
    for other in ("per_tensor", "unclipped", "by_value"):
        assert not np.allclose(ways[other][0], ways["right"][0], rtol=1e-3), other
    np.testing.assert_allclose(ways["normalized"][0], ways["right"][0], rtol=1e-9)
    assert ways["clipped_norms"][0] == pytest.approx(1.0)


# ------------------------------------------------------------------ predictions
@pytest.mark.parametrize("check, right, wrong, mistake", [
    (checks.check_predict_replica_factor, (2,), (1,), "M88"),
    (checks.check_predict_replica_factor, (2.0,), (0.5,), "M88"),
    (checks.check_predict_clipping, (True, False), (True, True), "M91"),
    (checks.check_predict_clipping, (True, False), (False, False), None),
    (checks.check_predict_export, (2, False), (2, True), "M92"),
    (checks.check_predict_export, (2, False), (1, False), "M92"),
    (checks.check_predict_underflow, (True, False), (False, False), "M93"),
    (checks.check_predict_underflow, (True, False), (True, True), None),
    (checks.check_predict_draft_log, (7.071,), (5.0,), "M91"),
    (checks.check_predict_draft_log, (5 * 2 ** 0.5,), (829.3,), "M94"),
    (checks.check_predict_draft_log, (7.07,), (10.0,), None),
], ids=["factor_one", "factor_half", "per_tensor_keeps", "global_turns", "third_shape_works",
        "one_function", "float16_keeps_it", "scaled_still_zero", "log_at_most_the_clip",
        "log_the_batch_norm", "log_twice_the_clip"])
def test_predictions(check, right, wrong, mistake, capsys):
    check(*right)
    assert "1 case passed" in capsys.readouterr().out
    with pytest.raises(CheckFailed) as info:
        check(*wrong)
    assert info.value.mistake == mistake and info.value.code == "wrong_prediction"


def test_a_measured_prediction_is_m71():
    fails(lambda v: checks.check_predict_replica_factor(v), tf.constant(2.0), "M71",
          says="written in the prediction cell")
    fails(lambda v: checks.check_predict_export(v, False), 2.0, "M71", says="whole number")
    fails(lambda v: checks.check_predict_draft_log(v), "7.071", "M71", says="a number")


# ------------------------------------------------------------------ the grader's references
def test_replica_updates_follow_the_mathematics():
    # Equal shares: the mean of the shares' means is the global mean; their sum is twice it.
    ways = replica_updates({"seed": 0, "split": [4, 4], "lr": 0.1})
    kernel, bias, _, _ = case_data(0, 8)
    step = kernel - ways["global"][0]
    np.testing.assert_allclose(kernel - ways["sum_of_means"][0], 2 * step, rtol=1e-6)
    np.testing.assert_allclose(ways["mean_of_means"][0], ways["global"][0], rtol=1e-6)
    # Unequal shares: the mean of the means is another update.
    ways = replica_updates({"seed": 0, "split": [3, 1], "lr": 0.1})
    assert not np.allclose(ways["mean_of_means"][0], ways["global"][0], rtol=1e-3)


def test_resumed_runs_right_is_the_uninterrupted_run():
    case = {"seed": 2, "steps": 4, "stop": 2, "batch": 3, "lr": 0.1, "decay": 0.5,
            "momentum": 0.9}
    kernel, bias, x, y = case_data(2, 12)
    w = [kernel.astype(np.float64), bias.astype(np.float64)]
    v = [np.zeros_like(w[0]), np.zeros_like(w[1])]
    for t in range(4):
        xb, yb = x[3 * t:3 * t + 3].astype(np.float64), y[3 * t:3 * t + 3].astype(np.float64)
        error = xb @ w[0] + w[1] - yb
        grads = [2 * xb.T @ error / 3, 2 * error.sum(axis=0) / 3]
        v = [0.9 * vi - 0.1 * 0.5 ** t * g for vi, g in zip(v, grads)]
        w = [wi + vi for wi, vi in zip(w, v)]
    runs = resumed_runs(case)
    np.testing.assert_allclose(runs["right"][0], w[0], rtol=1e-12)
    for other in ("optimizer_restarts", "slots_lost", "data_restarts", "both_restart"):
        assert not np.allclose(runs[other][0], w[0], rtol=1e-4), other


# ------------------------------------------------------------------ the logical CPU split
@pytest.mark.parametrize("text, count", [("2", 2), ("1", 1), ("0", 1), ("9", 1), ("two", 1),
                                         ("", 1)])
def test_logical_cpus_reads_the_environment(monkeypatch, text, count):
    monkeypatch.setenv("WORKBOOK_LOGICAL_CPUS", text)
    assert logical_cpus() == count


def test_split_cpu_after_the_runtime_started_changes_nothing():
    before = len(tf.config.list_logical_devices("CPU"))
    assert split_cpu(3) is False
    assert len(tf.config.list_logical_devices("CPU")) == before


# ------------------------------------------------------------------ helpers
def grade(check_name, args, cases):
    """Grade like the grader: the kernel half through Entry.observe (hidden cases), the reply
    through plain data, each case judged with reveal=False. Raises CheckFailed."""
    entry = judge.load()[check_name]
    reply = plain.loads(Entry.observe(check_name, lambda: args, plain.dumps(
        {"cases": cases, "hidden": True, "options": {}})))
    for index, (case, answer) in enumerate(zip(cases, reply["cases"])):
        case = plain.roundtrip(case)
        judge.judge_observation(entry, case, plain.roundtrip(answer),
                                entry.context(index, case, True, reveal=False), {})


@pytest.mark.skipif(TWO_CPUS, reason="this process has two logical CPUs: the tests ran here")
def test_two_device_tests_in_a_fresh_process():
    """Where another module started TensorFlow first, the two-device tests run in a process of
    their own, in which this module is the first to start it."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         f"{Path(__file__).resolve()}", "-k", "distributed_step"],
        cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:]
    assert " skipped" not in result.stdout.splitlines()[-1], result.stdout[-3000:]


@two_cpus
def test_distributed_step_rejects_hand_gradients_beside_each_replicas_tape():
    """Each replica takes its tape's gradients and applies gradients derived by hand that agree
    with them: the run with every tape result shifted shows the step is not the tape's."""
    def beside(strategy, model, optimizer, global_batch_size):
        @tf.function
        def step(dist_batch):
            def replica_step(batch):
                x, y = batch
                with tf.GradientTape() as tape:
                    per_example = tf.reduce_sum(tf.square(model(x) - y), axis=1)
                    loss = tf.nn.compute_average_loss(per_example,
                                                      global_batch_size=global_batch_size)
                tape.gradient(loss, model.trainable_variables)
                kernel, bias = model.trainable_variables
                error = x @ kernel + bias - y
                grads = [2.0 * tf.transpose(x) @ error / global_batch_size,
                         2.0 * tf.reduce_sum(error, axis=0) / global_batch_size]
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss
            return strategy.reduce("SUM", strategy.run(replica_step, args=(dist_batch,)),
                                   axis=None)
        return step
    fails(checks.check_make_distributed_step, beside, "M21", says="computed beside the tape")


def _trainer_init(source: str) -> list[str]:
    """The statements of ``Trainer.__init__`` in ``source``, as ast dumps."""
    import ast
    tree = ast.parse(source)
    [cls] = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Trainer"]
    [init] = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    return [ast.dump(arg) for arg in init.args.args] + [ast.dump(s) for s in init.body
                                                        if not isinstance(s, ast.Expr)]


def test_the_checks_trainer_keeps_what_the_notebooks_trainer_keeps():
    # make_checkpoint(trainer) is checked on autograder.checks.scale.Trainer; students write it
    # for the Trainer of 08's notebook: the two must hold the same state, made the same way.
    import inspect
    import json
    path = Path(__file__).resolve().parents[1] / "solutions" / "08_training_for_real" / \
        "08_training_for_real.ipynb"
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
             if c["cell_type"] == "code"]
    [cell] = [c for c in cells if "class Trainer" in c]
    assert _trainer_init(cell) == _trainer_init(inspect.getsource(checks))
