"""Small matplotlib figures the notebooks share: a loss curve, a function with its derivatives."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def plot_loss_curve(losses, *, title: str = "Training loss", ylabel: str = "loss",
                    log_scale: bool = False, ax=None):
    """Plot one loss value per step (or epoch) as a line.

    Args:
        losses: a sequence of Python floats (or a dict name -> sequence for several curves on one
            axes, with a legend).
        title, ylabel: labels of the axes.
        log_scale: use a logarithmic y axis (losses that fall by orders of magnitude).
        ax: an existing matplotlib Axes; default a new 5 x 3 inch figure.
    Returns:
        The matplotlib Axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    curves = losses if isinstance(losses, dict) else {None: losses}
    for name, values in curves.items():
        ax.plot(np.arange(len(values)), np.asarray(values, dtype=float), label=name)
    if log_scale:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if isinstance(losses, dict):
        ax.legend()
    ax.grid(alpha=0.3)
    return ax


def plot_functions(x, curves: dict, *, title: str = "", ax=None):
    """Plot several functions of the same x on one axes, with a legend.

    Args:
        x: array-like of shape (n,), the abscissae.
        curves: label -> array-like of shape (n,), e.g. {"f(x)": y, "f'(x)": dy, "f''(x)": d2y}.
        title: the axes title.
        ax: an existing matplotlib Axes; default a new 5 x 3 inch figure.
    Returns:
        The matplotlib Axes.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    x = np.asarray(x, dtype=float)
    for label, values in curves.items():
        ax.plot(x, np.asarray(values, dtype=float), label=label)
    ax.axhline(0.0, color="gray", linewidth=0.5)
    ax.set_xlabel("x")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    return ax
