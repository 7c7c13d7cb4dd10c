"""nbgrader preprocessors of the course, one module per converter step list: ``execute`` and
``autograde`` (nbgrader's autograde), ``record`` (the second pass into the one gradebook),
``feedback`` (nbgrader's feedback), and ``verdict`` (the grader's half of a graded cell).
:func:`autograder.grading.configure.configure` places them in nbgrader's lists."""
