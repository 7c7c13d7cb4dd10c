"""Grader halves of the checks of 08 (training for real: distribution, checkpoints, export,
gradient clipping, mixed precision), NumPy only; see :mod:`autograder.checks.judge`.

The kernel half (``autograder/checks/scale.py``) trains the checks' own small linear model (3
features, one output, weights and data from the case's seed, :func:`case_data`) with the
student's code and sends the weights it ends with. The references are the same training in
NumPy: the squared error's gradient, SGD (with momentum and an exponentially decaying rate for
the checkpoint), one step per batch. The wrong ideas this lesson teaches give other weights,
which are computed here too, so a failure names its mistake:

===================  ==========================================================================
exercise             fails with
===================  ==========================================================================
make_distributed_    M88 when the update is the sum of per-replica means (the draft: a factor of
step                 the number of replicas), the mean of per-replica means (a mean divided by
                     the number of replicas: wrong when the replicas' batches differ in size),
                     or the right update times a constant (a number of replicas written by
                     hand, found with one replica); M21 when a run with every tape result
                     shifted does not move (gradients worked out beside the tape)
make_checkpoint      M89 when the resumed run's optimizer starts again (its learning-rate
                     schedule from step 0, its momentum from 0) or keeps its step count without
                     its momentum (the iterations restored by hand); M90 when the data starts
                     again from the first batch
make_clipped_step    M91 when each gradient is clipped by its own norm (the draft); M95 when
                     every gradient is scaled to the clip norm, even one below it (right on an
                     exploding batch only); a plain failure when the update is not clipped or is
                     clipped value by value; M94 when the norm it returns is that of the clipped
                     gradients (the draft: the log never shows the explosion); M21 when the
                     optimizer did not make the step, or the step did not move with the tape's
                     results shifted (gradients worked out beside the tape)
===================  ==========================================================================

Messages show values only when ``ctx.reveal`` (a student's visible check).
"""
from __future__ import annotations

import numpy as np

from . import TAPE_SHIFT, exercise
from .readers import count, matches, values

MODULE = "autograder.checks.scale"
NUM_FEATURES = 3

PREDICTION_LABEL = lambda case: "your prediction"  # noqa: E731


def case_data(seed: int, rows: int):
    """The checks' inputs for ``seed``: ``(kernel (3, 1), bias (1,), x (rows, 3), y (rows, 1))``,
    float32, from NumPy's generator (the kernel half builds the same)."""
    rng = np.random.default_rng(seed)
    kernel = rng.normal(size=(NUM_FEATURES, 1)).astype(np.float32)
    bias = rng.normal(size=(1,)).astype(np.float32)
    x = rng.normal(size=(rows, NUM_FEATURES)).astype(np.float32)
    y = rng.normal(size=(rows, 1)).astype(np.float32)
    return kernel, bias, x, y


