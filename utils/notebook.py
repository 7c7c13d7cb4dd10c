"""Setup shared by every notebook: seeds, quiet TensorFlow, fast mode."""
from __future__ import annotations

import os


def fast_mode() -> bool:
    """True when ``WORKBOOK_FAST`` is set to a non-empty value other than ``0``.

    CI and graded runs set it: heavy cells use fewer repeats, steps and epochs. The values a
    notebook checks do not depend on it; only timings and curve lengths do.
    """
    return os.environ.get("WORKBOOK_FAST", "0") not in ("", "0")


def setup_notebook(seed: int = 0) -> None:
    """Make a notebook deterministic and quiet.

    Seeds Python's ``random``, NumPy and TensorFlow with ``seed`` (``tf.keras.utils.set_random_seed``),
    and sets TensorFlow's Python logger to ERROR so that warnings do not land on stderr (which
    nbgrader would score as a failure in a test cell).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    tf.keras.utils.set_random_seed(seed)
