"""Grader halves of the checks of assignment 05 (deep learning software), NumPy only.

Each judge takes a case, the observations of the kernel half (``autograder/checks/software.py``)
and a :class:`~autograder.checks.judge.Context`. References come from mathematics: the graph
``c = sum(x * y + z)`` has the gradients ``(y, x, 1)``; the two-layer network's loss and gradients
are its derivative, written out below in float64; optimizer trajectories follow Keras's update
rules; what the steps handed to step_report do follows from their kind (:func:`step_trajectory`).

The problems are made here from the case (seeds and sizes), by the NumPy-only generators below:
the kernel half imports them, so both halves build the same inputs, and a case travels as a few
numbers. See :mod:`autograder.checks.judge` for the contract.

Tolerances: results that TensorFlow computes in float32 through matrix products are compared
with a relative tolerance of at least 1e-3, because on recent NVIDIA GPUs TensorFlow runs float32
matmuls in TensorFloat-32 (10-bit mantissa) by default; element-wise float32 results and NumPy
float64 results are compared more tightly.
"""
from __future__ import annotations

import numpy as np

from . import TAPE_SHIFT, exercise
from .readers import count

MODULE = "autograder.checks.software"

#: Relative tolerance of float32 results that went through matrix products (TensorFloat-32 on
#: GPUs rounds matmul inputs to 10 bits of mantissa: about 5e-4 relative per product).
TF32_RTOL = 2e-3

#: The three ways check_cross_entropy and check_log1pexp run the student's function, in the
#: order of obs["runs"].
RUN_MODES = ("eagerly", "in a tf.function", "in a tf.function, second call")


#: Half the hidden units of a case with ``"kink"`` have pre-activations about this small (their
#: columns of w1 scaled by it): any finite difference that steps w1 by more crosses the ReLU's
#: kink, and one that steps by less drowns in rounding, while the chain rule is exact there.
KINK_SCALE = 1e-9


# ----------------------------------------------------------------------------- problems

def graph_inputs(case, dtype=np.float64):
    """``(x, y, z)`` of a graph case: ``{"seed": s, "shape": [n, d]}`` (three standard normal
    arrays from ``np.random.default_rng(s)``, in that order) or three arrays."""
    if isinstance(case, dict):
        rng = np.random.default_rng(int(case["seed"]))
        shape = tuple(int(n) for n in case["shape"])
        return tuple(rng.standard_normal(shape).astype(dtype) for _ in range(3))
    x, y, z = case
    return tuple(np.asarray(a, dtype=dtype) for a in (x, y, z))


def _graph_label(case) -> str:
    shape = (tuple(int(n) for n in case["shape"]) if isinstance(case, dict)
             else np.shape(case[0]))
    return f"x, y, z of shape {shape}"