def _gradient(kernel, bias, x, y):
    """The gradient of the mean squared error of ``x @ kernel + bias`` against ``y``."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    error = x @ kernel + bias - y
    return 2 * x.T @ error / len(x), 2 * error.sum(axis=0) / len(x)


def _mean_loss(kernel, bias, x, y) -> float:
    return float(np.mean((np.asarray(x, np.float64) @ kernel + bias - y) ** 2))


def _shown(ctx, text: str) -> str:
    return text if ctx.reveal else ""


def _weights(obs, key: str = "weights"):
    kernel, bias = values(obs, key, 2)
    return kernel, bias


def _same_weights(got, want) -> bool:
    return matches(got[0], want[0], rtol=1e-4, atol=1e-5) and \
        matches(got[1], want[1], rtol=1e-4, atol=1e-5)


def _moved_with_the_tape(ctx, obs, want, whose: str, fix: str) -> None:
    """Fail (M21 ``beside_tape``) unless ``shifted_weights``, the weights after the kernel's run
    with every tape result shifted by TAPE_SHIFT, are ``want``: what the tape's shifted
    gradients give."""
    __tracebackhide__ = True
    if not _same_weights(_weights(obs, "shifted_weights"), want):
        ctx.fail(f"{ctx.what} returns the right weights, but not from the tape's gradients: when "
                 f"the check shifted what {whose} returned by a constant, the step did not move "
                 f"with it, so its gradients were computed beside the tape.", fix=fix,
                 mistake="M21", code="beside_tape")


# --------------------------------------------------------------------------- predictions

def _plain_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _predicted(ctx, value, name: str, kind: str) -> None:
    """Fail (M71) unless the prediction ``value`` is a plain Python value of ``kind``."""
    __tracebackhide__ = True
    ok = {"number": _plain_number(value), "bool": isinstance(value, bool),
          "count": isinstance(value, int) and not isinstance(value, bool) and value >= 0}[kind]
    if not ok:
        wanted = {"number": "a number such as 3.0", "bool": "True or False",
                  "count": "a whole number such as 3"}[kind]
        ctx.fail(f"{ctx.what}: {name} should be {wanted}, written in the prediction cell (a "
                 f"prediction is written down before the code runs, not measured).",
                 mistake="M71", fix=f"set `{name} = ...` to a plain Python value in the "
                                    f"prediction cell.", code="prediction_type")


def _wrong(ctx, name: str, got, want, why: str, mistake: str | None = None) -> None:
    __tracebackhide__ = True
    shown = _shown(ctx, f" (you predicted {got!r}; it is {want!r})")
    ctx.fail(f"{ctx.what}: {name} is not what happens{shown}. {why}", mistake=mistake,
             fix="run the cell that shows it, read the explanation below it, and correct your "
                 "prediction.", code="wrong_prediction")


@exercise("predict_replica_factor", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="under MirroredStrategy each replica's gradients are summed across the replicas; "
               "a loss averaged over the replica's own examples makes them the number of "
               "replicas times too large: 2 with two replicas.")
def predict_replica_factor(case, obs, ctx):
    """``obs``: ``values`` = [predicted_factor]. Reference: 2 (two replicas)."""
    [factor] = values(obs, "values", 1)
    _predicted(ctx, factor, "predicted_factor", "number")
    if abs(float(factor) - 2.0) > 1e-6:
        _wrong(ctx, "predicted_factor", factor, 2,
               "The replicas' gradients are added up, not averaged, when the optimizer applies "
               "them.", mistake="M88")


@exercise("predict_clipping", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="tf.clip_by_global_norm scales every gradient by one factor, so the update keeps "
               "its direction; clipping each tensor by its own norm scales them by different "
               "factors and turns the update.")
def predict_clipping(case, obs, ctx):
    """``obs``: ``values`` = [predicted_global_keeps, predicted_per_tensor_keeps]. Reference:
    True, False."""
    names = ("predicted_global_keeps", "predicted_per_tensor_keeps")
    got = values(obs, "values", 2)
    for value, name in zip(got, names):
        _predicted(ctx, value, name, "bool")
    if got[1] is not False:
        _wrong(ctx, names[1], got[1], False,
               "Each tensor clipped by its own norm is scaled by its own factor.", mistake="M91")
    if got[0] is not True:
        _wrong(ctx, names[0], got[0], True,
               "One factor, the same for every tensor, scales the whole update.")


@exercise("predict_draft_log", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="tf.clip_by_norm bounds each tensor's norm by the clip norm on its own, so the "
               "joint norm of two clipped tensors can reach clip_norm x sqrt(2) (7.071 for 5) "
               "and never more: a log of the clipped gradients cannot show a batch whose "
               "gradient is 100 times larger.")
def predict_draft_log(case, obs, ctx):
    """``obs``: ``values`` = [predicted_largest_logged]. Reference: 5 x sqrt(2) = 7.0711 (two
    tensors, each clipped to norm 5); within 0.01, so 7.07 is right."""
    [largest] = values(obs, "values", 1)
    _predicted(ctx, largest, "predicted_largest_logged", "number")
    want = 5.0 * 2.0 ** 0.5
    if abs(float(largest) - want) <= 0.01:
        return
    if abs(float(largest) - 5.0) <= 1e-6:
        _wrong(ctx, "predicted_largest_logged", largest, round(want, 4),
               "Each tensor is clipped to 5 on its own; the joint norm of two such tensors is "
               "larger than either.", mistake="M91")
    if float(largest) > 10.0:
        _wrong(ctx, "predicted_largest_logged", largest, round(want, 4),
               "The log holds the norm of the clipped gradients, not of the batch's.",
               mistake="M94")
    _wrong(ctx, "predicted_largest_logged", largest, round(want, 4),
           "Two tensors, each of norm at most 5: their joint norm is at most the length of the "
           "vector (5, 5).")


@exercise("predict_export", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="a SavedModel keeps the concrete functions traced before saving, not the Python "
               "code: a tf.function called on two shapes keeps 2, and after loading a third "
               "shape finds no matching function.")
def predict_export(case, obs, ctx):
    """``obs``: ``values`` = [predicted_kept, predicted_third_shape_works]. Reference: 2,
    False."""
    names = ("predicted_kept", "predicted_third_shape_works")
    kept, works = values(obs, "values", 2)
    _predicted(ctx, kept, names[0], "count")
    _predicted(ctx, works, names[1], "bool")
    if works is not False:
        _wrong(ctx, names[1], works, False,
               "The loaded object has no Python code to trace again.", mistake="M92")
    if kept != 2:
        _wrong(ctx, names[0], kept, 2,
               "The SavedModel holds one concrete function per input signature traced before "
               "saving.", mistake="M92")


@exercise("predict_underflow", module=MODULE, cases=[None], label=PREDICTION_LABEL,
          idea="float16's smallest positive number is about 6e-8: a gradient of 1e-9 becomes 0 "
               "in float16, while the loss scaled by 32768 gives float16 gradients of about "
               "3e-5, which survive and are divided back in float32.")
def predict_underflow(case, obs, ctx):
    """``obs``: ``values`` = [predicted_zero_unscaled, predicted_zero_scaled]. Reference: True,
    False."""
    names = ("predicted_zero_unscaled", "predicted_zero_scaled")
    got = values(obs, "values", 2)
    for value, name in zip(got, names):
        _predicted(ctx, value, name, "bool")
    if got[0] is not True:
        _wrong(ctx, names[0], got[0], True,
               "A gradient below float16's smallest positive number rounds to 0.", mistake="M93")
    if got[1] is not False:
        _wrong(ctx, names[1], got[1], False,
               "The scale lifts the float16 gradients far above float16's smallest number.")


# --------------------------------------------------------------------------- distribution

def replica_updates(case) -> dict:
    """The weights after one SGD step of the case, for each way of averaging the loss:
    ``global`` (over the global batch: the right one), ``sum_of_means`` (each replica's own mean,
    summed across replicas), ``mean_of_means`` (each replica's mean divided by the number of
    replicas); and the global batch's mean loss before the step, ``loss``."""
    split, lr = [int(n) for n in case["split"]], float(case["lr"])
    kernel, bias, x, y = case_data(int(case["seed"]), sum(split))
    kernel, bias = kernel.astype(np.float64), bias.astype(np.float64)
    edges = np.cumsum([0] + split)
    parts = [_gradient(kernel, bias, x[a:b], y[a:b]) for a, b in zip(edges[:-1], edges[1:])]
    ways = {"global": _gradient(kernel, bias, x, y),
            "sum_of_means": tuple(sum(p[i] for p in parts) for i in range(2)),
            "mean_of_means": tuple(sum(p[i] for p in parts) / len(split) for i in range(2))}
    result = {name: (kernel - lr * g[0], bias - lr * g[1]) for name, g in ways.items()}
    result["loss"] = _mean_loss(kernel, bias, x, y)
    return result


