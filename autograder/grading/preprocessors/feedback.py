"""The course's steps of nbgrader's feedback: no hidden test, traceback or later output reaches a
student.
"""
from __future__ import annotations

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution

from autograder.checks.judge import error_name
from autograder.grading.defaults import VERDICT_KEY


class HideTracebacks(NbGraderPreprocessor):
    """In feedback, reduce each error to its last line (``CheckFailed: message``).

    A traceback quotes the source lines around the failure, which in a graded cell are the hidden
    tests; the check's own message is what the student needs.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code":
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class HideTestOutputs(NbGraderPreprocessor):
    """In feedback, show a graded cell's error and nothing else it printed; an error the kernel
    made (a test cell nbgrader ran in the kernel) shows only its type.

    What a graded cell prints comes from the hidden tests' calls, and so can an error's message
    (a student's function may raise one holding its hidden input). A cell the grader decided
    (metadata ``grading_verdict``) shows the grader's own message, which holds no value.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and is_grade(cell):
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if not cell.metadata.get(VERDICT_KEY):
                for output in errors:
                    name = error_name(output.ename)  # Python's or TensorFlow's, never the notebook's
                    output.ename, output.evalue = name, ("its message is not shown in feedback: "
                                                        "it could quote the hidden tests")
                    output.traceback = [f"{name}: {output.evalue}"]
            cell.outputs = errors
        return cell, resources


class HideOutputsAfterTests(NbGraderPreprocessor):
    """In feedback, show no output of a cell after the first graded test cell (graded cells keep
    theirs, see :class:`HideTestOutputs`).

    Once hidden tests have called a student's function, anything later, a print in another cell
    or a thread still running, could show the hidden inputs that function kept.
    """

    note = "[not shown in feedback: outputs after the first graded test could show hidden inputs]\n"

    def preprocess(self, nb, resources):
        tests = [i for i, c in enumerate(nb.cells)
                 if c.cell_type == "code" and is_grade(c) and not is_solution(c)]
        for cell in nb.cells[tests[0] + 1:] if tests else []:
            if cell.cell_type == "code" and cell.outputs and not (is_grade(cell) and not is_solution(cell)):
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=self.note)]
        return nb, resources
