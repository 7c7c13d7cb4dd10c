"""Grader halves of the checks of software (NumPy only); see :mod:`autograder.checks.judge`."""
