"""Grading jobs: data in, data out (:mod:`.job`), graded on a worker (:mod:`.worker`), spread over
Dask (:mod:`.cluster`). Nothing here imports the client side (:mod:`autograder.grading.run`)."""
