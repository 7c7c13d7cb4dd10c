"""Grader halves of the checks of assignments 01 and 02 (tapes), NumPy only.

Each judge takes a case, the observations of the kernel half (``autograder/checks/tapes.py``)
and a :class:`~autograder.checks.judge.Context`; references come from analytic derivatives
(:data:`SCALAR_FUNCTIONS`), NumPy gradient descent, and central finite differences of NumPy
functions (:func:`finite_difference_hessian` over :data:`VECTOR_FUNCTIONS`). The kernel half keeps
TensorFlow versions of the same functions under the same names.

Every judge checks the numbers first, then the evidence of the idea its exercise teaches (what
``tape.gradient``, ``jacobian``, ``batch_jacobian`` or ``ForwardAccumulator.jvp`` produced, on
which tape, from which target): an answer that reaches the right numbers without it fails with
M21 (M45: a Hessian-vector product through the full Hessian). Every spelling of autodiff is
accepted where a derivative is asked; where an exercise asks for one and says why, a correct
answer in another is told it is correct and what the exercise asks instead (M46). Hidden cases
carry their NumPy references as source text (``compare.function_from_source``).
"""
from __future__ import annotations

import hashlib

import numpy as np

from . import TAPE_SHIFT, exercise
from .pitfalls import _predicted, _prediction_values, _same, _wrong
from .readers import count, matches
from ..compare import function_from_source

MODULE = "autograder.checks.tapes"

NO_TAPE = ("returns the right numbers, but no automatic differentiation computed them (no "
           "tape.gradient, jacobian, batch_jacobian or ForwardAccumulator.jvp returned them)")

#: What an exercise that asks for nested tapes says to a correct forward-over-back answer.
FORWARD_OVER_BACK = ("{what}: your answer is correct: a ForwardAccumulator's jvp of a tape's "
                     "gradient (forward-over-back) gives these derivatives. This exercise asks "
                     "for nested GradientTapes instead, because it is about the outer tape "
                     "recording the inner tape's gradient; forward-over-back is the subject "
                     "of the Hessian-vector product exercise.")


def _floats(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# 01 Gradient tape basics
# --------------------------------------------------------------------------------------------

def _refuse_finite_differences(ctx, obs, fix: str) -> None:
    """Fail (M21, ``finite_differences``) when the kernel saw f evaluated at points other than x
    (``obs["off_point_calls"]``): numbers that finite differences made, passed through tape calls
    built to return them (a target like ``x * d + tf.stop_gradient(f(x) - x * d)``), agree with
    the tapes' values and move with their shift, but a derivative by autodiff evaluates f at x
    alone."""
    calls = count(obs, "off_point_calls")
    if calls > 0:
        ctx.fail(f"{ctx.what} returns the right numbers, but it called f {calls} "
                 f"time{'s' if calls > 1 else ''} at points other than x: finite differences "
                 f"(f at x + h and x - h), passed through tape calls. Autodiff evaluates f at x "
                 f"alone and differentiates what the tape recorded there.", fix=fix, mistake="M21",
                 code="finite_differences")


def _of_target(obs, want: float) -> bool:
    """Whether one of the calls that produced the returned value (``obs["targets"]``: their
    targets' values) differentiated a target whose value is ``want``, the function of the
    exercise at the case: a made-up target (``x * formula``) has another value."""
    targets = obs["targets"]
    if not isinstance(targets, list):
        return False
    return any(isinstance(t, np.ndarray) and t.size == 1 and np.issubdtype(t.dtype, np.number)
               and np.isclose(float(t.reshape(())), want, rtol=1e-5, atol=1e-5)
               for t in targets[:16])


def _other_target(ctx, function: str, fix: str):
    ctx.fail(f"{ctx.what} returns a value autodiff produced, but the differentiated target "
             f"was not {function}: the tape (or accumulator) differentiated another "
             f"expression, whose derivative is the formula.", fix=fix, mistake="M21",
             code="tape_target")


@exercise("square_grad", module=MODULE, cases=[3.0, -1.5, 2],
          idea="a GradientTape computes dy/dx of y = x * x: the value returned is one that "
               "tape.gradient produced, of a target whose value is y = x * x (not a made-up "
               "target whose gradient is the formula).",
          kernel_evidence="which values tape.gradient (or tape.jacobian) produced while "
                          "square_grad ran")
def square_grad(case, obs, ctx):
    """``obs``: ``result`` (the returned value), ``from_tape`` (whether tape.gradient produced
    it), ``targets`` (the values of the targets of the calls that produced it: one must be
    x * x). Reference: d(x*x)/dx = 2x."""
    ctx.close(obs["result"], 2.0 * float(case), check_dtype="float")
    if obs["from_tape"] is not True:
        ctx.fail(f"{ctx.what} {NO_TAPE}: the exercise is the tape, not the formula.",
                 fix="let the tape compute dy/dx, its gradient of y with respect to x, and return "
                     "what it gives.",
                 mistake="M21", code="no_tape")
    if not _of_target(obs, float(case) ** 2):
        _other_target(ctx, "y = x * x", "compute the square inside the tape's block and return "
                                        "the gradient the tape computes.")


DRAFT_INT_WHY = ("tf.constant(2) is an int32 tensor, and a tape differentiates only "
                 "floating-point tensors: the draft's gradient for any integer is None "
                 "(TensorFlow logs a warning), not a number.")


@exercise("square_grad_prediction", module=MODULE, cases=[None],
          label=lambda case: "your prediction",
          idea="predict, then fix: the draft makes x = tf.constant(x) and watches it, so for 3.0 "
               "its tape gives 2x = 6.0, and for the integer 2 the constant is int32 and the "
               "gradient is None (M02): only floating-point tensors have gradients.")
def square_grad_prediction(case, obs, ctx):
    """``obs``: ``values`` = [predicted_float, predicted_int]: what draft_square_grad(3.0) and
    draft_square_grad(2) return, as plain Python values (a number, or None). Reference: 6.0
    and None."""
    names = ("predicted_float", "predicted_int")
    as_float, as_int = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("number_or_none", "number_or_none"))
    if not _same(as_float, 6.0):
        _wrong(ctx, names[0], as_float, 6.0, "The draft watches its float32 constant, so its "
               "tape follows y = x * x and returns dy/dx = 2x.",
               mistake=None)
    if as_int is not None:
        _wrong(ctx, names[1], as_int, None, DRAFT_INT_WHY, mistake="M02")


@exercise("sum_squared_grad", module=MODULE,
          cases=[np.ones((2, 2)), np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, -1.0, 2.0])],
          label=lambda x: f"input {np.asarray(x).tolist()}",
          idea="a GradientTape computes the gradient of z = (sum of x) ** 2 by the chain rule: "
               "the value returned is one that tape.gradient produced, of a target whose value "
               "is z.",
          kernel_evidence="which values tape.gradient (or tape.jacobian) produced while "
                          "sum_squared_grad ran")
def sum_squared_grad(case, obs, ctx):
    """``obs``: ``result``, ``from_tape``, ``targets`` (one must be z = (sum of x) ** 2).
    Reference: dz/dx_ij = 2 * sum(x), x's shape."""
    x = np.asarray(case, dtype=np.float64)
    ctx.close(obs["result"], np.full(x.shape, 2.0 * x.sum()), rtol=1e-5, atol=1e-5,
              check_dtype="float")
    if obs["from_tape"] is not True:
        ctx.fail(f"{ctx.what} {NO_TAPE}: the exercise is the chain rule done by the tape.",
                 fix="watch x, compute the sum and its square inside the tape's block, and return "
                     "the gradient the tape computes of the square with respect to x.", mistake="M21", code="no_tape")
    if not _of_target(obs, float(x.sum()) ** 2):
        _other_target(ctx, "z = (sum of x) ** 2", "watch x, compute the sum and its square inside "
                                                  "the tape's block, and return the gradient the "
                                                  "tape computes of the square with respect to x.")



