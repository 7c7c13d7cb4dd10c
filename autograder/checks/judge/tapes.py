"""Grader halves of the checks of assignments 01 and 02 (tapes), NumPy only.

Each judge takes a case, the observations of the kernel half (``autograder/checks/tapes.py``)
and a :class:`~autograder.checks.judge.Context`; references come from analytic derivatives.
"""
from __future__ import annotations

import numpy as np

from . import exercise

MODULE = "autograder.checks.tapes"

NO_TAPE = "returns the right numbers, but no tape computed them"


@exercise("square_grad", module=MODULE, cases=[3.0, -1.5, 2],
          idea="a GradientTape computes dy/dx of y = x * x: the value returned is one that "
               "tape.gradient produced.",
          kernel_evidence="which values tape.gradient produced while square_grad ran")
def square_grad(case, obs, ctx):
    """``obs``: ``result`` (the returned value), ``from_tape`` (whether tape.gradient produced
    it). Reference: d(x*x)/dx = 2x."""
    ctx.close(obs["result"], 2.0 * float(case), check_dtype="float")
    if obs["from_tape"] is not True:
        ctx.fail(f"{ctx.what} {NO_TAPE}: the exercise is the tape, not the formula.",
                 fix="let `tape.gradient(y, x)` compute dy/dx, and return what it gives.",
                 mistake="M21", code="no_tape")


@exercise("sum_squared_grad", module=MODULE,
          cases=[np.ones((2, 2)), np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, -1.0, 2.0])],
          label=lambda x: f"input {np.asarray(x).tolist()}",
          idea="a GradientTape computes the gradient of z = (sum of x) ** 2 by the chain rule: "
               "the value returned is one that tape.gradient produced.",
          kernel_evidence="which values tape.gradient produced while sum_squared_grad ran")
def sum_squared_grad(case, obs, ctx):
    """``obs``: ``result``, ``from_tape``. Reference: dz/dx_ij = 2 * sum(x), x's shape."""
    x = np.asarray(case, dtype=np.float64)
    ctx.close(obs["result"], np.full(x.shape, 2.0 * x.sum()), rtol=1e-5, atol=1e-5,
              check_dtype="float")
    if obs["from_tape"] is not True:
        ctx.fail(f"{ctx.what} {NO_TAPE}: the exercise is the chain rule done by the tape.",
                 fix="watch x, compute y = tf.reduce_sum(x) and z = y ** 2 inside the block, "
                     "and return `tape.gradient(z, x)`.", mistake="M21", code="no_tape")
