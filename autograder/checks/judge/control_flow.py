"""Grader halves of the checks of control_flow (NumPy only); see :mod:`autograder.checks.judge`."""