# ----------------------------------------------------------------------------- predictions and fixes
# Exercises that rewrite a transcription as predict-then-verify or find-and-fix: the student's
# prediction (a value the check reads) is judged against the grader's own reference, and the
# code that verifies it (or the fixed function) must get its values from a tape (M21).

#: The input of the sum_squared_grad prediction (in the notebook's words: x = [[1, 2], [3, 4]]).
SUM_SQUARED_PREDICTION_X = [[1.0, 2.0], [3.0, 4.0]]

#: Largest prediction the judges read (entries).
MAX_PREDICTION_SIZE = 4096

CHAIN_RULE_HINT = ("work it out again by the chain rule: dz/dy for z the square of the sum, and "
                   "dy/dx_ij for one entry of the sum, so every entry of dz/dx is the same "
                   "number; then compare with what sum_squared_grad returns for this x.")


@exercise("sum_squared_prediction", module=MODULE, cases=[SUM_SQUARED_PREDICTION_X],
          label=lambda x: f"x = {np.asarray(x, dtype=float).tolist()}",
          idea="predict, then verify: the gradient of z = (sum of x) ** 2 worked out by the chain "
               "rule before any tape runs (every entry 2 * sum(x)), then shown by the tape: the "
               "prediction must equal the gradient, and sum_squared_grad's value at that x must "
               "be one that tape.gradient produced.",
          kernel_evidence="which values tape.gradient (or tape.jacobian) produced while "
                          "sum_squared_grad ran on the prediction's x")
def sum_squared_prediction(case, obs, ctx):
    """``obs``: ``predicted`` (the student's ``predicted_dz_dx`` as a float64 array, or None when
    it is not numbers), ``result`` (sum_squared_grad at the case's x), ``from_tape``. Reference:
    dz/dx_ij = 2 * sum(x). No message shows the reference: the student verifies with the tape."""
    x = _floats(case)
    want = np.full(x.shape, 2.0 * x.sum())
    predicted = obs["predicted"]
    if (not isinstance(predicted, np.ndarray) or predicted.size > MAX_PREDICTION_SIZE
            or not np.issubdtype(predicted.dtype, np.number) or predicted.shape != x.shape):
        ctx.fail(f"{ctx.what}: predicted_dz_dx should be numbers in the shape of x (a nested "
                 f"list such as [[a, b], [c, d]]), one partial derivative per entry.",
                 fix="write your prediction as a nested list of x's shape.",
                 code="prediction_shape")
    if not np.allclose(predicted, want, rtol=1e-3, atol=1e-3):
        ctx.fail(f"{ctx.what}: your prediction predicted_dz_dx is not the gradient of "
                 f"z = (sum of x) ** 2 at this x.", fix=CHAIN_RULE_HINT, code="prediction")
    ctx.close(obs["result"], want, ", sum_squared_grad(x)", rtol=1e-5, atol=1e-5,
              check_dtype="float")
    if obs["from_tape"] is not True:
        ctx.fail(f"{ctx.what}: sum_squared_grad {NO_TAPE}, so nothing verified your "
                 f"prediction: the verification is the tape's.",
                 fix="watch x, compute the sum and its square inside the tape's block, and return "
                     "the gradient the tape computes of the square with respect to x.", mistake="M21", code="no_tape")
    if not _of_target(obs, float(x.sum()) ** 2):
        _other_target(ctx, "z = (sum of x) ** 2", "watch x, compute the sum and its square inside "
                                                  "the tape's block, and return the gradient the "
                                                  "tape computes of the square with respect to x.")


# ----------------------------------------------------------------------------- train_step

TRAIN_STEP_CASES = [
    {"n": 8, "n_in": 3, "n_out": 1, "loss": "mse", "lr": 0.1, "seed": 1},
    {"n": 16, "n_in": 2, "n_out": 2, "loss": "mse", "lr": 0.05, "seed": 2},
]

#: How many steps of train_step a case runs.
TRAIN_STEPS = 2


def linear_problem(case):
    """Data and initial weights of a train_step case, from ``case["seed"]`` (float32): the
    kernel half builds its Keras model from them, the judge its reference."""
    rng = np.random.default_rng(case["seed"])
    x = rng.normal(size=(case["n"], case["n_in"])).astype(np.float32)
    y = rng.normal(size=(case["n"], case["n_out"])).astype(np.float32)
    kernel = rng.normal(size=(case["n_in"], case["n_out"])).astype(np.float32)
    bias = rng.normal(size=(case["n_out"],)).astype(np.float32)
    return x, y, kernel, bias


def numpy_sgd_step(x, y, kernel, bias, loss, lr):
    """One SGD step of a dense layer ``x @ kernel + bias`` in float64 NumPy.

    Returns (loss before the step, gradient of the kernel, gradient of the bias, new kernel,
    new bias). Keras' MeanSquaredError and MeanAbsoluteError average over every entry, so the
    gradient of the mean is divided by n * k.
    """
    x, y, kernel, bias = (np.asarray(a, dtype=np.float64) for a in (x, y, kernel, bias))
    residual = x @ kernel + bias - y
    count = residual.size
    if loss == "mse":
        value = np.mean(residual ** 2)
        d_pred = 2.0 * residual / count
    elif loss == "mae":
        value = np.mean(np.abs(residual))
        d_pred = np.sign(residual) / count
    else:  # pragma: no cover - case definition error
        raise ValueError(f"unknown loss {loss!r}")
    d_kernel, d_bias = x.T @ d_pred, d_pred.sum(axis=0)
    return value, d_kernel, d_bias, kernel - lr * d_kernel, bias - lr * d_bias


def _tape_gave(grads, want, rtol, atol) -> bool:
    """Whether one of the gradients a tape computed for a weight (a list of arrays, from the
    kernel) equals the reference ``want``."""
    if not isinstance(grads, list):
        return False
    for grad in grads[:16]:
        if isinstance(grad, np.ndarray) and grad.shape == want.shape and np.issubdtype(
                grad.dtype, np.number) and np.allclose(grad, want, rtol=rtol, atol=atol):
            return True
    return False


@exercise("train_step", module=MODULE, cases=TRAIN_STEP_CASES,
          label=lambda c: f"input dense {c['n_in']}->{c['n_out']}, {c['loss']}, lr={c['lr']}",
          idea="one training step by hand: tape.gradient computes the gradient of the loss "
               "with respect to the model's weights, and the update applies it; the model's "
               "own Keras loop (compile, fit, train_on_batch) is not the step.",
          kernel_evidence="the gradients tape.gradient computed for the model's kernel and bias "
                          "during each step, and whether the model was compile()d or trained "
                          "by Keras' own loop")
