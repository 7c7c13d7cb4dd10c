"""nbgrader preprocessors of the course, each one job, placed in nbgrader's lists by
:func:`autograder.grading.settings.configure`."""
from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade

from .settings import TF_LOG_LINE


class QuietTensorFlowStderr(NbGraderPreprocessor):
    """Keep stderr from costing points (G08).

    nbgrader scores a test cell 0 when it has any stderr output. TensorFlow writes its log and
    ``tf.print`` to stderr. After execution this drops TensorFlow's log lines from every code cell
    and, in graded cells, shows what is left of stderr as ordinary output, marked ``[stderr]``.
    Errors (exceptions) are untouched, so they still score 0.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        outputs = []
        for output in cell.outputs:
            if output.output_type == "stream" and output.name == "stderr":
                kept = [line for line in output.text.splitlines(keepends=True)
                        if not TF_LOG_LINE.match(line.rstrip("\n"))]
                if not kept:
                    continue
                output.text = "".join(kept)
                if is_grade(cell):
                    output.name = "stdout"
                    output.text = "".join("[stderr] " + line for line in kept)
            outputs.append(output)
        cell.outputs = outputs
        return cell, resources


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
