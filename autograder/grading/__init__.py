"""The instructor's grading pipeline: release, execute solutions, grade, feedback, export, report.

A thin layer over nbgrader's ``NbGraderAPI``; the ``course`` command line is a thin shell over it.
"""