def train_step(case, obs, ctx):
    """``obs``: ``steps``, one dict per step (``loss`` returned, ``kernel`` and ``bias`` after
    it, ``kernel_grads`` and ``bias_grads``: what tape.gradient computed for those weights during
    the step), and ``keras_loop`` (the model was compiled or trained by Keras). Reference: two
    SGD steps of the dense layer in NumPy, from the case's seed."""
    x, y, kernel, bias = linear_problem(case)
    initial = kernel.astype(np.float64)
    steps = obs["steps"]
    if not isinstance(steps, list) or len(steps) != TRAIN_STEPS:
        ctx.fail(f"{ctx.what}: the check could not observe its two steps.", code="malformed")
    for number, seen in enumerate(steps, start=1):
        loss_before, d_kernel, d_bias, kernel, bias = numpy_sgd_step(
            x, y, kernel, bias, case["loss"], case["lr"])
        got_kernel = seen["kernel"]
        if (number == 1 and isinstance(got_kernel, np.ndarray)
                and got_kernel.shape == initial.shape and np.allclose(got_kernel, initial)):
            ctx.fail(f"{ctx.what}: the weights did not change.",
                     fix="after computing the gradients, let the optimizer apply them, each "
                         "paired with its variable (read the optimizer's apply_gradients).",
                     code="no_update")
        ctx.close(seen["loss"], loss_before, f", loss returned by step {number}",
                  rtol=1e-4, atol=1e-5)
        ctx.close(got_kernel, kernel, f", kernel after step {number}", rtol=1e-4, atol=1e-5)
        ctx.close(seen["bias"], bias, f", bias after step {number}", rtol=1e-4, atol=1e-5)
        if not (_tape_gave(seen["kernel_grads"], d_kernel, 1e-4, 1e-5)
                and _tape_gave(seen["bias_grads"], d_bias, 1e-4, 1e-5)):
            ctx.fail(f"{ctx.what} returns the right numbers, but in step {number} no tape "
                     f"computed the gradient of the loss with respect to the model's weights: "
                     f"the update must come from tape.gradient, not from a formula.",
                     fix="take the tape's gradients of the loss with respect to the model's "
                         "trainable variables, then let the optimizer apply them (read the "
                         "optimizer's apply_gradients).",
                     mistake="M21", code="no_tape")
    if obs["keras_loop"] is not False:
        ctx.fail(f"{ctx.what} returns the right numbers, but the model was compiled and "
                 f"trained by Keras' own loop (model.compile with fit, train_on_batch or "
                 f"train_step): the exercise is writing that step yourself.",
                 fix="no model.compile or model.fit: record the loss on a GradientTape, take its "
                     "gradients with respect to the model's trainable variables and let the "
                     "optimizer apply them.", mistake="M21", code="keras_loop")



#: The lines of the notebook's broken_train_step, whose optimizer gets no gradients.
BROKEN_TRAIN_STEP_LINES = (
    "def broken_train_step(model, optimizer, loss_object, x, y):",
    "with tf.GradientTape() as tape:",
    "logits = model(x)",
    "loss_value = loss_object(y, logits)",
    "grads = tape.gradient(loss_value, model.trainable_variables)",
    "optimizer.apply_gradients(zip(grads, model.trainable_variables))",
    "return loss_value",
)

#: The line at fault, as the SHA-256 of its :func:`line_key` (students have this module: the
#: answer to the find is not spelled out in it).
FAULTY_LINE_SHA256 = "21cadca658c314c98853037afc26f29ccaa62ed13b04cfd831f1beb5034ceaed"

#: The line where broken_train_step's None gradients show (a symptom, not the fault).
SYMPTOM_LINE = "grads = tape.gradient(loss_value, model.trainable_variables)"

FAULT_FIX = ("a tape differentiates only what it recorded while its `with` block ran: ask of "
             "each line of broken_train_step whether the tape saw it, and copy the line at fault "
             "(as a string) into faulty_line.")


def line_key(text: str) -> str:
    """A line of code as the fault exercise compares it: without its comment and whitespace."""
    return "".join(text.split("#", 1)[0].split())


@exercise("train_step_fault", module=MODULE, cases=[TRAIN_STEP_CASES[0]],
          label=lambda c: "faulty_line",
          idea="find and fix: the student names the line of broken_train_step that leaves the "
               "tape without a path from the weights to the loss (not the line where the None "
               "gradients show), and the fixed train_step takes its update from tape.gradient of "
               "a loss the tape recorded.",
          kernel_evidence="the gradients tape.gradient computed for the model's kernel and bias "
                          "during one step of the fixed train_step")
def train_step_fault(case, obs, ctx):
    """``obs``: ``line`` (the student's ``faulty_line``, a string or None), and one step of the
    fixed train_step: ``loss``, ``kernel_grads``, ``bias_grads`` (what tape.gradient computed for
    those weights). Reference: the line at fault (:data:`FAULTY_LINE_SHA256`), and one SGD step
    in NumPy."""
    line = obs["line"]
    if not isinstance(line, str) or len(line) > 1000:
        ctx.fail(f"{ctx.what} should be a string: the line of broken_train_step at fault, "
                 f"copied from it.", fix='write it in quotes: faulty_line = "..."',
                 code="line_type")
    key = line_key(line)
    if hashlib.sha256(key.encode("utf-8", "replace")).hexdigest() != FAULTY_LINE_SHA256:
        if key == line_key(SYMPTOM_LINE):
            ctx.fail(f"{ctx.what}: the line you named is where the None gradients appear, not "
                     f"where they come from.", fix=FAULT_FIX, code="symptom")
        if key in [line_key(known) for known in BROKEN_TRAIN_STEP_LINES]:
            ctx.fail(f"{ctx.what}: the line you named is right as it stands.", fix=FAULT_FIX,
                     code="not_the_fault")
        ctx.fail(f"{ctx.what}: the text you wrote is not a line of broken_train_step.",
                 fix=FAULT_FIX, code="not_a_line")
    x, y, kernel, bias = linear_problem(case)
    loss_before, d_kernel, d_bias, _, _ = numpy_sgd_step(x, y, kernel, bias, case["loss"],
                                                         case["lr"])
    ctx.close(obs["loss"], loss_before, ", loss of the fixed train_step", rtol=1e-4, atol=1e-5)
    if not (_tape_gave(obs["kernel_grads"], d_kernel, 1e-4, 1e-5)
            and _tape_gave(obs["bias_grads"], d_bias, 1e-4, 1e-5)):
        ctx.fail(f"{ctx.what}: the fixed train_step returns the right loss, but no tape computed "
                 f"the gradient of that loss with respect to the model's weights: the fix is to "
                 f"record the loss on the tape, not to derive the update by hand.",
                 fix="a tape records only inside its block: compute the loss there too, and take "
                     "the gradients after the block.",
                 mistake="M21", code="no_tape")


# ----------------------------------------------------------------------------- fit_line

