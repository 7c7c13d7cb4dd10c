"""Data for the training notebooks: scikit-learn's 8x8 handwritten digits and tf.data pipelines.

The digits ship inside scikit-learn (``sklearn.datasets.load_digits`` reads a file of the installed
package): nothing is downloaded. 1797 grey-scale images of 8x8 pixels with values 0..16, labels
0..9, about 180 per class.

Example::

    from utils.data import load_digits_splits, make_dataset
    splits = load_digits_splits()
    train_ds = make_dataset(splits.x_train, splits.y_train, batch_size=32, shuffle=True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NUM_CLASSES = 10
NUM_FEATURES = 64


@dataclass(frozen=True)
class DigitsSplits:
    """Train, validation and test arrays. ``x_*``: float32, shape ``(n, 64)`` (or ``(n, 8, 8, 1)``
    with ``flatten=False``), pixel values scaled to [0, 1]; ``y_*``: int32 labels 0..9, shape ``(n,)``."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    def sizes(self) -> dict:
        """Number of examples per split, e.g. ``{"train": 1257, "val": 270, "test": 270}``."""
        return {"train": len(self.y_train), "val": len(self.y_val), "test": len(self.y_test)}


def load_digits_splits(seed: int = 0, val_fraction: float = 0.15, test_fraction: float = 0.15,
                       flatten: bool = True) -> DigitsSplits:
    """Load the 8x8 digits and split them into train, validation and test sets.

    The split is stratified by label and fixed by ``seed``: the same seed gives the same split on
    every machine.

    Args:
        seed: seed of the split.
        val_fraction, test_fraction: fractions of the 1797 images held out (default 15 % each, so
            1257 / 270 / 270).
        flatten: True gives images as vectors of 64 pixels, False as ``(8, 8, 1)`` arrays.
    Returns:
        :class:`DigitsSplits` (float32 pixels in [0, 1], int32 labels).
    """
    # The split is made by the grader's own function (NumPy and scikit-learn, no TensorFlow),
    # so that the labels it scores 06's final model against are exactly these.
    from autograder.checks.judge.training import digits_split

    arrays = digits_split(seed=seed, val_fraction=val_fraction, test_fraction=test_fraction)
    if not flatten:
        arrays = {name: a.reshape(-1, 8, 8, 1) if name.startswith("x") else a
                  for name, a in arrays.items()}
    x_train, y_train, x_val, y_val, x_test, y_test = (
        arrays[name] for name in ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test"))
    return DigitsSplits(x_train, y_train, x_val, y_val, x_test, y_test)


def make_dataset(x, y, batch_size: int = 32, shuffle: bool = False, seed: int = 0):
    """A ``tf.data.Dataset`` of ``(x_batch, y_batch)`` pairs: shuffle (optional), batch, prefetch.

    Shuffling comes before batching, so every epoch mixes examples across batches; with
    ``shuffle=True`` the order changes every epoch (``reshuffle_each_iteration``) but is fixed by
    ``seed``. ``prefetch(tf.data.AUTOTUNE)`` prepares the next batches on CPU threads while the
    model trains on the current one.

    Args:
        x: features, shape ``(n, ...)``, any float dtype (cast to float32).
        y: integer labels, shape ``(n,)`` (cast to int32).
        batch_size: examples per batch; the last batch may be smaller.
        shuffle: whether to shuffle (use it for training data only).
        seed: shuffle seed.
    Returns:
        A dataset with element spec ``(TensorSpec((None, ...), float32), TensorSpec((None,), int32))``.
    """
    import tensorflow as tf

    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle:
        dataset = dataset.shuffle(len(y), seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def plot_digits(x, y, n: int = 10, predictions=None):
    """Show the first ``n`` images of ``x`` (shape ``(m, 64)`` or ``(m, 8, 8[, 1])``) with their
    labels ``y``; with ``predictions``, titles read ``label/prediction``. Returns the figure."""
    import matplotlib.pyplot as plt

    images = np.asarray(x)[:n].reshape(-1, 8, 8)
    fig, axes = plt.subplots(1, n, figsize=(1.0 * n, 1.3))
    for i, ax in enumerate(np.atleast_1d(axes)):
        ax.imshow(images[i], cmap="gray_r")
        title = str(int(y[i])) if predictions is None else f"{int(y[i])}/{int(predictions[i])}"
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    return fig


def plot_history(history: dict, title: str = "Training"):
    """Loss and accuracy curves of a training run side by side.

    Args:
        history: lists per epoch under ``"loss"``, ``"accuracy"``, ``"val_loss"``, ``"val_accuracy"``
            (missing keys are skipped).
    Returns:
        The figure.
    """
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(8, 3))
    for key, ax in (("loss", ax_loss), ("accuracy", ax_acc)):
        for prefix, label in (("", "train"), ("val_", "validation")):
            values = history.get(prefix + key)
            if values:
                ax.plot(range(1, len(values) + 1), values, marker=".", label=label)
        ax.set_xlabel("epoch")
        ax.set_ylabel(key)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    return fig