def two_layer_problem(seed: int = 0, n: int = 64, d: int = 1000, h: int = 100,
                      dtype=np.float32):
    """Random data and weights of the two-layer ReLU network of CS231n's lecture on deep learning
    software: ``x, y`` of shape ``(n, d)`` and ``w1 (d, h)``, ``w2 (h, d)``, all standard normal
    from ``np.random.default_rng(seed)``. Returns NumPy arrays ``(x, y, w1, w2)`` of ``dtype``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = rng.standard_normal((n, d))
    w1 = rng.standard_normal((d, h))
    w2 = rng.standard_normal((h, d))
    return tuple(a.astype(dtype) for a in (x, y, w1, w2))


def two_layer_inputs(case):
    """``(x, y, w1, w2)`` in float64 of a two_layer_numpy case: ``{"seed", "n", "d", "h"}`` (see
    :func:`two_layer_problem`), with ``"kink": k`` the first ``h // 2`` columns of ``w1`` times
    ``k`` (pre-activations next to the ReLU's kink), or four arrays."""
    if isinstance(case, dict):
        x, y, w1, w2 = two_layer_problem(seed=int(case["seed"]), n=int(case["n"]),
                                         d=int(case["d"]), h=int(case["h"]), dtype=np.float64)
        if "kink" in case:
            w1[:, : w1.shape[1] // 2] *= float(case["kink"])
        return x, y, w1, w2
    return tuple(np.asarray(a, dtype=np.float64) for a in case)


def scaled_problem(seed, n, d, h):
    """The float32 problem of sgd_step and train_with_optimizer: :func:`two_layer_problem` with
    its weights scaled by ``1 / sqrt(fan_in)``, so that usual learning rates converge."""
    x, y, w1, w2 = two_layer_problem(seed=int(seed), n=int(n), d=int(d), h=int(h))
    return x, y, (w1 / np.sqrt(d)).astype(np.float32), (w2 / np.sqrt(h)).astype(np.float32)


def cross_entropy_inputs(case):
    """``(logits float32 (N, C), labels int32 (N,))`` of a cross_entropy case: two nested lists,
    or ``{"seed": s, "n": N, "c": C, "scale": k}``: logits ``k`` times standard normal, labels
    uniform in ``[0, C)``, from ``np.random.default_rng(s)``."""
    if isinstance(case, dict):
        rng = np.random.default_rng(int(case["seed"]))
        n, c = int(case["n"]), int(case["c"])
        logits = float(case["scale"]) * rng.standard_normal((n, c))
        return logits.astype(np.float32), rng.integers(0, c, n).astype(np.int32)
    logits, labels = case
    return np.asarray(logits, np.float32), np.asarray(labels, np.int32)


def cross_entropy_reference(logits, labels):
    """Mean cross-entropy of ``labels`` under ``softmax(logits)`` and its gradient with respect to
    the logits, in float64 by the log-sum-exp trick: ``mean(logsumexp(l) - l[label])`` and
    ``(softmax(l) - onehot(label)) / N``. Returns ``(value, gradient)``."""
    logits = np.asarray(logits, np.float64)
    labels = np.asarray(labels, np.int64)
    top = logits.max(axis=1, keepdims=True)
    shifted = np.exp(logits - top)
    lse = top[:, 0] + np.log(shifted.sum(axis=1))
    n = len(logits)
    value = float(np.mean(lse - logits[np.arange(n), labels]))
    grad = shifted / shifted.sum(axis=1, keepdims=True)
    grad[np.arange(n), labels] -= 1.0
    return value, grad / n


def log1pexp_inputs(case):
    """``(x, upstream)`` float32 of a log1pexp case: two lists, or ``{"seed": s, "n": n,
    "scale": k}``: x ``k`` times standard normal, the upstream gradient uniform in [0.5, 2),
    from ``np.random.default_rng(s)``."""
    if isinstance(case, dict):
        rng = np.random.default_rng(int(case["seed"]))
        n = int(case["n"])
        x = (float(case["scale"]) * rng.standard_normal(n)).astype(np.float32)
        return x, rng.uniform(0.5, 2.0, n).astype(np.float32)
    x, upstream = case
    return np.asarray(x, np.float32), np.asarray(upstream, np.float32)


def log1pexp_reference(x, upstream):
    """``log(1 + e^x)`` and ``upstream * d/dx log(1 + e^x) = upstream / (1 + e^-x)``, in float64
    and written so that neither overflows. Returns ``(value, gradient)``."""
    x = np.asarray(x, np.float64)
    value = np.logaddexp(0.0, x)
    e = np.exp(-np.abs(x))
    sigmoid = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return value, np.asarray(upstream, np.float64) * sigmoid


def two_layer_reference(x, y, w1, w2, relu_mask: bool = True):
    """Loss ``mean(sum((relu(x @ w1) @ w2 - y)^2, axis=1))`` and its gradients with respect to
    ``w1`` and ``w2``, in float64. With ``relu_mask=False``, the gradient of ``w1`` that forgets
    the ReLU (a known slip). Returns ``(loss, d_w1, d_w2)``."""
    x, y, w1, w2 = (np.asarray(a, dtype=np.float64) for a in (x, y, w1, w2))
    active = x @ w1
    hidden = np.where(active > 0, active, 0.0)
    residual = hidden @ w2 - y
    value = float((residual * residual).sum(axis=1).mean())
    d_out = residual * (2.0 / len(x))
    d_hidden = d_out @ w2.T
    if relu_mask:
        d_hidden = np.where(active > 0, d_hidden, 0.0)
    return value, x.T @ d_hidden, hidden.T @ d_out


def optimizer_trajectory(name, kwargs, x, y, w1, w2, steps):
    """Losses before each of ``steps`` updates with SGD (Keras's formulas, with momentum and
    Nesterov: ``m = momentum * m - lr * g``; ``w += m``, or ``w += momentum * m - lr * g``) or
    Adam (:func:`_adam_trajectory`). None for other optimizers (their check asks the loss to
    fall)."""
    if name == "Adam":
        return _adam_trajectory(kwargs, x, y, w1, w2, steps)
    if name != "SGD":
        return None
    lr, momentum = float(kwargs.get("learning_rate", 0.01)), float(kwargs.get("momentum", 0.0))
    nesterov = bool(kwargs.get("nesterov", False))
    weights = [np.asarray(w1, np.float64), np.asarray(w2, np.float64)]
    velocity = [np.zeros_like(a) for a in weights]
    losses = []
    for _ in range(int(steps)):
        value, *grads = two_layer_reference(x, y, *weights)
        losses.append(value)
        for i, g in enumerate(grads):
            velocity[i] = momentum * velocity[i] - lr * g
            weights[i] = weights[i] + (momentum * velocity[i] - lr * g if nesterov
                                       else velocity[i])
    return losses


def _adam_trajectory(kwargs, x, y, w1, w2, steps):
    """Losses before each of ``steps`` Adam updates, Keras 3's formulas
    (keras/src/optimizers/adam.py, amsgrad off): at step t = 1, 2, ..., ``m += (g - m) * (1 -
    beta_1)``, ``v += (g ** 2 - v) * (1 - beta_2)``, ``w -= lr * sqrt(1 - beta_2 ** t) / (1 -
    beta_1 ** t) * m / (sqrt(v) + epsilon)``; defaults 0.001, 0.9, 0.999, 1e-7. None when
    ``kwargs`` asks for anything else (amsgrad, weight decay, clipping)."""
    known = {"learning_rate", "beta_1", "beta_2", "epsilon"}
    if set(kwargs) - known:
        return None
    lr = float(kwargs.get("learning_rate", 0.001))
    beta_1, beta_2 = float(kwargs.get("beta_1", 0.9)), float(kwargs.get("beta_2", 0.999))
    epsilon = float(kwargs.get("epsilon", 1e-7))
    weights = [np.asarray(w1, np.float64), np.asarray(w2, np.float64)]
    m = [np.zeros_like(a) for a in weights]
    v = [np.zeros_like(a) for a in weights]
    losses = []
    for step in range(1, int(steps) + 1):
        value, *grads = two_layer_reference(x, y, *weights)
        losses.append(value)
        alpha = lr * np.sqrt(1 - beta_2 ** step) / (1 - beta_1 ** step)
        for i, g in enumerate(grads):
            m[i] += (g - m[i]) * (1 - beta_1)
            v[i] += (g ** 2 - v[i]) * (1 - beta_2)
            weights[i] = weights[i] - alpha * m[i] / (np.sqrt(v[i]) + epsilon)
    return losses


# ----------------------------------------------------------------------------- helpers

def _array(ctx, value, part: str) -> np.ndarray:
    """``value`` (observed) as a float64 array; fails like ``ctx.close`` for None or a value
    that is not numbers."""
    if value is None:
        ctx.fail(f"{ctx.what}{part} is None.", code="none")
    if not isinstance(value, (np.ndarray, int, float, bool, list)):
        ctx.fail(f"{ctx.what}{part} should be a tensor or a number.", code="type")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        ctx.fail(f"{ctx.what}{part} should be a tensor or a number.", code="type")
    return array


def _scalar(ctx, value, part: str, hint: str = "") -> float:
    """``value`` as one number; fails when it holds several (a sum over one axis)."""
    array = _array(ctx, value, part)
    if array.size != 1:
        shape = f", got shape {array.shape}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}{part} should be one number{hint}{shape}.", code="not_scalar")
    return float(array.reshape(()))


def _near(a, b, rtol=1e-4) -> bool:
    """Whether ``a`` and ``b`` agree entry by entry, relative to the largest entry of ``b``."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol,
                                                   atol=rtol * (np.abs(b).max() + 1e-12)))


def _scale(got: np.ndarray, want: np.ndarray) -> float | None:
    """The factor ``s`` with ``got ~ s * want`` (least squares), or None when not defined."""
    denominator = float(np.sum(want * want))
    if denominator == 0 or got.shape != want.shape:
        return None
    return float(np.sum(got * want)) / denominator


def _loss_call(calls, want_target, want_grads, rtol, any_results=False):
    """The first of the observed tape ``calls`` (``[{"target", "results"}]``, see the kernel
    half's ``_call_values``) whose target's value is ``want_target`` (the loss, or the function's
    value) and whose results are ``want_grads``, or None: evidence that the tape differentiated
    the loss itself, not a made-up target whose gradients are a formula. With ``any_results``,
    the first call of that target, whatever it returned. A persistent tape asked once per source
    counts as one call: each gradient may come from a different call of the same target."""
    if not isinstance(calls, list):
        return None
    of_target = []  # the calls that differentiated the wanted target, in order
    for found in calls[:16]:
        if not isinstance(found, dict) or not isinstance(found.get("results"), list):
            continue
        target, results = found.get("target"), found["results"]
        if not isinstance(target, np.ndarray) or target.size != 1 or \
                not np.issubdtype(target.dtype, np.number):
            continue
        if not np.isclose(float(target.reshape(())), want_target, rtol=rtol,
                          atol=rtol * abs(want_target) + 1e-6):
            continue
        if any_results:
            return results
        if len(results) == len(want_grads):
            of_target.append(results)

    def near(r, w) -> bool:
        return isinstance(r, np.ndarray) and np.issubdtype(r.dtype, np.number) and _near(r, w, rtol)

    for results in of_target:  # one call gave every gradient
        if all(near(r, w) for r, w in zip(results, want_grads)):
            return [np.asarray(r, np.float64) for r in results]
    # A persistent tape asked once per source: each gradient from a call of the same target.
    merged = [next((results[i] for results in of_target if near(results[i], w)), None)
              for i, w in enumerate(want_grads)]
    if of_target and all(r is not None for r in merged):
        return [np.asarray(r, np.float64) for r in merged]
    return None


def _names(parts) -> str:
    return " and ".join(parts) if len(parts) < 3 else ", ".join(parts[:-1]) + " and " + parts[-1]


# ------------------------------------------------------------------ 1. the graph in NumPy

BY_HAND = ("returns the right numbers, but a tape computed them (tape.gradient or tf.gradients "
           "ran): this exercise is the backward pass written by hand")


@exercise("graph_backward_numpy", module=MODULE, cases=[{"seed": 5, "shape": [3, 4]}],
          label=_graph_label,
          idea="the backward pass of c = sum(x * y + z) derived by hand and written in NumPy, "
               "node by node (grad_x = y, grad_y = x, grad_z = ones): no tape may compute it, "
               "and the gradients are exact (finite differences only approximate them).",
          kernel_evidence="whether tape.gradient, tf.gradients or a forward accumulator ran "
                          "while graph_backward_numpy ran",
          findings={
              "count": ("{what} should return 4 values (c, grad_x, grad_y, grad_z).",
                        "return the value and the three gradients together, as one tuple in the "
                        "order the docstring gives."),
              "not_scalar": ("{what}: c should be one number, the sum over every entry of b.",
                             "sum over every entry: NumPy's sum with no axis gives one number."),
          })
def graph_backward_numpy(case, obs, ctx):
    """``obs``: ``c``, ``grad_x``, ``grad_y``, ``grad_z`` (as returned), ``autodiff_calls`` (how
    many automatic-differentiation calls ran). Reference: ``c = sum(x * y + z)``, ``(y, x, 1)``."""
    x, y, z = graph_inputs(case)
    c = _scalar(ctx, obs["c"], ", c", " (the sum over every entry)")
    ctx.close(c, np.sum(x * y + z), ", c", rtol=1e-6)
    gx, gy, gz = (_array(ctx, obs[k], f", {k}") for k in ("grad_x", "grad_y", "grad_z"))
    if _near(gx, x, 1e-6) and _near(gy, y, 1e-6) and not _near(x, y):
        ctx.fail(f"{ctx.what}: grad_x is x and grad_y is y: each input got the upstream "
                 f"gradient times its own value. The local derivative of a = x * y with "
                 f"respect to x is y, the other factor (and with respect to y it is x).",
                 mistake="M60", fix="multiply grad_a by the other factor of the product, for "
                                    "each of its two inputs.", code="swapped")
    if gz.shape != z.shape:
        shapes = f", {z.shape}, got shape {gz.shape}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: grad_z should have the shape of z{shapes}. c = sum(b) adds every "
                 f"entry of b once, so the sum sends its upstream gradient to every entry: "
                 f"grad_b, and with it grad_z, is an array shaped like b, not one number.",
                 mistake="M61", fix="a sum sends its upstream gradient to every entry of its "
                                    "input: grad_b is an array shaped like b, every entry grad_c; "
                                    "+ then passes it on unchanged.", code="grad_z_shape")
    ctx.close(gx, y, ", grad_x (dc/dx = y)", rtol=1e-6)
    ctx.close(gy, x, ", grad_y (dc/dy = x)", rtol=1e-6)
    ctx.close(gz, np.ones_like(z), ", grad_z (dc/dz = 1)", rtol=1e-6)
    inexact = [name for name, got, want in (("grad_x", gx, y), ("grad_y", gy, x),
                                            ("grad_z", gz, np.ones_like(z)))
               if not _exact(got, want)]
    if inexact:
        ctx.fail(f"{ctx.what}: {_names(inexact)} {'is' if len(inexact) == 1 else 'are'} close "
                 f"to the derivative but not exactly it. The backward pass by hand gives "
                 f"exactly y, x and ones (grad_c = 1.0 times the other factor: no rounding); "
                 f"numerical differentiation, (c(x + eps) - c(x - eps)) / (2 eps), only "
                 f"approximates them. The exercise is the chain rule, node by node.",
                 mistake="M54", fix="follow the graph backwards from the gradient of c with "
                                    "respect to itself, 1: sum copies it to every entry, + passes "
                                    "it on to both inputs, * multiplies it by the other factor.",
                 code="finite_differences")
    if obs["autodiff_calls"] != 0:
        ctx.fail(f"{ctx.what} {BY_HAND}.",
                 fix="follow the graph backwards in NumPy, from the gradient of c with respect to "
                     "itself, 1: sum copies it to every entry, + passes it on to both inputs, * "
                     "multiplies it by the other factor.", mistake="M21", code="tape_used")


def _exact(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether ``got`` is ``want`` entry for entry, in float64 or rounded once to float32 (what
    the chain rule gives for a graph of products by 1.0 and sums of one term: no rounding)."""
    return got.shape == want.shape and (np.array_equal(got, want) or np.array_equal(
        got, want.astype(np.float32).astype(np.float64)))


# --------------------------------------------------------------- 2. the same graph on a tape

@exercise("graph_backward_tape", module=MODULE, cases=[{"seed": 6, "shape": [3, 4]}],
          label=_graph_label,
          idea="find and fix the notebook's draft (exercise 1's forward pass on a tape: np.sum "
               "makes c a NumPy value the tape never recorded, M14; the constants are never "
               "watched, so every gradient is None, M01): tf.GradientTape records c = "
               "sum(x * y + z) with TensorFlow ops on watched constants and computes its "
               "gradients: grad_x, grad_y and grad_z are values that tape.gradient (or "
               "jacobian) produced, in a call whose target is c itself (a made-up target is no "
               "evidence; tf.gradients or a forward accumulator is correct, but not the tape "
               "this exercise asks for, M46).",
          kernel_evidence="which values tape.gradient produced while graph_backward_tape ran "
                          "(for a tf.function, what its graph's outputs are computed from)",
          findings={
              "count": ("{what} should return 4 values (c, grad_x, grad_y, grad_z).",
                        "return the value and the three gradients together, as one tuple in the "
                        "order the docstring gives."),
              "not_scalar": ("{what}: c should be one number, the sum over every entry of b.",
                             "sum over every entry: tf.reduce_sum with no axis gives one number."),
          })
def graph_backward_tape(case, obs, ctx):
    """``obs``: ``c``, ``grad_x``, ``grad_y``, ``grad_z``, ``from_tape`` (three bools: whether
    tape.gradient produced each gradient), ``other_spellings`` (calls of tf.gradients or
    ForwardAccumulator.jvp: right gradients from them are M46). Reference: as
    graph_backward_numpy, in float32."""
    x, y, z = graph_inputs(case, np.float32)
    c = _scalar(ctx, obs["c"], ", c", " (the sum over every entry)")
    ctx.close(c, np.sum(x.astype(np.float64) * y + z), ", c", rtol=1e-5, atol=1e-5)
    ctx.close(obs["grad_x"], y, ", grad_x (dc/dx = y)")
    ctx.close(obs["grad_y"], x, ", grad_y (dc/dy = x)")
    ctx.close(obs["grad_z"], np.ones_like(z), ", grad_z (dc/dz = 1)")
    from_tape = obs["from_tape"]
    by_formula = [name for i, name in enumerate(("grad_x", "grad_y", "grad_z"))
                  if from_tape[i] is not True]
    if by_formula and obs.get("other_spellings"):
        ctx.fail(f"{ctx.what} returns the right gradients, computed by another spelling of "
                 f"automatic differentiation (tf.gradients or a forward accumulator): correct, "
                 f"but this exercise asks for the tape, because what it teaches is what a "
                 f"GradientTape records (watched sources, TensorFlow operations up to c).",
                 fix="compute c inside the tape's block, with x, y and z watched, and return the "
                     "gradients the tape gives of c with respect to all three sources.",
                 mistake="M46", code="other_spelling")
    if by_formula:
        ctx.fail(f"{ctx.what} returns the right numbers, but no tape computed "
                 f"{_names(by_formula)}: the exercise is the tape, not the formulas (y, x, "
                 f"ones) of exercise 1.",
                 fix="watch x, y and z, compute c inside the tape's block, and return the "
                     "gradients the tape gives of c with respect to all three sources.",
                 mistake="M21", code="no_tape")
    c_want = float(np.sum(x.astype(np.float64) * y + z))
    of_c = [found["results"] for found in obs["tape_calls"][:16]
            if _loss_call([found], c_want, [], 1e-5, any_results=True) is not None]
    returned = [_array(ctx, obs[k], f", {k}") for k in ("grad_x", "grad_y", "grad_z")]
    if not all(any(isinstance(r, np.ndarray) and np.issubdtype(r.dtype, np.number)
                   and _near(r, g, 1e-5) for results in of_c for r in results[:16])
               for g in returned):
        ctx.fail(f"{ctx.what} returns gradients a tape produced, but not of c: no "
                 f"tape.gradient call differentiated c = sum(x * y + z) itself (the target "
                 f"handed to the tape is another expression, whose gradients are the formulas).",
                 fix="compute c inside the tape's block and return the gradients the tape gives "
                     "of c with respect to all three sources.",
                 mistake="M21", code="tape_target")
    if count(obs, "stop_gradient_calls") > 0:
        ctx.fail(f"{ctx.what} returns gradients a tape produced, but of a target built with "
                 f"tf.stop_gradient: its value can be c's while its gradient is whatever "
                 f"formula the unstopped part carries. Nothing in c = sum(x * y + z) needs a "
                 f"stop_gradient.",
                 fix="compute c inside the tape's block and return the gradients the tape gives "
                     "of c itself with respect to all three sources.",
                 mistake="M21", code="stop_gradient_target")


# ------------------------------------------------------------- 3. two-layer network by hand

def _two_layer_label(case) -> str:
    if isinstance(case, dict):
        kink = ", half the units at the ReLU's kink" if "kink" in case else ""
        return f"N, D, H = {case['n']}, {case['d']}, {case['h']}{kink}"
    n, d = np.shape(case[0])
    return f"N, D, H = {n}, {d}, {np.shape(case[2])[1]}"


@exercise("two_layer_numpy", module=MODULE,
          cases=[{"seed": 1, "n": 8, "d": 6, "h": 5},
                 {"seed": 2, "n": 8, "d": 6, "h": 6, "kink": KINK_SCALE}],
          label=_two_layer_label,
          idea="backpropagation through the two-layer ReLU network by hand in NumPy, found "
               "and fixed in a buggy backward pass (the chain rule, one line per node: the "
               "mean's 1/N, h (after the ReLU) for grad_w2, the ReLU's mask for grad_w1): no "
               "tape may compute the gradients, and no finite differences (a case puts half "
               "the hidden units at the ReLU's kink, where only the chain rule is exact).",
          kernel_evidence="whether tape.gradient, tf.gradients or a forward accumulator ran "
                          "while two_layer_numpy ran",
          findings={
              "count": ("{what} should return 3 values (loss, grad_w1, grad_w2).",
                        "return the loss and the two gradients together, as one tuple in the "
                        "order the docstring gives."),
              "not_scalar": ("{what}: the loss should be one number.",
                             "sum the squares over axis=1, then take the mean over the N "
                             "examples."),
          })
def two_layer_numpy(case, obs, ctx):
    """``obs``: ``loss``, ``grad_w1``, ``grad_w2``, ``autodiff_calls``. Reference: the loss and
    its gradients in float64 (:func:`two_layer_reference`); messages name the usual slips (the
    mean's 1/N or the square's 2 forgotten, the ReLU's mask missing, grad_w2 taken before the
    ReLU, a transpose), several at once when a gradient has more than one (the notebook's
    two_layer_numpy_buggy has three: the exercise is to find and fix them)."""
    x, y, w1, w2 = two_layer_inputs(case)
    n, d = x.shape
    shown_n, shown_d = (f" = {n}", f" = {d}") if ctx.reveal else ("", "")
    want_loss, want_g1, want_g2 = two_layer_reference(x, y, w1, w2)
    loss = _scalar(ctx, obs["loss"], ", the loss",
                   ": sum the squares over axis=1, then take the mean over the N examples")
    if not np.isclose(loss, want_loss, rtol=1e-6):
        if np.isclose(loss, want_loss * n, rtol=1e-6):
            ctx.fail(f"{ctx.what}: the loss is N{shown_n} times too large: take the mean over "
                     f"the examples (np.mean of the per-example sums), not the total sum.",
                     code="loss_sum")
        if np.isclose(loss, want_loss / d, rtol=1e-6):
            ctx.fail(f"{ctx.what}: the loss is D{shown_d} times too small: sum the squared "
                     f"errors over axis=1 first, then average over the examples.",
                     code="loss_mean_all")
        ctx.close(loss, want_loss, ", the loss", rtol=1e-6)
    variants = _two_layer_variants(x, y, w1, w2)
    for name, want, hint in (("grad_w1", want_g1, "x.T @ grad_h"),
                             ("grad_w2", want_g2, "h.T @ grad_y_pred")):
        got = _array(ctx, obs[name], f", {name}")
        if got.shape != want.shape:
            shapes = f", {want.shape}, got {got.shape}" if ctx.reveal else ""
            ctx.fail(f"{ctx.what}: {name} should have the shape of the weight{shapes}. Check the "
                     f"transposes: {name} = {hint}.", code="shape")
        if _near(got, want, 1e-6):
            continue
        slips = _two_layer_slips(name, got, variants[name], n, shown_n)
        if len(slips) == 1:
            ctx.fail(f"{ctx.what}: {slips[0][1]}.", code=slips[0][0])
        if slips:
            ctx.fail(f"{ctx.what}: {name} has {len(slips)} slips at once: "
                     + " ".join(f"({i}) {words}." for i, (_, words) in enumerate(slips, 1)),
                     code=slips[0][0])
        _numerical(ctx, case, name, got, want, x @ w1)
        ctx.close(got, want, f", {name}", rtol=1e-6, atol=1e-8)
    if obs["autodiff_calls"] != 0:
        ctx.fail(f"{ctx.what} {BY_HAND}.",
                 fix="write the backward pass in NumPy, one line per step, as the notebook "
                     "shows: grad_y_pred, grad_w2, grad_h, the ReLU's mask, grad_w1.",
                 mistake="M21", code="tape_used")


def _numerical(ctx, case, name, got, want, active) -> None:
    """M54 for a gradient that numerical differentiation made: wrong only in the columns of
    grad_w1 whose pre-activations ``active`` sit at the ReLU's kink (a case with ``"kink"``), or
    within 1% of the derivative everywhere but not to the 1e-6 the chain rule reaches."""
    __tracebackhide__ = True
    at_kink = np.abs(active).max(axis=0) < 1e3 * KINK_SCALE
    kink_only = (name == "grad_w1" and at_kink.any() and not at_kink.all()
                 and _near(got[:, ~at_kink], want[:, ~at_kink], 1e-6))
    if kink_only or _near(got, want, 1e-2):
        where = (" It is wrong only for the hidden units whose pre-activation x @ w1 is almost "
                 "0, at the ReLU's kink: a step eps in w1 crosses the kink, so (f(w + eps) - "
                 "f(w - eps)) / (2 eps) mixes the two slopes, and a smaller eps drowns in "
                 "rounding; the chain rule uses the mask (x @ w1 > 0) and is exact there."
                 if kink_only else
                 " It is as close as numerical differentiation gets, (f(w + eps) - f(w - eps)) "
                 "/ (2 eps), not as close as the chain rule in float64.")
        ctx.fail(f"{ctx.what}: {name} is near the derivative but not it.{where} The exercise "
                 f"is backpropagation by hand.", mistake="M54",
                 fix="write the backward pass in NumPy, one step per node of the forward pass, "
                     "from the loss back: the gradient of the prediction, then of w2 (from h), of "
                     "h, through the ReLU's mask, and of w1 (from x).",
                 code="finite_differences")


def _two_layer_variants(x, y, w1, w2) -> dict:
    """The known slips of two_layer_numpy's backward pass that change a gradient's structure, not
    only its scale: for each gradient, ``[(code, words, array)]``, the right one first (code
    None). ``grad_w1`` without the ReLU's mask; ``grad_w2`` from ``x @ w1`` (before the ReLU)
    instead of ``h``. A variant equal to the right gradient (no negative activation) is left
    out."""
    x, y, w1, w2 = (np.asarray(a, dtype=np.float64) for a in (x, y, w1, w2))
    _, g1, g2 = two_layer_reference(x, y, w1, w2)
    active = x @ w1
    d_out = (np.where(active > 0, active, 0.0) @ w2 - y) * (2.0 / len(x))
    found = {"grad_w1": [(None, None, g1)], "grad_w2": [(None, None, g2)]}
    unmasked = two_layer_reference(x, y, w1, w2, relu_mask=False)[1]
    if not _near(unmasked, g1, 1e-6):
        found["grad_w1"].append((
            "no_mask", "grad_w1 ignores the ReLU: its gradient is 0 where x @ w1 < 0. Set "
            "grad_h[x @ w1 < 0] = 0 (or multiply by the mask) before grad_w1 = x.T @ grad_h",
            unmasked))
    before_relu = active.T @ d_out
    if not _near(before_relu, g2, 1e-6):
        found["grad_w2"].append((
            "grad_w2_pre_relu", "grad_w2 is computed from x @ w1, the values before the ReLU: "
            "w2 multiplies h = relu(x @ w1), so grad_w2 = h.T @ grad_y_pred", before_relu))
    return found


def _two_layer_slips(name, got, variants, n, shown_n) -> list:
    """The slips ``[(code, words)]`` that explain ``got`` (the student's ``name``): a variant of
    :func:`_two_layer_variants` times a known wrong factor of grad_y_pred (the mean's 1/N or the
    square's 2 forgotten, a sign), fewest slips first; ``[]`` when none does."""
    factors = [(1.0, None, None),
               (float(n), "grad_no_mean", f"{name} is N{shown_n} times too large: the loss is a "
                f"mean, so grad_y_pred = 2 * (y_pred - y) / N"),
               (0.5, "grad_half", f"{name} is half the right value: d(e^2)/de = 2e, so "
                "grad_y_pred = 2 * (y_pred - y) / N"),
               (0.5 * n, "grad_no_two_mean", f"{name} is N/2 times too large: grad_y_pred = "
                "2 * (y_pred - y) / N (the factor 2 of the square and the 1/N of the mean)"),
               (-1.0, "grad_sign", f"{name} has the wrong sign: grad_y_pred = "
                "2 * (y_pred - y) / N")]
    candidates = []
    for code, words, base in variants:
        for factor, factor_code, factor_words in factors:
            if factor_code is not None and np.isclose(factor, 1.0):
                continue  # N = 1 or N = 2: that factor changes nothing
            slips = [(c, w) for c, w in ((factor_code, factor_words), (code, words)) if c]
            if slips:
                candidates.append((len(slips), slips, factor * base))
    for _, slips, array in sorted(candidates, key=lambda c: c[0]):
        if _near(got, array, 1e-6):
            return slips
    return []


# ------------------------------------------- 4a. predict, then measure: what a step does

#: The steps check_step_report hands a student's step_report (the kernel half builds each as a
#: tf.function of the same name): ``kind -> (what it does, whether it changes the weights)``.
STEP_KINDS = {
    "rebinding": ("broken_sgd_step of the notebook: w1 = w1 - lr * grad_w1 rebinds the local "
                  "names, the variables stay as they were", False),
    "sgd": ("a working step: assign_sub on both weights, returns the loss before the update",
            True),
    "w2_only": ("updates w2 in place but rebinds w1", True),
    "late_loss": ("a working step that returns the loss after its update", True),
}

#: What five calls of broken_sgd_step do on the notebook's lecture problem (the predictions are
#: about this): the loss drop from the first to the fifth call, and whether the weights change.
BROKEN_STEP_TRUTH = {"predicted_loss_drop": 0.0, "predicted_weights_change": False}

#: How far a predicted drop may be from 0: float32 values near the notebook's loss (5.1e7) are
#: 4 apart, so a drop under 64 is no drop (a student who writes what the report printed).
PREDICTION_ATOL = 64.0


def step_trajectory(kind, x, y, w1, w2, lr, calls):
    """What ``calls`` calls of the step ``kind`` (:data:`STEP_KINDS`) return, from w1, w2: the
    list of losses (float64), and whether the weights change."""
    weights = [np.asarray(w1, np.float64), np.asarray(w2, np.float64)]
    losses = []
    for _ in range(int(calls)):
        value, g1, g2 = two_layer_reference(x, y, *weights)
        if kind in ("sgd", "late_loss"):
            weights = [weights[0] - lr * g1, weights[1] - lr * g2]
        elif kind == "w2_only":
            weights = [weights[0], weights[1] - lr * g2]
        losses.append(two_layer_reference(x, y, *weights)[0] if kind == "late_loss" else value)
    return losses, STEP_KINDS[kind][1]


def step_case(case):
    """``(kind, x, y, w1, w2, lr, calls)`` of a step_report case ``{"step", "seed", "n", "d",
    "h", "lr", "calls"}``: the problem of :func:`scaled_problem`, float32."""
    kind = str(case["step"])
    if kind not in STEP_KINDS:
        raise ValueError(f"unknown step kind {kind!r}")
    x, y, w1, w2 = scaled_problem(case["seed"], case["n"], case["d"], case["h"])
    return kind, x, y, w1, w2, float(case["lr"]), int(case["calls"])


_STEP_NAMES = {"rebinding": "broken_sgd_step", "sgd": "a working SGD step",
               "w2_only": "a step that updates only w2",
               "late_loss": "a step that returns the loss after its update"}


def _step_label(case) -> str:
    return f"{_STEP_NAMES.get(case['step'], case['step'])}, {case['calls']} calls"


def _prediction(value):
    """A prediction as observed (a number, a bool, a 0-d array) as a Python value, or None."""
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "biuf":
        value = value.item()
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return value
    return None


@exercise("step_report", module=MODULE,
          cases=[{"step": "rebinding", "seed": 2, "n": 16, "d": 20, "h": 8, "lr": 0.01,
                  "calls": 5},
                 {"step": "sgd", "seed": 2, "n": 16, "d": 20, "h": 8, "lr": 0.01, "calls": 3}],
          label=_step_label,
          idea="predict what a training step does, then measure it: step_report calls the step "
               "it is given and reports the losses it returned and whether the variables' values "
               "changed (copies taken before the calls, compared after), and the predictions "
               "about broken_sgd_step (no loss drop, no change) agree with what it measures.",
          kernel_evidence="how many times step_report called the step it was given",
          findings={
              "count": ("{what} should return 2 values (losses, changed).",
                        "return the losses and the flag together, as one tuple in the order the "
                        "docstring gives."),
              "type": ("{what} should return a list of losses and a bool.",
                       "return a list of Python floats, one loss per call, and the flag as a "
                       "Python bool."),
          })
def step_report(case, obs, ctx):
    """``obs``: ``n_losses``, ``losses`` (the first ``calls + 1`` returned), ``changed`` (as
    returned), ``step_calls`` (how many times the step given to step_report ran), and the two
    predictions, ``predicted_loss_drop`` and ``predicted_weights_change``. Reference: the step's
    losses and whether it changes the weights, from the case's kind (:func:`step_trajectory`);
    the predictions are about broken_sgd_step (:data:`BROKEN_STEP_TRUTH`)."""
    kind, x, y, w1, w2, lr, calls = step_case(case)
    want_losses, want_changed = step_trajectory(kind, x, y, w1, w2, lr, calls)
    if obs["step_calls"] == 0:
        ctx.fail(f"{ctx.what} never called the step it was given: a report must measure what "
                 f"the step does, not say what it should do.",
                 fix="call step as many times as `calls` "
                     "says and keep what each call "
                     "returns.", mistake="M21", code="step_not_called")
    if obs["step_calls"] != calls:
        counts = f" ({obs['step_calls']} for {calls})" if ctx.reveal else ""
        ctx.fail(f"{ctx.what} should call the step exactly `calls` times{counts}.",
                 fix="one call of step per loop iteration, as many iterations as `calls` says.",
                 code="call_count")
    if obs["n_losses"] != calls:
        counts = f" ({calls}), got {obs['n_losses']}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: expected one loss per call{counts}.",
                 fix="keep one Python float per call of step (a tensor converts with float).", code="loss_count")
    got = [_scalar(ctx, v, ", a loss") for v in obs["losses"][:calls]]
    # float32 through matmuls: TF32_RTOL (TensorFloat-32 on GPUs).
    if not np.allclose(got, want_losses, rtol=TF32_RTOL, atol=1e-6):
        if kind == "late_loss":
            before, _ = step_trajectory("sgd", x, y, w1, w2, lr, calls)
            if np.allclose(got, before, rtol=TF32_RTOL, atol=1e-6):
                ctx.fail(f"{ctx.what} reports the loss before each update, but this step "
                         f"returns the loss after it: step_report computed the losses itself "
                         f"instead of recording what the step returned.",
                         fix="keep what each call of step returns, as a Python float.",
                         mistake="M21", code="losses_not_observed")
        ctx.close(got, want_losses, ", the losses (what each call of the step returned)",
                  rtol=TF32_RTOL, atol=1e-6)
    changed = _prediction(obs["changed"])
    if not isinstance(changed, bool):
        ctx.fail(f"{ctx.what}: changed should be a Python bool (True or False).",
                 fix="compare the copies with the values after the calls and return a Python "
                     "bool: whether any entry of any weight changed.", code="changed_type")
    if changed != want_changed:
        inferred = len(set(got)) > 1
        if changed == inferred:
            ctx.fail(f"{ctx.what} reports the losses right but infers from them whether the "
                     f"weights changed; the losses do not say it (one call, or a step whose "
                     f"loss does not move): look at the weights themselves.",
                     fix="a tf.Variable changes in place: copy its value (a NumPy array) before "
                         "the first call, for both weights, and compare those copies with the "
                         "values after the last.", mistake="M21", code="changed_from_losses")
        if want_changed:
            ctx.fail(f"{ctx.what} says the weights did not change, but this step changes "
                     f"them: did you keep the variables themselves (`before = w1`)? A "
                     f"variable changes in place, so it always equals itself.",
                     fix="a tf.Variable changes in place: keep copies of both weights' values "
                         "(NumPy arrays) from before the first call.",
                     code="changed_missed")
        ctx.fail(f"{ctx.what} says the weights changed, but this step leaves them as they were "
                 f"(compare the values, not the objects: a new tensor is never the variable).",
                 fix="compare copies of the values (NumPy arrays taken before and after), not the "
                     "variables themselves, which change in place.",
                 code="changed_wrong")
    for name, truth in BROKEN_STEP_TRUTH.items():
        guess = _prediction(obs[name])
        if name == "predicted_weights_change":
            ok = isinstance(guess, bool) and guess == truth
            kind_words = "True or False"
        else:
            ok = (guess is not None and not isinstance(guess, bool)
                  and abs(guess - truth) <= PREDICTION_ATOL)
            kind_words = "a number"
        if not ok:
            wrote = "something that is neither" if guess is None else repr(guess)
            shown = f" (you predicted {wrote})" if ctx.reveal else ""
            ctx.fail(f"{ctx.what}: your step_report works, but the prediction {name}{shown} is "
                     f"not what broken_sgd_step does. Read its two update lines again: after "
                     f"`w1 = w1 - lr * grad_w1`, what does the name w1 refer to, and what does "
                     f"the variable the caller passed in hold? What does the next call then "
                     f"start from?",
                     fix=f"rethink {name} ({kind_words}) from the code, not from a run: the "
                         f"cell after the check shows your prediction beside what your report "
                         f"measures, and the text under it says why.",
                     code="prediction")


# ------------------------------------------------------ 4. one SGD step with assign_sub

def _sgd_label(case) -> str:
    seed, n, d, h, lr, steps = case
    return f"N, D, H = {n}, {d}, {h}, lr = {lr}"


NOT_TF_FUNCTION = ("{what}: sgd_step is not a tf.function, so the whole step (forward, backward "
                   "and the in-place updates) would not run as one graph.",
                   "make sgd_step a tf.function (read tf.function as a decorator).")


@exercise("sgd_step", module=MODULE, cases=[(2, 16, 20, 8, 0.01, 3)], label=_sgd_label,
          idea="one training step as a tf.function: tape.gradient computes the gradients of the "
               "loss with respect to the tf.Variable weights, which are updated in place "
               "(assign_sub) by -lr * gradient: run eagerly, a tape.gradient call of the loss "
               "returns the gradients and each weight moves by -lr times them.",
          kernel_evidence="the gradient calls a fresh trace of sgd_step's code made, and whether "
                          "the variable updates in its graph are computed from their results",
          findings={"not_tf_function": NOT_TF_FUNCTION,
                    "not_scalar": ("{what}: sgd_step should return the loss, one number.",
                                   "return the loss of the forward pass.")})
def sgd_step(case, obs, ctx):
    """``obs``: ``losses`` (returned by each call), ``w1``, ``w2`` (the weights after each call),
    ``tape_gradients`` (a traced tape.gradient call gave gradients for w1 and w2),
    ``updates_from_gradients`` (True, False or None: whether the graph's updates of w1 and w2
    are computed from those gradients; None when the graph does not show it). Reference: the
    loss and the step ``-lr * gradient`` at the weights before each call, in float64."""
    seed, n, d, h, lr, steps = case
    x, y, w1, w2 = scaled_problem(seed, n, d, h)
    before = (w1.astype(np.float64), w2.astype(np.float64))
    losses = []
    for step in range(int(steps)):
        call = f" call {step + 1} of" if ctx.reveal else ""
        after = tuple(_array(ctx, obs[name][step], f", {name} after{call} the step")
                      for name in ("w1", "w2"))
        unchanged = [name for name, a, b in zip(("w1", "w2"), after, before)
                     if np.array_equal(a, b)]
        if unchanged:
            ctx.fail(f"{ctx.what}: after{call} sgd_step, {' and '.join(unchanged)} did not "
                     f"change: the parameters never update. Inside a function, "
                     f"`w1 = w1 - lr * g` only rebinds the local name to a new tensor; the "
                     f"variable itself is untouched.", mistake="M03",
                     fix="update the variables in place (read tf.Variable's assign_sub): a new "
                         "tensor bound to the name is no longer the variable.", code="unchanged")
        loss = _scalar(ctx, obs["losses"][step], f", the loss returned by{call} the step")
        want_loss, g1, g2 = two_layer_reference(x, y, *before)
        # float32 through matmuls: TF32_RTOL (TensorFloat-32 on GPUs).
        if not np.isclose(loss, want_loss, rtol=TF32_RTOL):
            if np.isclose(loss, two_layer_reference(x, y, *after)[0], rtol=TF32_RTOL):
                ctx.fail(f"{ctx.what} returned the loss after the update; return the loss "
                         f"computed in the forward pass, before the weights change.",
                         code="late_loss")
            ctx.close(loss, want_loss, f", the loss returned by{call} the step", rtol=TF32_RTOL)
        for name, a, b, g in (("w1", after[0], before[0], g1), ("w2", after[1], before[1], g2)):
            moved, want = a - b, -float(lr) * g
            if _near(moved, -want, 1e-3):
                ctx.fail(f"{ctx.what}: {name} moved uphill: subtract the gradient "
                         f"({name}.assign_sub(lr * grad)), do not add it.", code="uphill")
            ctx.close(moved, want, f", the change of {name} in{call} the step (expected "
                      f"-lr * gradient)", rtol=TF32_RTOL,
                      atol=TF32_RTOL * float(np.abs(want).max()) + 1e-7)
        losses.append(loss)
        before = after
    if steps > 1 and not losses[-1] < losses[0]:
        shown = f": {losses}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: the loss did not fall over the steps{shown}.", code="no_progress")
    if obs["tape_gradients"] is not True:
        ctx.fail(f"{ctx.what} updates the weights by the right amounts, but no tape computed "
                 f"the gradients (tape.gradient gave none for w1 and w2): the exercise is the "
                 f"gradients from a tape, not derived by hand.",
                 fix="record the forward pass on a GradientTape and take the gradients of the "
                     "loss with respect to both weights from it.",
                 mistake="M21", code="no_tape")
    w1_0, w2_0 = (np.asarray(a, np.float64) for a in scaled_problem(seed, n, d, h)[2:])
    loss_0, g1_0, g2_0 = two_layer_reference(x, y, w1_0, w2_0)
    # The kernel's eager step had every tape result shifted by TAPE_SHIFT.
    produced = _loss_call(obs["eager_calls"], loss_0, [g1_0 + TAPE_SHIFT, g2_0 + TAPE_SHIFT],
                          TF32_RTOL)
    if produced is None:
        ctx.fail(f"{ctx.what} updates the weights by the right amounts, but no tape.gradient "
                 f"call differentiated the loss with respect to w1 and w2 (the tape's target is "
                 f"another expression): the exercise is the gradients of the loss from a tape.",
                 fix="compute the loss inside the tape's block and take the gradients of the loss "
                     "with respect to both weights from it.",
                 mistake="M21", code="tape_target")
    for name, start, result in (("w1", w1_0, produced[0]), ("w2", w2_0, produced[1])):
        moved = _array(ctx, obs[f"eager_{name}"], f", {name} after the step") - start
        if not _near(moved, -float(lr) * result, 1e-3):
            ctx.fail(f"{ctx.what}: a tape computed the gradients of the loss, but the change "
                     f"of {name} is not -lr times the gradient the tape returned: when the "
                     f"check shifted what the tape returned by a constant, the update did not "
                     f"move with it, so it is computed another way (beside the tape).",
                     fix="update each variable in place with its own gradient from the tape, "
                         "scaled by the learning rate (read tf.Variable's assign_sub).",
                     mistake="M21", code="updates_not_from_tape")
    if obs["updates_from_gradients"] is False:
        ctx.fail(f"{ctx.what} updates the weights by the right amounts, but not with the "
                 f"gradients tape.gradient returned: the updates are computed another way.",
                 fix="update each variable in place with its own gradient from the tape, scaled "
                     "by the learning rate (read tf.Variable's assign_sub).",
                 mistake="M21", code="updates_not_from_tape")