FIT_LINE_CASES = [
    {"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.0, 5.0, 7.0], "lr": 0.05, "steps": 50},
    {"x": [-1.0, 0.0, 1.0], "y": [0.5, 0.0, -0.5], "lr": 0.2, "steps": 5},
]

#: Most steps a fit_line case may ask for (the judge's work grows with it).
MAX_FIT_LINE_STEPS = 10_000


def numpy_fit_line(x, y, lr, steps, b_with_dw: bool = False, shift: float = 0.0):
    """Gradient descent on mean((w * x + b - y) ** 2) from w = b = 0, in float64 NumPy; with
    ``b_with_dw``, the draft's slip: b updated with w's gradient; with ``shift``, each gradient
    has ``shift`` added (the kernel's run with the tape's results shifted, TAPE_SHIFT).

    Returns (w, b, losses, dws, dbs): losses[k], dws[k] and dbs[k] are the loss and the
    gradients before update k.
    """
    x, y = _floats(x), _floats(y)
    w = b = 0.0
    losses, dws, dbs = [], [], []
    for _ in range(steps):
        residual = w * x + b - y
        losses.append(np.mean(residual ** 2))
        dw, db = 2.0 * np.mean(residual * x) + shift, 2.0 * np.mean(residual) + shift
        dws.append(dw)
        dbs.append(db)
        w, b = w - lr * dw, b - lr * (dw if b_with_dw else db)
    return w, b, losses, dws, dbs


def _same_losses(got, want) -> bool:
    return matches(got, want, rtol=1e-4, atol=1e-6)


def _scalars(values, count: int):
    """``values`` (a list the kernel sent) as a float64 array of ``count`` scalars, or None."""
    if not isinstance(values, list) or len(values) != count:
        return None
    try:
        array = np.array([np.asarray(v, dtype=np.float64).reshape(()) for v in values])
    except (TypeError, ValueError):
        return None
    return array


@exercise("fit_line", module=MODULE, cases=FIT_LINE_CASES,
          idea="gradient descent on tf.Variables: every step tape.gradient computes the "
               "gradients of the loss with respect to w and b, and the same two variables are "
               "updated in place (never rebound, never updated by hand-derived formulas).",
          kernel_evidence="the gradients tape.gradient computed for the returned w and b, call "
                          "by call, and that w and b are tf.Variables",
          findings={"not_variable": ("{what}: w and b should be the tf.Variables you trained.",
                                     "return the two tf.Variables, updated in place with "
                                     "assign_sub.")})
def fit_line(case, obs, ctx):
    """``obs``: ``w``, ``b`` (values of the returned tf.Variables), ``losses`` (floats),
    ``w_grads`` and ``b_grads`` (what tape.gradient computed for the returned w and b, in call
    order), ``tape_calls`` (how many tape calls it made in all), ``shifted_losses`` (the losses
    of a second run whose tape results were shifted by TAPE_SHIFT). Reference: the same
    gradient descent in NumPy, and with the shift."""
    steps = int(case["steps"])
    if not 0 <= steps <= MAX_FIT_LINE_STEPS:
        ctx.fail(f"{ctx.what}: this case asks for too many steps.", code="malformed")
    want_w, want_b, want_losses, want_dw, want_db = numpy_fit_line(
        case["x"], case["y"], case["lr"], steps)
    losses = obs["losses"]
    if not isinstance(losses, list):
        ctx.fail(f"{ctx.what}: losses should be a list of numbers.", code="type")
    if len(losses) != steps:
        want = "" if ctx.hidden or not ctx.reveal else f" ({steps})"
        got = f", got {len(losses)}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: losses should hold one value per step{want}{got}.",
                 fix="append the loss of every step, computed before its update.",
                 code="losses_length")
    if not _same_losses(losses, want_losses):
        if steps > 1 and _same_losses(losses, [want_losses[0]] * steps):
            ctx.fail(f"{ctx.what}: every step has the first step's loss: each step starts again "
                     f"from w = b = 0.", mistake="M96", code="restarts")
        if _same_losses(losses, numpy_fit_line(case["x"], case["y"], case["lr"], steps,
                                               b_with_dw=True)[2]):
            ctx.fail(f"{ctx.what}: the losses are those of b updated with w's gradient: each "
                     f"variable must move along its own gradient.", code="b_with_dw",
                     fix="update b with the gradient the tape returned for b.")
    ctx.close(losses, want_losses, ", losses", rtol=1e-4, atol=1e-6)
    ctx.close(obs["w"], want_w, ", w", rtol=1e-4, atol=1e-5)
    ctx.close(obs["b"], want_b, ", b", rtol=1e-4, atol=1e-5)
    seen_w, seen_b = obs["w_grads"], obs["b_grads"]
    if not (isinstance(seen_w, list) and isinstance(seen_b, list)):
        ctx.fail(f"{ctx.what}: the check could not observe the tape's gradients.",
                 code="malformed")
    w_grads, b_grads = _scalars(seen_w, steps), _scalars(seen_b, steps)
    if steps and not seen_w and not seen_b and obs["tape_calls"] == 0:
        ctx.fail(f"{ctx.what} {NO_TAPE}: the updates of w and b were derived by hand, "
                 f"not asked of a tape.",
                 fix="in every step, record the loss on a GradientTape and update w and b in "
                     "place with the gradients it gives (read tf.Variable's assign_sub).",
                 mistake="M21", code="no_tape")
    if w_grads is None or b_grads is None:
        ctx.fail(f"{ctx.what} returns the right numbers, but the w and b it returns were not "
                 f"the sources of exactly one gradient call per step: the same two tf.Variables "
                 f"must be trained in place, each step's update from its tape's gradients.",
                 fix="create w and b once, before the loop; per step ask the tape once for the "
                     "gradients of the loss with respect to "
                     "both, and update them in place.", mistake="M21", code="not_per_step")
    if not (np.allclose(w_grads, want_dw, rtol=1e-4, atol=1e-4)
            and np.allclose(b_grads, want_db, rtol=1e-4, atol=1e-4)):
        ctx.fail(f"{ctx.what} returns the right numbers, but the gradients its tapes computed "
                 f"are not those of the loss it minimised: the updates were derived by hand "
                 f"instead of from tape.gradient.",
                 fix="record the mean squared error on the tape and update with the gradients the "
                     "tape returns for w and b.",
                 mistake="M21", code="hand_update")
    shifted = obs.get("shifted_losses")
    if steps and not _same_losses(shifted, numpy_fit_line(case["x"], case["y"], case["lr"], steps,
                                                          shift=TAPE_SHIFT)[2]):
        ctx.fail(f"{ctx.what} returns the right numbers, but its updates are not the tape's "
                 f"results: when the check shifted every gradient the tape returned by a "
                 f"constant, the descent did not move with it, so the updates were computed "
                 f"beside the tape.",
                 fix="update w and b in place with the gradients the tape returns for them, not "
                     "with values worked out next to it.", mistake="M21", code="beside_tape")


# --------------------------------------------------------------------------------------------
# 02 Persistent and nested tapes
# --------------------------------------------------------------------------------------------

@exercise("grads_from_one_tape", module=MODULE, cases=[3.0, -1.0, 0.5],
          idea="a persistent tape records y = x * x and z = y * y once and answers two "
               "gradient calls: dz/dx and dy/dx both come from one tape object.",
          kernel_evidence="which tape.gradient calls (on which tape objects) produced the two "
                          "returned values")
def grads_from_one_tape(case, obs, ctx):
    """``obs``: ``dz_dx``, ``dy_dx``, ``from_tape`` (both produced by autodiff calls),
    ``one_tape`` (by two calls on the same tape), ``forward`` (by ForwardAccumulator.jvp:
    correct, not the persistent tape asked, M46). Reference: 4 x**3 and 2 x."""
    x = float(case)
    ctx.close(obs["dz_dx"], 4.0 * x ** 3, ", dz/dx", check_dtype="float")
    ctx.close(obs["dy_dx"], 2.0 * x, ", dy/dx", check_dtype="float")
    fix = ("record y and z once on one persistent tape (read GradientTape's persistent argument), "
           "ask it for both gradients, and release it after.")
    if obs["from_tape"] is not True:
        ctx.fail(f"{ctx.what} {NO_TAPE}: the exercise is asking one persistent tape for both "
                 f"gradients, not the formulas.", fix=fix, mistake="M21", code="no_tape")
    if obs["forward"] is True:
        ctx.fail(f"{ctx.what}: your answer is correct: a ForwardAccumulator's jvp gives both "
                 f"derivatives. This exercise asks for one persistent GradientTape instead, "
                 f"because it is about a tape that keeps its record to answer twice.", fix=fix,
                 mistake="M46", code="forward_mode")
    if obs["one_tape"] is not True:
        ctx.fail(f"{ctx.what} returns the right numbers, but from two tapes: the exercise is "
                 f"one persistent tape that records once and is asked twice.", fix=fix,
                 mistake="M21", code="two_tapes")


