"""What the workbook's notebooks import for teaching: setup, plots, timing, devices, data.

Importing this package imports TensorFlow with its C++ start-up log silenced
(:func:`~utils.notebook.import_tensorflow_quietly`): notebooks import it before TensorFlow.
"""
from .notebook import fast_mode, import_tensorflow_quietly, setup_notebook

import_tensorflow_quietly()

__all__ = ["fast_mode", "import_tensorflow_quietly", "setup_notebook"]