DISTRIBUTED_IDEA = ("each replica's loss is averaged over the global batch "
                    "(tf.nn.compute_average_loss with global_batch_size), so that the gradients "
                    "MirroredStrategy sums across replicas are those of the global batch's mean, "
                    "for any number of replicas and any split of the batch")

SPLIT_LABEL = lambda case: f"{len(case['split'])} replica(s), batches of {case['split']}"  # noqa: E731


@exercise("make_distributed_step", module=MODULE,
          cases=[{"seed": 0, "split": [4, 4], "lr": 0.1}, {"seed": 1, "split": [6], "lr": 0.1},
                 {"seed": 2, "split": [3, 2], "lr": 0.05}],
          label=SPLIT_LABEL, idea=DISTRIBUTED_IDEA,
          findings={"no_devices": ("{what} could not run: this kernel has fewer logical CPU "
                                   "devices than the case's replicas.",
                                   "run the notebook from the top: its set-up cell splits the "
                                   "CPU in two before TensorFlow starts.")})
def make_distributed_step(case, obs, ctx):
    """``obs``: ``weights`` = [kernel, bias] after one step, ``loss`` = what the step returned,
    ``shifted_weights`` = the weights after one step of a second run whose tape results were
    shifted by :data:`~autograder.checks.judge.TAPE_SHIFT` in every replica. Reference:
    :func:`replica_updates`."""
    got = _weights(obs)
    ways = replica_updates(case)
    replicas = len(case["split"])
    if not _same_weights(got, ways["global"]):
        if _same_weights(got, ways["sum_of_means"]):
            ctx.fail(f"{ctx.what}: the update is the number of replicas times the global batch's"
                     f"{_shown(ctx, f' ({replicas})')}: each "
                     f"replica's loss is the mean over its own examples, and MirroredStrategy "
                     f"adds the replicas' gradients.", mistake="M88", code="sum_of_means")
        if _same_weights(got, ways["mean_of_means"]):
            ctx.fail(f"{ctx.what}: the update averages the replicas' own means, which is not "
                     f"the global batch's mean when the replicas' batches differ in size.",
                     mistake="M88", code="mean_of_means")
        ratio = _ratio(got, ways["global"], case)
        if ratio is not None:
            ctx.fail(f"{ctx.what}: the update is the global batch's times a constant "
                     f"factor{_shown(ctx, f' ({ratio:.3g})')}: a number written into the loss "
                     f"by hand (a count of replicas, a batch size) does not follow the strategy "
                     f"and the batch; divide by the global_batch_size the step is given.",
                     mistake="M88", code="scaled")
        ctx.close(got[0], ways["global"][0], ", the kernel after the step", rtol=1e-4,
                  atol=1e-5)
        ctx.close(got[1], ways["global"][1], ", the bias after the step", rtol=1e-4, atol=1e-5)
    ctx.close(obs["loss"], ways["loss"], ", the loss it returns (the global batch's mean)",
              rtol=1e-4, atol=1e-5)
    # In the shifted run each replica's tape returned its gradients + TAPE_SHIFT, and the
    # strategy summed them: the right update is that of the global gradient + replicas x shift,
    # or + replicas x shift / global_batch_size where the tape differentiated a summed loss and
    # its gradients were divided by the global batch afterwards (the same update, as correct).
    extra = float(case["lr"]) * replicas * TAPE_SHIFT
    divided = extra / sum(int(n) for n in case["split"])
    if not _same_weights(_weights(obs, "shifted_weights"),
                         (ways["global"][0] - divided, ways["global"][1] - divided)):
        moved = (ways["global"][0] - extra, ways["global"][1] - extra)
        _moved_with_the_tape(ctx, obs, moved, "each replica's tape",
                             "apply the gradients each replica's tape returns.")


