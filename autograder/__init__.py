"""Checks that the workbook's test cells call (``autograder.checks``) and the instructor's grading
pipeline over nbgrader (``autograder.grading``, command line ``course``)."""
