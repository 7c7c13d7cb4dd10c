"""What the workbook's notebooks import for teaching: setup, plots, timing, devices, data.

Importing this package sets TensorFlow's log level, then imports TensorFlow with its C++
start-up log silenced (:func:`~utils.notebook.import_tensorflow_quietly`): notebooks import it
before TensorFlow, so no C++ log line (``I0000``, ``E0000``) reaches a cell's stderr later.
"""
from .notebook import fast_mode, import_tensorflow_quietly, quiet_tensorflow_logs, setup_notebook

import_tensorflow_quietly()

__all__ = ["fast_mode", "import_tensorflow_quietly", "quiet_tensorflow_logs", "setup_notebook"]