def _ratio(got, want, case) -> float | None:
    """The constant c with got = w0 - c * lr * g (one step), when there is one, else None."""
    kernel, bias, _, _ = case_data(int(case["seed"]), sum(int(n) for n in case["split"]))
    try:
        moved = np.concatenate([np.ravel(kernel - np.asarray(got[0], np.float64)),
                                np.ravel(bias - np.asarray(got[1], np.float64))])
        meant = np.concatenate([np.ravel(kernel - want[0]), np.ravel(bias - want[1])])
    except (TypeError, ValueError):
        return None
    if moved.shape != meant.shape or not np.all(np.isfinite(moved)):
        return None
    ratio = float(moved @ meant / (meant @ meant))
    return ratio if np.allclose(moved, ratio * meant, rtol=1e-4, atol=1e-6) else None


# --------------------------------------------------------------------------- checkpoints

def resumed_runs(case) -> dict:
    """The weights after ``steps`` SGD steps with momentum and an exponentially decaying rate
    (``lr * decay ** step``), one batch of ``batch`` rows each in order, stopped after ``stop``
    steps and resumed into a fresh model (whose own initial weights come from seed + 1): ``right``
    (everything restored), ``optimizer_restarts`` (its step count and momentum start again),
    ``slots_lost`` (its step count kept, its momentum lost), ``data_restarts`` (the batches start
    again from the first), and both of the first and last, ``both_restart``."""
    steps, stop, batch = int(case["steps"]), int(case["stop"]), int(case["batch"])
    lr, decay, momentum = float(case["lr"]), float(case["decay"]), float(case["momentum"])
    kernel, bias, x, y = case_data(int(case["seed"]), steps * batch)

    def run(weights, velocity, first_step, first_batch, count):
        weights = [np.asarray(w, np.float64) for w in weights]
        for i in range(count):
            rows = slice((first_batch + i) * batch, (first_batch + i + 1) * batch)
            grads = _gradient(weights[0], weights[1], x[rows], y[rows])
            rate = lr * decay ** (first_step + i)
            velocity = [momentum * v - rate * g for v, g in zip(velocity, grads)]
            weights = [w + v for w, v in zip(weights, velocity)]
        return weights, velocity

    zero = [np.zeros_like(kernel, np.float64), np.zeros_like(bias, np.float64)]
    stopped, velocity = run([kernel, bias], zero, 0, 0, stop)
    rest = steps - stop
    return {"right": run(stopped, velocity, stop, stop, rest)[0],
            "optimizer_restarts": run(stopped, zero, 0, stop, rest)[0],
            "slots_lost": run(stopped, zero, stop, stop, rest)[0],
            "data_restarts": run(stopped, velocity, stop, 0, rest)[0],
            "both_restart": run(stopped, zero, 0, 0, rest)[0]}