@exercise("grads_from_one_tape_prediction", module=MODULE, cases=[None],
          label=lambda case: "your prediction",
          idea="a bug can hide another: made persistent and nothing else, the draft runs, and "
               "both its gradients are None, because x = tf.constant(x) is never watched (M01); "
               "the RuntimeError of the second call had hidden that.")
def grads_from_one_tape_prediction(case, obs, ctx):
    """``obs``: ``values`` = [predicted_dz_dx, predicted_dy_dx]: what the draft returns at
    x = 3.0 once its tape is persistent and nothing else has changed, as plain Python values (a
    number, or None). Reference: None and None (the unwatched constant, M01)."""
    names = ("predicted_dz_dx", "predicted_dy_dx")
    got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("number_or_none", "number_or_none"))
    why = ("with persistent=True the second call no longer raises, but the draft never watches "
           "x, a tf.constant: the tape records nothing about it, so both gradients are None "
           "(108.0 and 6.0 come only once the second bug is fixed too).")
    for name, value in zip(names, got):
        if value is not None:
            _wrong(ctx, name, value, None, why, mistake="M01")


# Scalar functions of the visible cases with their first and second derivatives, NumPy, by
# name; the kernel half has TensorFlow versions under the same names
# (autograder.checks.tapes.SCALAR_FUNCTIONS). A hidden case carries its own as source text:
# {"tf": "def f(x): ...", "np": "def f(x): ... def df(x): ... def d2f(x): ...", "x": ...}.
SCALAR_FUNCTIONS = {
    "x**3": (lambda x: x ** 3, lambda x: 3 * x ** 2, lambda x: 6 * x),
    "sin": (np.sin, np.cos, lambda x: -np.sin(x)),
}


def _derivatives(case):
    """``(f, df, d2f, x)`` of a second_derivative case: a name of :data:`SCALAR_FUNCTIONS`, or
    a hidden case's NumPy source (None when the case is malformed)."""
    if isinstance(case, dict):
        scope = {name: function_from_source(case["np"], name, {"np": np})
                 for name in ("f", "df", "d2f")}
        return scope["f"], scope["df"], scope["d2f"], case["x"]
    name, x = case
    if name not in SCALAR_FUNCTIONS:
        return None
    return (*SCALAR_FUNCTIONS[name], x)


NESTED_FIX = ("let two nested tapes do it: the first derivative taken inside the outer tape's "
              "block (so the outer tape records it), then the outer tape's gradient of it after "
              "the block.")


@exercise("second_derivative", module=MODULE,
          cases=[("x**3", 1.0), ("x**3", -2.0), ("sin", 0.5)],
          label=lambda c: (f"input f = {c[0]}, x = {c[1]}" if isinstance(c, (list, tuple))
                           else "input f (hidden)"),
          idea="nested tapes: the inner tape's gradient is computed while the outer tape "
               "records, so the outer tape differentiates it again; f'(x) and f''(x) are what "
               "those two gradient calls produced, for any f.",
          kernel_evidence="which tape calls produced the returned values, whether the call "
                          "that produced f''(x) differentiated a value another tape call "
                          "produced, and whether both values moved with those calls' results "
                          "when a second call shifted each of them by a constant",
          findings={"inner_gradient_outside": (
              "{what}: f''(x) is None: the outer tape never recorded how f'(x) depends on x "
              "(the inner gradient was computed after the outer block closed).",
              "the outer tape must record the inner tape's gradient computation: take the first "
              "derivative inside the outer tape's block, then the outer tape's gradient of it "
              "after that block.")})
def second_derivative(case, obs, ctx):
    """``obs``: ``dy_dx``, ``d2y_dx2``, ``first_from_tape`` (f'(x) produced by a tape call),
    ``second_nested`` (f''(x) produced by a call whose target another call produced),
    ``second_forward`` (that call was a ForwardAccumulator.jvp: correct, but not the nested
    tapes asked, M46), ``moved`` (a second call, every autodiff result shifted by a constant,
    returned the shifted results: M21 ``beside_tape`` when not).
    Reference: analytic derivatives of :data:`SCALAR_FUNCTIONS`."""
    found = _derivatives(case)
    if found is None:
        ctx.fail(f"{ctx.what}: this case names an unknown function.", code="malformed")
    _, df, d2f, x = found
    ctx.close(obs["dy_dx"], df(np.float64(x)), ", f'(x)", rtol=1e-4, atol=1e-5,
              check_dtype="float")
    if (obs.get("second_from_tape") is True and obs["second_nested"] is not True
            and matches(obs["d2y_dx2"], df(np.float64(x)), rtol=1e-4, atol=1e-5)):
        ctx.fail(f"{ctx.what}: f''(x) is f'(x) again: the tape call that produced it "
                 f"differentiated f's value y, not the first derivative, so it gave dy/dx a "
                 f"second time.", mistake="M99", code="value_differentiated_again",
                 fix="the second derivative is the derivative of the first: ask the outer tape "
                     "for the gradient of dy_dx (the inner tape's result), not of y.")
    ctx.close(obs["d2y_dx2"], d2f(np.float64(x)), ", f''(x)", rtol=1e-4, atol=1e-5,
              check_dtype="float")
    if obs["first_from_tape"] is not True:
        ctx.fail(f"{ctx.what} {NO_TAPE}: f'(x) must be what a tape's gradient call returned.",
                 fix=NESTED_FIX, mistake="M21", code="no_tape")
    if obs["second_forward"] is True and obs["second_nested"] is True:
        ctx.fail(FORWARD_OVER_BACK.format(what=ctx.what), fix=NESTED_FIX, mistake="M46",
                 code="forward_over_back")
    if obs["second_nested"] is not True:
        ctx.fail(f"{ctx.what} returns the right numbers, but f''(x) was not computed by a tape "
                 f"that recorded the first gradient: the exercise is nested tapes.",
                 fix=NESTED_FIX, mistake="M21", code="not_nested")
    if obs.get("moved") is not True:
        ctx.fail(f"{ctx.what} returns numbers equal to what its tape calls gave, but not those "
                 f"calls' results: when the check shifted every result autodiff handed back by "
                 f"a constant, f'(x) or f''(x) stayed where it was, so it was computed beside "
                 f"the tape calls (a formula, finite differences), which decide nothing.",
                 fix="return what the two gradient calls of the nested tapes returned, not "
                     "numbers worked out next to them.", mistake="M21", code="beside_tape")
    _refuse_finite_differences(ctx, obs, NESTED_FIX)


PRODUCT_GRADS_CASES = [
    {"a": 2.0, "b": 3.0, "trainable": True},
    {"a": [1.0, -2.0], "b": [0.5, 4.0], "trainable": True},
    {"a": 0.5, "b": -4.0, "trainable": False},
]


