"""What the workbook's notebooks import for teaching: setup, plots, timing, devices, data."""
from .notebook import fast_mode, setup_notebook

__all__ = ["fast_mode", "setup_notebook"]
