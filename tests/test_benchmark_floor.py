"""The benchmark's floor: the graded cells' own seconds, summed over notebooks, over the workers."""
from autograder.grading.demo.benchmark import STEPS, floor_seconds


def test_floor_is_the_graded_cells_seconds_over_the_workers():
    timings = {"s1/01_gradient_tape": {"graded cells": 3.0, "other cells": 10.0, "nbgrader": 1.0},
               "s2/07_graph_pitfalls_debugging": {"graded cells": 5.0, "kernel start": 0.5},
               "s3/03_tf_function_autograph": {"other cells": 2.0}}   # nothing graded ran
    assert floor_seconds(timings, workers=2) == 4.0
    assert floor_seconds(timings, workers=1) == 8.0
    assert floor_seconds({}, workers=4) == 0.0


def test_the_breakdown_shows_graded_cells_apart_from_the_rest():
    assert STEPS.index("graded cells") < STEPS.index("other cells")