# -------------------------------------------------- 5. training with a Keras optimizer

def _optimizer_label(case) -> str:
    name, kwargs, seed, n, d, h, steps = case
    return f"{name}({kwargs}), N, D, H = {n}, {d}, {h}"


@exercise("train_with_optimizer", module=MODULE,
          cases=[("SGD", {"learning_rate": 0.01}, 3, 16, 20, 8, 5),
                 ("Adam", {"learning_rate": 0.01}, 3, 16, 20, 8, 5)],
          label=_optimizer_label,
          idea="a training loop in which the given Keras optimizer makes every update "
               "(apply_gradients once per step) from gradients that tape.gradient computed: "
               "what apply_gradients is given is what a tape.gradient call of the loss "
               "returned.",
          kernel_evidence="optimizer.iterations after the call, and whether the gradients passed "
                          "to the optimizer are values tape.gradient produced",
          findings={
              "type": ("{what} should return the list of losses, one per step.",
                       "return a list of Python floats, one loss per step (a tensor converts with "
                       "float)."),
              "not_scalar": ("{what}: each loss should be one number.",
                             "keep one Python float per step (a tensor converts with float)."),
          })
def train_with_optimizer(case, obs, ctx):
    """``obs``: ``n_losses``, ``losses`` (the first ``steps`` values returned), ``w1``, ``w2``
    (the weights after the call), ``iterations`` (the optimizer's), ``grads_from_tape`` (whether
    every gradient the optimizer was given came from tape.gradient; None when it was given none).
    Reference: for SGD and Adam, the losses of the update rule in NumPy; for every optimizer,
    the initial loss and a loss that falls."""
    name, kwargs, seed, n, d, h, steps = case
    x, y, w1, w2 = scaled_problem(seed, n, d, h)
    if obs["n_losses"] != steps:
        counts = f" ({steps}), got {obs['n_losses']}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: expected one loss per step{counts}.", code="loss_count")
    values = [_scalar(ctx, v, ", a loss") for v in obs["losses"][:steps]]
    got1, got2 = _array(ctx, obs["w1"], ", w1"), _array(ctx, obs["w2"], ", w2")
    if np.array_equal(got1, w1) and np.array_equal(got2, w2):
        ctx.fail(f"{ctx.what}: w1 and w2 did not change: the parameters never update. Call "
                 f"optimizer.apply_gradients(zip(grads, [w1, w2])) in every step.",
                 code="unchanged")
    initial = two_layer_reference(x, y, w1, w2)[0]
    # float32 through matmuls: TF32_RTOL (TensorFloat-32 on GPUs).
    if not np.isclose(values[0], initial, rtol=TF32_RTOL):
        shown = f", {initial:.6g}, got {values[0]:.6g}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: the first loss should be the loss at the initial weights{shown}: "
                 f"record the loss before applying the update.", code="late_loss")
    if steps > 1 and not values[-1] < values[0]:
        shown = f": {np.round(values, 4).tolist()}" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: the loss did not fall{shown}.", code="no_progress")
    reference = optimizer_trajectory(name, kwargs, x, y, w1, w2, steps)
    if reference is not None:
        ctx.close(values, reference, ", the losses", rtol=TF32_RTOL, atol=1e-6)
    iterations = obs["iterations"]
    if iterations == 0:
        ctx.fail(f"{ctx.what} returns losses that fall, but the optimizer it was given never "
                 f"made an update (its iterations are 0): the updates were written by hand, and "
                 f"the exercise is the optimizer's update rule.",
                 fix="let the optimizer update the weights, once per step: it takes pairs of a "
                     "gradient and its variable (read the optimizer's apply_gradients).",
                 mistake="M21", code="optimizer_unused")
    if iterations != steps:
        counts = f" ({iterations} for {steps} steps)" if ctx.reveal else ""
        ctx.fail(f"{ctx.what}: the optimizer should make one update per step, but its "
                 f"iteration count differs{counts}.",
                 fix="call optimizer.apply_gradients exactly once in each step.",
                 code="iterations")
    if obs["grads_from_tape"] is not True:
        # None: apply_gradients never ran, though the iteration count moved (set by hand).
        given = ("the optimizer was never given a gradient (its iteration count moved without "
                 "apply_gradients)" if obs["grads_from_tape"] is None else
                 "the gradients the optimizer was given did not come from tape.gradient")
        ctx.fail(f"{ctx.what}: {given}: the exercise is gradients from a tape, applied by the "
                 f"optimizer.",
                 fix="compute the loss inside the tape's block, take its gradients with respect "
                     "to both weights, and let the optimizer apply them (read the optimizer's "
                     "apply_gradients).",
                 mistake="M21", code="no_tape")
    loss_0, g1_0, g2_0 = two_layer_reference(x, y, w1, w2)
    # The kernel's eager step had every tape result shifted by TAPE_SHIFT.
    produced = _loss_call(obs["eager_calls"], loss_0, [g1_0 + TAPE_SHIFT, g2_0 + TAPE_SHIFT],
                          TF32_RTOL)
    applied = obs["eager_applied"]
    first = applied[0] if isinstance(applied, list) and applied else None
    if produced is None or not isinstance(first, list) or len(first) != 2 or not all(
            isinstance(g, np.ndarray) and _near(g, r, 1e-5) for g, r in zip(first, produced)):
        ctx.fail(f"{ctx.what}: what apply_gradients was given is not what a tape.gradient "
                 f"call of the loss returned (the tape's target is another expression, or other "
                 f"gradients were applied).",
                 fix="compute the loss inside the tape's block, take its gradients with respect "
                     "to both weights, and let the optimizer apply them (read the optimizer's "
                     "apply_gradients).",
                 mistake="M21", code="tape_target")