@exercise("product_grads", module=MODULE, cases=PRODUCT_GRADS_CASES,
          idea="a tape records only what it watches: after tape.watch of a and b (on a "
               "default tape or one made with watch_accessed_variables=False), tape.gradient "
               "gives dy/da = b and dy/db = a (non-trainable variables included).",
          kernel_evidence="which tape.gradient calls produced the two returned values")
def product_grads(case, obs, ctx):
    """``obs``: ``grads`` (the two returned values), ``from_tape`` (both produced by tape
    calls). Reference: [b, a]."""
    grads = obs["grads"]
    if not isinstance(grads, list) or len(grads) != 2:
        ctx.fail(f"{ctx.what} should return a list [dy_da, dy_db].", code="type")
    ctx.close(grads[0], _floats(case["b"]), ", dy/da", check_dtype="float")
    ctx.close(grads[1], _floats(case["a"]), ", dy/db", check_dtype="float")
    if obs["from_tape"] is not True:
        ctx.fail(f"{ctx.what} {NO_TAPE}: returning b and a is the formula; the exercise is "
                 f"what a tape records of the sources it watches.",
                 fix="watch a and b on the tape, compute the product inside its block, and "
                     "return the gradients the tape gives for both.",
                 mistake="M21", code="no_tape")



#: What a source of the product_grads prediction may be: a trainable tf.Variable, a variable
#: made with trainable=False, or a tf.constant.
SOURCE_KINDS = ("variable", "frozen", "constant")

PRODUCT_PREDICTION_CASES = [
    {"a": 2.0, "b": 3.0, "pairs": [["variable", "variable"], ["variable", "frozen"],
                                   ["frozen", "frozen"], ["constant", "variable"]]},
]

#: Most pairs a product_grads prediction case may hold.
MAX_PAIRS = 16

WATCH_RULE = ("a tape made without options watches the trainable tf.Variables the computation "
              "reads, and nothing else: a variable made with trainable=False and a tf.constant "
              "get None unless tape.watch names them. Run the cell under your answer to see what "
              "broken_product_grads returns.")


def broken_product_grads_none(pairs) -> np.ndarray:
    """Which gradients the notebook's broken_product_grads (a default tape, no watch) returns as
    None for each pair of source kinds: exactly the sources that are not trainable variables."""
    return np.array([[kind != "variable" for kind in pair] for pair in pairs], dtype=bool)


@exercise("product_grads_prediction", module=MODULE, cases=PRODUCT_PREDICTION_CASES,
          label=lambda c: "predicted_none",
          idea="predict, then fix: which sources a default tape watches by itself (trainable "
               "variables only: broken_product_grads gets None for a frozen variable or a "
               "constant), then product_grads, whose tape watches exactly a and b, gives both "
               "gradients for every kind of source, from tape.gradient.",
          kernel_evidence="which tape.gradient calls produced the values product_grads returned "
                          "for each pair of sources",
          findings={"unwatched_source": (
              "{what}: product_grads returned None for a source: a tape records only the "
              "sources it watches (with watch_accessed_variables=False none by itself, a "
              "default tape only trainable variables).",
              "a tape follows trainable variables by itself, and nothing else: watch both "
              "sources (read GradientTape.watch) before computing y.")})
def product_grads_prediction(case, obs, ctx):
    """``obs``: ``predicted`` (the student's ``predicted_none`` as a bool array, or None when it
    is not a table of True/False), ``grads`` (product_grads' [dy/da, dy/db] for each pair) and
    ``from_tape`` (for each pair, whether tape calls produced both). Reference: the None pattern
    of a default tape (:func:`broken_product_grads_none`) and [b, a]."""
    pairs = case["pairs"]
    if not (isinstance(pairs, list) and 0 < len(pairs) <= MAX_PAIRS and all(
            isinstance(p, list) and len(p) == 2 and all(k in SOURCE_KINDS for k in p)
            for p in pairs)):
        ctx.fail(f"{ctx.what}: this case's pairs are malformed.", code="malformed")
    truth = broken_product_grads_none(pairs)
    predicted = obs["predicted"]
    if (not isinstance(predicted, np.ndarray) or predicted.dtype != bool
            or predicted.shape != truth.shape):
        shape = f" ({len(pairs)} pairs)" if ctx.reveal and not ctx.hidden else ""
        ctx.fail(f"{ctx.what} should be a list with one [a_is_None, b_is_None] pair of True/False "
                 f"per pair of sources{shape}.",
                 fix="write True where you expect None, in the nested list the prediction cell's "
                     "comment shows.",
                 code="prediction_shape")
    wrong = int(np.sum(np.any(predicted != truth, axis=1)))
    if wrong:
        count = f" for {wrong} of the {len(pairs)} pairs" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: your prediction of which gradients broken_product_grads returns "
                 f"as None is wrong{count}.", fix=WATCH_RULE, code="prediction")
    grads, from_tape = obs["grads"], obs["from_tape"]
    if not (isinstance(grads, list) and isinstance(from_tape, list)
            and len(grads) == len(pairs) == len(from_tape)):
        ctx.fail(f"{ctx.what}: the check could not observe product_grads on every pair.",
                 code="malformed")
    a, b = _floats(case["a"]), _floats(case["b"])
    for number, (pair, produced) in enumerate(zip(grads, from_tape), start=1):
        if not isinstance(pair, list) or len(pair) != 2:
            ctx.fail(f"{ctx.what}: product_grads should return a list [dy_da, dy_db].",
                     code="type")
        ctx.close(pair[0], b, f", product_grads' dy/da for pair {number}", check_dtype="float")
        ctx.close(pair[1], a, f", product_grads' dy/db for pair {number}", check_dtype="float")
        if produced is not True:
            ctx.fail(f"{ctx.what}: product_grads {NO_TAPE} (pair {number}): returning b and a "
                     f"is the formula; the fix is a tape that watches both sources.",
                     fix="on a tape that watches only what it is told (watch_accessed_variables "
                         "off), watch a and b, compute the product, and return the gradients the "
                         "tape gives for both.", mistake="M21", code="no_tape")


# Functions R^n -> R of the Hessian exercise's visible cases, NumPy (float64), by name; the
# kernel half has TensorFlow versions under the same names
# (autograder.checks.tapes.VECTOR_FUNCTIONS). Hidden cases carry theirs as source text.
VECTOR_FUNCTIONS = {
    "sum of cubes": lambda x: np.sum(x ** 3),
    "square of sum": lambda x: np.sum(x) ** 2,
    "rosenbrock": lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2,
}


def _vector_function(case):
    """``(f, x)`` of a hessian case: a name of :data:`VECTOR_FUNCTIONS`, or a hidden case's
    NumPy source ``{"np": "def f(x): ...", "x": ...}``; None when the case is malformed."""
    if isinstance(case, dict):
        return function_from_source(case["np"], "f", {"np": np}), case["x"]
    name, x = case
    return (VECTOR_FUNCTIONS[name], x) if name in VECTOR_FUNCTIONS else None


#: Largest n of a hessian case (the finite differences cost 4 n**2 calls of f).
MAX_HESSIAN_SIZE = 64


