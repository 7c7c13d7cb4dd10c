"""Grader halves of the checks of 07 (graph-mode pitfalls and debugging), NumPy only; see :mod:`autograder.checks.judge`."""