RESUME_IDEA = ("a checkpoint that resumes training holds all of its state: the model's weights, "
               "the optimizer (its step count, which drives the learning-rate schedule, and its "
               "momentum) and the data iterator, so the resumed run ends where an uninterrupted "
               "one does")


@exercise("make_checkpoint", module=MODULE,
          cases=[{"seed": 0, "steps": 4, "stop": 2, "batch": 4, "lr": 0.1, "decay": 0.5,
                  "momentum": 0.9}],
          label=lambda case: f"a run of {case['steps']} steps stopped after {case['stop']}",
          idea=RESUME_IDEA,
          kernel_evidence="the resumed model's step count is read from its optimizer in the "
                          "kernel, after the restore")
def make_checkpoint(case, obs, ctx):
    """``obs``: ``weights`` = [kernel, bias] after the resumed run, ``iterations`` = the fresh
    optimizer's step count just after the restore. Reference: :func:`resumed_runs`."""
    got = _weights(obs)
    iterations = count(obs, "iterations")
    runs = resumed_runs(case)
    if _same_weights(got, runs["right"]) and iterations == int(case["stop"]):
        return
    if _same_weights(got, runs["optimizer_restarts"]) or _same_weights(
            got, runs["both_restart"]):
        ctx.fail(f"{ctx.what}: the resumed optimizer starts again: its step count is back "
                 f"to 0 after the restore, so the learning-rate schedule restarts from its "
                 f"first rate, and its momentum from zero.", mistake="M89",
                 code="optimizer_restarts")
    if _same_weights(got, runs["slots_lost"]):
        ctx.fail(f"{ctx.what}: the resumed optimizer has the right step count but no momentum: "
                 f"the step count alone is not the optimizer's state.", mistake="M89",
                 code="slots_lost")
    if _same_weights(got, runs["data_restarts"]):
        ctx.fail(f"{ctx.what}: the resumed run trains on the first batches again: the data "
                 f"iterator's position was not in the checkpoint.", mistake="M90",
                 code="data_restarts")
    ctx.close(got[0], runs["right"][0], ", the kernel after the resumed run", rtol=1e-4,
              atol=1e-5)
    ctx.close(got[1], runs["right"][1], ", the bias after the resumed run", rtol=1e-4,
              atol=1e-5)
    ctx.close(iterations, int(case["stop"]), ", the optimizer's step count after the restore")


# --------------------------------------------------------------------------- clipping

def clipped_updates(case, shift: float = 0.0) -> dict:
    """The weights after one SGD step (rate ``lr``) on the case's batch (``rows`` rows, the
    targets times ``scale``: a large scale is the exploding batch), for each way of clipping the
    gradients to ``clip``: ``right`` (tf.clip_by_global_norm: every gradient times
    ``clip / max(norm, clip)``, ``norm`` the joint norm of all of them, TensorFlow's formula),
    ``per_tensor`` (tf.clip_by_norm on each), ``normalized`` (every gradient times
    ``clip / norm``, even below the bound), ``unclipped``, ``by_value`` (tf.clip_by_value to
    ``[-clip, clip]``); and ``norm`` (the joint norm before clipping), ``clipped_norms`` (the
    joint norms after clipping globally and per tensor: what a log after the clip shows) and
    ``loss`` (the batch's mean squared error before the step). With ``shift``, every entry of
    the gradients has ``shift`` added before clipping: the kernel's run with the tape's results
    shifted (:data:`~autograder.checks.judge.TAPE_SHIFT`)."""
    lr, clip = float(case["lr"]), float(case["clip"])
    kernel, bias, x, y = case_data(int(case["seed"]), int(case["rows"]))
    kernel, bias = kernel.astype(np.float64), bias.astype(np.float64)
    y = y.astype(np.float64) * float(case["scale"])
    grads = tuple(g + shift for g in _gradient(kernel, bias, x, y))
    norm = float(np.sqrt(sum(np.sum(g ** 2) for g in grads)))
    ways = {"right": [g * clip / max(norm, clip) for g in grads],
            "per_tensor": [g * clip / max(float(np.linalg.norm(g)), clip) for g in grads],
            "normalized": [g * clip / norm for g in grads],
            "unclipped": list(grads),
            "by_value": [np.clip(g, -clip, clip) for g in grads]}
    result = {name: (kernel - lr * g[0], bias - lr * g[1]) for name, g in ways.items()}
    result["norm"] = norm
    result["clipped_norms"] = [float(np.sqrt(sum(np.sum(g ** 2) for g in ways[name])))
                               for name in ("right", "per_tensor")]
    result["loss"] = _mean_loss(kernel, bias, x, y)
    return result