def finite_difference_hessian(f, x, h: float = 1e-4) -> np.ndarray:
    """The Hessian of ``f`` at ``x`` by central finite differences, in float64.

    ``H[i, j] ~ (f(x + h e_i + h e_j) - f(x + h e_i - h e_j) - f(x - h e_i + h e_j)
    + f(x - h e_i - h e_j)) / (4 h^2)``: truncation error O(h^2), rounding error about
    1e-16 |f| / h^2; with h = 1e-4 both are far below the check's tolerance (1e-3).

    Args:
        f: a NumPy function of a float64 array of shape (n,) returning a scalar.
        x: array-like of shape (n,).
    Returns:
        np.ndarray of shape (n, n), float64.
    """
    x = _floats(x)
    n = x.size
    eye = np.eye(n) * h
    hessian = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            hessian[i, j] = (float(f(x + eye[i] + eye[j])) - float(f(x + eye[i] - eye[j]))
                             - float(f(x - eye[i] + eye[j]))
                             + float(f(x - eye[i] - eye[j]))) / (4 * h * h)
    return hessian


#: The fix of a Hessian computed beside an unused tape call (M21, beside_tape).
HESSIAN_BESIDE_FIX = ("the Hessian is what the outer tape computes: return the result of its "
                      "jacobian of the inner tape's gradient (or of its gradient calls, row by "
                      "row), not numbers worked out next to it.")

HESSIAN_FIX = ("compute the inner tape's gradient inside the outer tape's block, and return the "
               "outer tape's jacobian of it (one row per entry).")


@exercise("hessian", module=MODULE,
          cases=[("sum of cubes", [1.0, -2.0]), ("square of sum", [1.0, 2.0, 3.0]),
                 ("rosenbrock", [0.5, 1.5])],
          label=lambda c: (f"input f = {c[0]}, x = {np.asarray(c[1], dtype=float).tolist()}"
                           if isinstance(c, (list, tuple)) else "input f (hidden)"),
          idea="the row-by-row draft fixed: the outer tape records the inner tape's gradient "
               "g and every entry of g it differentiates (an entry sliced after the outer block "
               "is a tensor it never recorded: None, M05); its jacobian of g, or one gradient "
               "per entry of g, is the Hessian: the matrix returned is what those outer calls "
               "produced, for any f (finite differences or a formula fail).",
          kernel_evidence="which tape calls produced the returned matrix (whole or row by row), "
                          "whether they differentiated a value another tape call produced, and "
                          "whether the matrix moved with those calls' results when a second "
                          "call shifted each of them by a constant",
          findings={"target_outside": (
              "{what} raised after an outer tape call returned None: what it differentiated "
              "(an entry `grad[i]` sliced, or the gradient computed, after the outer block "
              "closed) is a tensor the outer tape never recorded.",
              "take the entries of the gradient inside the outer tape's block, or differentiate "
              "the whole gradient with the outer tape's jacobian, which keeps one row per entry."),
              "inner_gradient_outside": (
              "{what} returned None: the outer tape never recorded how the gradient depends on "
              "x (the inner gradient was computed after the outer block closed).",
              "compute the inner tape's gradient inside the outer tape's block, then the outer "
              "tape's jacobian of that gradient after it (one row per entry).")})
def hessian(case, obs, ctx):
    """``obs``: ``result``, ``from_tape`` (the matrix, or each of its rows, produced by a tape
    call), ``nested`` (those calls differentiated a value another tape call produced),
    ``forward`` (every one of them a ForwardAccumulator.jvp: correct, not the nested tapes
    asked, M46), ``moved`` (a second call, every autodiff result shifted by a constant,
    returned the shifted results: M21 ``beside_tape`` when not).
    Reference: central finite differences of :data:`VECTOR_FUNCTIONS` in float64."""
    found = _vector_function(case)
    if found is None:
        ctx.fail(f"{ctx.what}: this case names an unknown function.", code="malformed")
    f, x = found[0], _floats(found[1])
    n = x.size
    if not 0 < n <= MAX_HESSIAN_SIZE:
        ctx.fail(f"{ctx.what}: this case's input is too large.", code="malformed")
    result = obs["result"]
    if isinstance(result, np.ndarray) and result.shape != (n, n):
        hint = (" `outer.gradient(g, x)` sums over the entries of g; use "
                "`outer.jacobian(g, x)` to keep one row per entry."
                if result.shape == (n,) else "")
        shapes = f" {(n, n)}, got {result.shape}" if ctx.reveal else " (n, n)"
        if hint:
            ctx.fail(f"{ctx.what} should have shape{shapes}: it returned one number per entry "
                     f"of x, the Hessian's column sums.{hint}", mistake="M64",
                     code="summed_hessian",
                     fix="return the outer tape's jacobian of the inner tape's gradient, computed "
                         "inside the outer block.")
        ctx.fail(f"{ctx.what} should have shape{shapes}.",
                 fix="return the (n, n) matrix of second derivatives.", code="shape")
    ctx.close(result, finite_difference_hessian(f, x), "", rtol=1e-3, atol=1e-3,
              check_dtype="float")
    if obs.get("graph_gradients") is True:
        ctx.fail(f"{ctx.what}: your answer is correct: tf.hessians (tf.gradients in a graph) "
                 f"gives these second derivatives. This exercise asks for nested "
                 f"GradientTapes instead, because it is about the outer tape recording the "
                 f"inner tape's gradient.", fix=HESSIAN_FIX, mistake="M46",
                 code="graph_hessians")
    if obs["from_tape"] is not True:
        ctx.fail(f"{ctx.what} {NO_TAPE}: the Hessian must be what the outer tape's jacobian "
                 f"(or its gradient calls, row by row) produced.", fix=HESSIAN_FIX,
                 mistake="M21", code="no_tape")
    if obs.get("moved") is not True:
        ctx.fail(f"{ctx.what} returns numbers equal to what its tape calls gave, but not "
                 f"those calls' results: when the check shifted every result autodiff handed "
                 f"back by a constant, the matrix returned stayed where it was, so it was "
                 f"computed beside the tape calls (finite differences, a formula), which "
                 f"decide nothing.", fix=HESSIAN_BESIDE_FIX, mistake="M21",
                 code="beside_tape")
    if obs["forward"] is True and obs["nested"] is True:
        ctx.fail(FORWARD_OVER_BACK.format(what=ctx.what), fix=HESSIAN_FIX, mistake="M46",
                 code="forward_over_back")
    if obs["nested"] is not True:
        ctx.fail(f"{ctx.what} returns the right numbers, but the outer tape did not "
                 f"differentiate the inner tape's gradient: the exercise is nested tapes.",
                 fix=HESSIAN_FIX, mistake="M21", code="not_nested")
    _refuse_finite_differences(ctx, obs, HESSIAN_FIX)


# --------------------------------------------------------------------------------------------
# 02 Higher-order autodiff at scale: a Hessian-vector product by forward-over-back
# --------------------------------------------------------------------------------------------

#: Largest n of an hvp case (the judge's finite differences cost 2 gradient calls).
MAX_HVP_SIZE = 4096


def hvp_problem(case):
    """The point x and the direction v of an hvp case, float32 arrays of shape (n,), from
    ``case["seed"]`` and ``case["n"]``: the kernel half calls the student's hvp on them, the
    judge computes its reference there."""
    rng = np.random.default_rng(int(case["seed"]))
    n = int(case["n"])
    x = rng.uniform(-1.0, 1.0, size=n).astype(np.float32)
    v = rng.normal(size=n).astype(np.float32)
    return x, v


def _coupled_gradient(x):
    g = np.exp(x)
    g[1:] += x[:-1]
    g[:-1] += x[1:]
    return g