# ------------------------------------------- 6. numerics: a loss that goes NaN, found and fixed

def _cross_entropy_label(case) -> str:
    logits, labels = cross_entropy_inputs(case)
    if logits.size <= 8:
        return f"logits {np.round(logits, 3).tolist()}, labels {labels.tolist()}"
    return f"{logits.shape[0]} rows of {logits.shape[1]} logits up to {np.abs(logits).max():.0f}"


FROM_LOGITS = ("compute the loss from the logits, never from probabilities: log-sum-exp of the "
               "row minus the true class's logit (tf.reduce_logsumexp, tf.nn.log_softmax, or "
               "tf.nn.sparse_softmax_cross_entropy_with_logits)")


@exercise("cross_entropy", module=MODULE,
          cases=[([[2.0, 1.0, 0.1], [0.5, 2.5, -1.0]], [0, 2]),
                 ([[1000.0, 0.0], [0.0, 0.0]], [1, 0])],
          label=_cross_entropy_label,
          idea="a cross-entropy that stays finite and exact for any float32 logits because it "
               "never forms probabilities: log-sum-exp minus the true logit (the draft's "
               "-log(softmax) underflows to -log(0) = inf and its gradient to NaN); value and "
               "gradient are both checked where the logits are in the hundreds.",
          kernel_evidence="none: the value and the gradient tape.gradient returned for the logits "
                          "decide",
          findings={"no_gradient": ("{what}: the tape gives no gradient for the logits.",
                                    "compute the loss with TensorFlow ops on the logits "
                                    "(no NumPy, no .numpy()).")})