CLIPPING_IDEA = ("the gradients are clipped together by their global norm "
                 "(tf.clip_by_global_norm): one factor, min(1, clip / norm), for every tensor, "
                 "so the update keeps its direction and is left as it is below the bound; and "
                 "the norm a training log records is the one before clipping, which shows an "
                 "exploding batch")

CLIP_LABEL = lambda case: (f"a batch with targets times {case['scale']:g}, "  # noqa: E731
                           f"clipped to {case['clip']:g}")


@exercise("make_clipped_step", module=MODULE,
          cases=[{"seed": 0, "rows": 8, "scale": 50.0, "clip": 1.0, "lr": 0.1},
                 {"seed": 1, "rows": 8, "scale": 1.0, "clip": 100.0, "lr": 0.1}],
          label=CLIP_LABEL, idea=CLIPPING_IDEA)
def make_clipped_step(case, obs, ctx):
    """``obs``: ``weights`` = [kernel, bias] after one step, ``loss`` and ``norm`` = what the
    step returned, ``iterations`` = the optimizer's step count after it, ``shifted_weights`` =
    the weights after one step of a second run whose tape results were shifted by
    :data:`~autograder.checks.judge.TAPE_SHIFT`. Reference: :func:`clipped_updates`."""
    got = _weights(obs)
    ways = clipped_updates(case)
    if not _same_weights(got, ways["right"]):
        if _same_weights(got, ways["per_tensor"]):
            ctx.fail(f"{ctx.what}: each gradient is clipped by its own norm, so the kernel's and "
                     f"the bias's gradients are scaled by different factors and the update "
                     f"turns.", mistake="M91", code="per_tensor")
        if _same_weights(got, ways["normalized"]):
            below = f" ({ways['norm']:.3g} < {float(case['clip']):g})"
            ctx.fail(f"{ctx.what}: the gradients are scaled to the clip norm although their "
                     f"norm is below it{_shown(ctx, below)}: clipping only bounds a step, it "
                     f"leaves a small one as it is.", mistake="M95", code="normalized")
        if _same_weights(got, ways["unclipped"]):
            ctx.fail(f"{ctx.what}: the update is the unclipped gradient's: the gradients were "
                     f"not clipped before the optimizer applied them.", code="unclipped")
        if _same_weights(got, ways["by_value"]):
            ctx.fail(f"{ctx.what}: the gradients are clipped value by value, which turns the "
                     f"update as per-tensor clipping does.", code="by_value")
        ctx.close(got[0], ways["right"][0], ", the kernel after the step", rtol=1e-4, atol=1e-5)
        ctx.close(got[1], ways["right"][1], ", the bias after the step", rtol=1e-4, atol=1e-5)
    ctx.close(obs["loss"], ways["loss"], ", the loss it returns (the batch's mean before the "
              "step)", rtol=1e-4, atol=1e-5)
    norm = obs["norm"]
    if ways["norm"] > float(case["clip"]) and any(
            matches(norm, clipped, rtol=1e-4, atol=1e-5) for clipped in ways["clipped_norms"]):
        ctx.fail(f"{ctx.what}: the norm it returns is that of the clipped gradients, never "
                 f"above the clip norm: a log of it cannot show the exploding batch.",
                 mistake="M94", code="norm_after_clip")
    ctx.close(norm, ways["norm"], ", the gradient norm it returns (before clipping)",
              rtol=1e-4, atol=1e-5)
    if obs.get("iterations") != 1:
        ctx.fail(f"{ctx.what} returns the right weights, but the optimizer it was given did not "
                 f"make the step (its iteration count is not 1): the update was applied another "
                 f"way.", fix="let the optimizer apply the clipped gradients (read the "
                              "optimizer's apply_gradients).", mistake="M21",
                 code="optimizer_unused")
    _moved_with_the_tape(ctx, obs, clipped_updates(case, TAPE_SHIFT)["right"], "the tape",
                         "clip the gradients the tape returns and apply those.")