#: NumPy gradients of the visible hvp functions, by name (the kernel half has the TensorFlow
#: functions, autograder.checks.tapes.HVP_FUNCTIONS). A hidden case carries its gradient as
#: source text: {"tf": "def f(x): ...", "np": "def grad(x): ...", "n": ..., "seed": ...}.
HVP_GRADIENTS = {
    "sum of quartics": lambda x: x ** 3,
    "coupled": _coupled_gradient,
}


def hvp_reference(grad, x, v, h: float = 1e-5) -> np.ndarray:
    """H(x) v by central differences of the gradient along v, in float64:
    ``(grad(x + h v) - grad(x - h v)) / (2 h)``, error O(h^2) (about 1e-10 here)."""
    x, v = _floats(x), _floats(v)
    return (_floats(grad(x + h * v)) - _floats(grad(x - h * v))) / (2 * h)


HVP_FIX = ("forward-over-back: inside a tf.autodiff.ForwardAccumulator whose primal is x and "
           "tangent v, record f on a tape that watches x, take the tape's gradient there, and "
           "return the accumulator's jvp of it.")


@exercise("hvp", module=MODULE,
          cases=[{"f": "sum of quartics", "n": 6, "seed": 0}, {"f": "coupled", "n": 5, "seed": 1},
                 {"f": "coupled", "n": 40, "seed": 2}],
          label=lambda c: f"input f = {c.get('f', 'hidden')}, n = {c['n']}",
          idea="a Hessian-vector product without the Hessian: forward-over-back, the jvp of a "
               "ForwardAccumulator (tangents v) of the gradient a GradientTape computes, gives "
               "H v in a small multiple of one gradient's time and memory (the tape's record "
               "of f and a tangent per tensor, never n * n numbers of its own); no autodiff call "
               "returns the (n, n) Hessian.",
          kernel_evidence="which autodiff calls (tape.gradient, jacobian, batch_jacobian, "
                          "ForwardAccumulator.jvp) produced the returned value and from which "
                          "target, and the most entries any autodiff call returned",
          findings={"none": ("{what} returned None instead of H v: an accumulator carries "
                             "tangents only for the operations run inside its `with` block, so "
                             "the jvp of a gradient computed after the block closed is None.",
                             "the accumulator must see the gradient computed: take the tape's "
                             "gradient inside the accumulator's block, then return the "
                             "accumulator's jvp of that gradient.")})
def hvp(case, obs, ctx):
    """``obs``: ``result``, ``methods`` (of the calls that produced it), ``derived`` (one of them
    differentiated what an earlier autodiff call returned), ``largest`` (most entries one
    autodiff call returned), ``calls`` (autodiff calls made). Reference: H v by central
    differences of the case's NumPy gradient (:func:`hvp_reference`)."""
    n = int(case["n"])
    if not 1 < n <= MAX_HVP_SIZE:
        ctx.fail(f"{ctx.what}: this case's input is too large.", code="malformed")
    if isinstance(case.get("np"), str):
        grad = function_from_source(case["np"], "grad", {"np": np})
    elif case.get("f") in HVP_GRADIENTS:
        grad = HVP_GRADIENTS[case["f"]]
    else:
        ctx.fail(f"{ctx.what}: this case names an unknown function.", code="malformed")
    x, v = hvp_problem(case)
    methods = obs["methods"] if isinstance(obs["methods"], list) else []
    slope = float(np.dot(_floats(grad(_floats(x))), _floats(v)))
    if "jvp" in methods and matches(obs["result"], slope, rtol=1e-3, atol=1e-3):
        ctx.fail(f"{ctx.what} returns one number, the derivative of f along v (grad f . v): "
                 f"the accumulator's jvp of f's value y. H v has n entries: it is the "
                 f"derivative along v of the gradient, which the tape computed inside the "
                 f"accumulator's block.", mistake="M101", code="jvp_of_value",
                 fix="return the accumulator's jvp of the tape's gradient, not of y.")
    ctx.close(obs["result"], hvp_reference(grad, x, v), ", H v", rtol=1e-3, atol=1e-3,
              check_dtype="float")
    largest, calls = obs["largest"], obs["calls"]
    if isinstance(largest, int) and largest >= n * n:
        ctx.fail(f"{ctx.what} returns the right numbers, but it built the full Hessian: an "
                 f"autodiff call returned n * n entries (a jacobian of the gradient), which "
                 f"costs n times the memory and about n gradients of time. The exercise is "
                 f"H v without H.", fix=HVP_FIX, mistake="M45", code="full_hessian")
    if not methods:
        if isinstance(calls, int) and calls >= n:
            ctx.fail(f"{ctx.what} returns the right numbers, but it made one autodiff call per "
                     f"entry and multiplied afterwards: that builds the Hessian column by "
                     f"column, n gradients of time. The exercise is one jvp of the gradient.",
                     fix=HVP_FIX, mistake="M45", code="hessian_by_columns")
        ctx.fail(f"{ctx.what} {NO_TAPE}: H v must be what the accumulator's jvp returned.",
                 fix=HVP_FIX, mistake="M21", code="no_tape")
    if "jvp" not in methods:
        ctx.fail(f"{ctx.what}: your H v is correct and builds no Hessian (a tape's gradient of "
                 f"g . v, back-over-back), but this exercise asks for forward-over-back, "
                 f"because the outer derivative then runs forward with the inner backward pass "
                 f"and records nothing more: back-over-back keeps the whole inner backward pass "
                 f"on the outer tape.", fix=HVP_FIX, mistake="M46", code="back_over_back")
    if obs["derived"] is not True:
        ctx.fail(f"{ctx.what} returns the right numbers from a jvp, but the jvp pushed forward "
                 f"a gradient written as a formula, not one a tape computed: the exercise is "
                 f"forward mode over reverse mode, both by autodiff.",
                 fix=HVP_FIX, mistake="M21", code="formula_gradient")
    _refuse_finite_differences(ctx, obs, HVP_FIX)


#: The n of the hvp prediction (the notebook's words: n = 1000 inputs, float32).
HVP_PREDICTION_N = 1000


@exercise("hvp_prediction", module=MODULE, cases=[None], label=lambda case: "your prediction",
          idea="predict the cost of higher-order autodiff at n = 1000: a float32 Hessian holds "
               "n * n * 4 bytes = 4 MB, the result of one Hessian-vector product n * 4 bytes = "
               "0.004 MB, and "
               "the Hessian is n Hessian-vector products (one per column, H e_j).")
def hvp_prediction(case, obs, ctx):
    """``obs``: ``values`` = [predicted_hessian_mb, predicted_hvp_mb,
    predicted_hvps_per_hessian]. Reference: 4.0, 0.004 (MB = 1e6 bytes) and 1000; memory
    within 10%."""
    names = ("predicted_hessian_mb", "predicted_hvp_mb", "predicted_hvps_per_hessian")
    hessian_mb, hvp_mb, per_hessian = got = _prediction_values(obs, names)
    _predicted(ctx, got, names, ("number", "number", "count"))
    n = HVP_PREDICTION_N
    why_memory = ("A float32 entry is 4 bytes: the Hessian has n * n entries, H v has n "
                  "(1 MB = 1e6 bytes here).")
    for name, value, want in ((names[0], hessian_mb, n * n * 4 / 1e6),
                              (names[1], hvp_mb, n * 4 / 1e6)):
        if not abs(float(value) - want) <= 0.1 * want:
            _wrong(ctx, name, value, want, why_memory)
    if not _same(per_hessian, n):
        _wrong(ctx, names[2], per_hessian, n, "Column j of H is H e_j: the Hessian is n "
               "Hessian-vector products, one per unit vector.")