def cross_entropy(case, obs, ctx):
    """``obs``: ``runs``, three pairs ``[loss, gradient with respect to the logits]`` (eagerly, in
    a tf.function, its second call). Reference: :func:`cross_entropy_reference`. Messages name
    the draft's failure (an infinite value: probabilities formed, M50), the tempting fix's (a
    finite value with a NaN gradient: tf.where over -log(p), M51) and a finite value that is not
    the loss (probabilities clipped, or -log(0) replaced by a constant, M50)."""
    logits, labels = cross_entropy_inputs(case)
    want, want_grad = cross_entropy_reference(logits, labels)
    for mode, (value, grad) in zip(RUN_MODES, obs["runs"]):
        got = _scalar(ctx, value, f", the loss {mode}")
        if not np.isfinite(got):
            ctx.fail(f"{ctx.what}: the loss {mode} is inf or NaN. Where one logit is hundreds "
                     f"above another, softmax rounds the smaller probability to exactly 0 in "
                     f"float32 (e^-104 is below the smallest float32), and -log(0) = inf.",
                     mistake="M50", fix=FROM_LOGITS + ".", code="inf_value")
        g = _array(ctx, grad, f", the gradient {mode}")
        if g.shape != want_grad.shape:
            ctx.fail(f"{ctx.what}: the gradient with respect to the logits should have their "
                     f"shape.", code="grad_shape")
        if not np.all(np.isfinite(g)):
            ctx.fail(f"{ctx.what}: the loss {mode} is finite but its gradient is NaN. "
                     f"tf.where picks the finite branch for the value, but the gradient still "
                     f"flows through both branches: the unpicked -log(p) at p = 0 has gradient "
                     f"-1/0 = -inf, times the 0 that tf.where gives it is NaN. The double-where "
                     f"fix (feed the unsafe op a safe input) keeps the gradient finite, but here "
                     f"the loss itself must not go through p.",
                     mistake="M51", fix=FROM_LOGITS + ".", code="nan_gradient")
        if not np.isclose(got, want, rtol=1e-5, atol=1e-5):
            if want > 15.0:
                ctx.fail(f"{ctx.what}: the loss {mode} is finite but not the cross-entropy "
                         f"where it matters most, for a true class whose probability is tiny: "
                         f"clipping the probability (or replacing -log(0) by a constant) caps "
                         f"the loss and its gradient, so the worst examples teach the least.",
                         mistake="M50", fix=FROM_LOGITS + ".", code="capped_value")
            ctx.close(got, want, f", the loss {mode}", rtol=1e-5, atol=1e-5)
        ctx.close(g, want_grad, f", the gradient {mode} (expected (softmax - onehot) / N)",
                  rtol=1e-4, atol=1e-6)


