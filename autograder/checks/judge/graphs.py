"""Grader halves of the checks of graphs (NumPy only); see :mod:`autograder.checks.judge`."""
