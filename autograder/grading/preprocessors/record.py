"""The second pass of grading: record a worker's execution into the one gradebook.
"""
from __future__ import annotations

import os

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder.grading.defaults import DEMO_SKIPPED_KEY, REVIEW_KEY, VERDICT_KEY


class ReuseOutputs(NbGraderPreprocessor):
    """Stand-in for nbgrader's ``Execute`` when the notebook already ran in a grading worker.

    A worker executed the submission in a scratch course (see :mod:`autograder.grading.worker`);
    this copies that run's outputs into the same cells, so that the rest of nbgrader's autograde
    (saving grades to the one gradebook) runs unchanged. The two notebooks come from the same
    submission through the same sanitizing steps, so their cells correspond one to one; a mismatch
    is an error. When the worker left no notebook (its kernel died, say), every code cell gets an
    error saying why, so that no test is counted as passed without having run.
    """

    executed_directory = Unicode(
        "", help="autograded/ folder of the worker's scratch course").tag(config=True)
    problem = Unicode(
        "", help="why the worker left no executed notebook").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        path = os.path.join(self.executed_directory, info["student"], info["assignment"],
                            info["notebook"] + ".ipynb")
        if not os.path.exists(path):
            reason = self.problem or "the notebook was not executed"
            for cell in nb.cells:
                cell.metadata.pop(VERDICT_KEY, None)
                cell.metadata.pop(DEMO_SKIPPED_KEY, None)
                if cell.cell_type == "code":
                    cell.outputs = [nbformat.v4.new_output(
                        "error", ename="NotGraded", evalue=reason, traceback=[f"NotGraded: {reason}"])]
                    cell.metadata[VERDICT_KEY] = True  # the grader's own words
            return nb, resources
        executed = nbformat.read(path, as_version=4)
        # Code cells must match one to one; markdown may differ (SanitizeHTML, later in the same
        # list, cleans it in the worker's run and again here, to the same text).
        if [(c.cell_type, c.source if c.cell_type == "code" else "") for c in executed.cells] != \
                [(c.cell_type, c.source if c.cell_type == "code" else "") for c in nb.cells]:
            raise ValueError(f"executed notebook {path} does not match the submission's cells")
        for cell, done in zip(nb.cells, executed.cells):
            for key in (VERDICT_KEY, DEMO_SKIPPED_KEY):  # the submission's own: never trusted
                cell.metadata.pop(key, None)
            if cell.cell_type == "code":
                cell.outputs = done.outputs
                cell.execution_count = done.execution_count
                for key in (VERDICT_KEY, DEMO_SKIPPED_KEY):  # the worker's run's
                    if done.metadata.get(key) is True:
                        cell.metadata[key] = True
        if REVIEW_KEY in executed.metadata:
            nb.metadata[REVIEW_KEY] = executed.metadata[REVIEW_KEY]
        return nb, resources