# ------------------------------------ 7. a custom gradient that computes its own formula

def _log1pexp_label(case) -> str:
    x = log1pexp_inputs(case)[0]
    if x.size <= 8:
        return f"x = {np.round(x, 3).tolist()}"
    return f"{x.size} values of x up to {np.abs(x).max():.0f}"


@exercise("log1pexp", module=MODULE,
          cases=[([-100.0, -5.0, 0.0, 5.0, 50.0, 100.0], [1.0, 2.0, 0.5, 1.0, 3.0, 1.0])],
          label=_log1pexp_label,
          idea="log(1 + e^x) with @tf.custom_gradient whose backward computes its own formula "
               "for the derivative, written so that it cannot overflow (e^x / (1 + e^x) is "
               "inf / inf = NaN for x > 88.7 in float32): no tape, tf.gradients or built-in "
               "gradient op may compute the backward.",
          kernel_evidence="whether log1pexp's traced graph holds the IdentityN op of "
                          "tf.custom_gradient; how many automatic differentiations ran while its "
                          "backward ran (beyond the check's own, measured on a custom gradient of "
                          "the check's); whether the traced gradient holds a SoftplusGrad op")
def log1pexp(case, obs, ctx):
    """``obs``: ``runs``, three pairs ``[out, grad]`` (``grad`` is d sum(out * upstream)/dx),
    ``custom_gradient`` (bool), ``backward_autodiff`` (automatic differentiations the backward
    ran), ``builtin_gradient_op`` (the traced gradient holds TensorFlow's own gradient op of
    softplus). Reference: :func:`log1pexp_reference`."""
    x, upstream = log1pexp_inputs(case)
    want, want_grad = log1pexp_reference(x, upstream)
    for mode, (out, grad) in zip(RUN_MODES, obs["runs"]):
        got = _array(ctx, out, f" {mode}")
        if got.shape == want.shape and not np.all(np.isfinite(got)):
            ctx.fail(f"{ctx.what}: the value {mode} is inf for large x: e^x overflows float32 "
                     f"beyond x = 88.7, and log(inf) = inf, while log(1 + e^x) is about x "
                     f"there. Rewrite the value so that no e^x of a large x is formed.",
                     mistake="M53", fix="for x > 0, log(1 + e^x) = x + log(1 + e^-x): rewrite the "
                                        "formula so that exp only ever sees a non-positive number "
                                        "(tf.abs and tf.math.log1p help).",
                     code="value_overflow")
        ctx.close(got, want, f" {mode}", rtol=1e-5, atol=1e-6, check_dtype="float")
        g = _array(ctx, grad, f", the gradient {mode}")
        if g.shape == want_grad.shape and not np.all(np.isfinite(g)):
            ctx.fail(f"{ctx.what}: the gradient {mode} is NaN for large x: the backward's "
                     f"formula overflows (e^x / (1 + e^x) is inf / inf). The same derivative can "
                     f"be written with e^-x, which cannot overflow where x is large.",
                     mistake="M53", fix="derive the derivative on paper and write it in a form "
                                        "that never evaluates e^x for a large x (the logistic "
                                        "function is one), times the upstream gradient.",
                     code="grad_overflow")
        if _near(g, want_grad / upstream, 1e-5) and not _near(upstream, np.ones_like(upstream)):
            ctx.fail(f"{ctx.what}: the gradient ignores the upstream gradient: by the chain rule "
                     f"the backward returns upstream times the derivative.", code="no_upstream")
        ctx.close(g, want_grad, f", the gradient {mode} (expected upstream / (1 + e^-x))",
                  rtol=1e-5, atol=1e-6)
    if obs["custom_gradient"] is not True:
        ctx.fail(f"{ctx.what} gives the right values but does not define its own backward: "
                 f"the exercise is tf.custom_gradient.",
                 fix="read tf.custom_gradient: the decorated function returns its value and a "
                     "backward function, which takes the upstream gradient and applies the "
                     "derivative's formula.",
                 mistake="M21", code="no_custom_gradient")
    if obs["backward_autodiff"] or obs["builtin_gradient_op"]:
        ctx.fail(f"{ctx.what} gives the right gradient, but its backward asks TensorFlow for it "
                 f"(a tape, tf.gradients or the built-in SoftplusGrad op inside grad_fn) instead "
                 f"of computing the derivative: a custom gradient exists to replace what "
                 f"autodiff would do, so the backward must be your own formula.",
                 mistake="M52", fix="derive d/dx log(1 + e^x) on paper and write that formula in "
                                    "the backward function with tf ops, times the upstream "
                                    "gradient.",
                 code="backward_autodiff")
