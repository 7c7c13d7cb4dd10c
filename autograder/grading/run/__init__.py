"""One grading run over a class, on the instructor's machine: the pipeline, the gradebook, the
records of earlier runs, the results and the reports."""
