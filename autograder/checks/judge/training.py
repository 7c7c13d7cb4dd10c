"""Grader halves of the checks of training (NumPy only); see :mod:`autograder.checks.judge`."""
