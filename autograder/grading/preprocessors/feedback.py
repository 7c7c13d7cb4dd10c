"""The course's steps of nbgrader's feedback: no hidden test, traceback or later output reaches a
student.
"""
from __future__ import annotations

import html

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution

from autograder.checks.judge import error_name
from autograder.grading.defaults import DEMO_SKIPPED_KEY, VERDICT_KEY
from autograder.grading.preprocessors.verdict import NotChecks, parse_graded_cell


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

    One note says so, on the first cell whose outputs are taken out; the later ones are left
    without outputs, not each given the same note. A demonstration cell the grader did not run
    keeps the grader's note that says so (``DEMO_SKIPPED_KEY``).
    """

    note = ("[not shown in feedback: the outputs of this cell and of the later ones, after the "
            "first graded test, could show hidden inputs]\n")

    def preprocess(self, nb, resources):
        tests = [i for i, c in enumerate(nb.cells)
                 if c.cell_type == "code" and is_grade(c) and not is_solution(c)]
        noted = False
        for cell in nb.cells[tests[0] + 1:] if tests else []:
            if cell.metadata.get(DEMO_SKIPPED_KEY):
                continue  # the grader's own note that it did not run this cell
            if cell.cell_type == "code" and cell.outputs and not (is_grade(cell) and not is_solution(cell)):
                cell.outputs = [] if noted else [
                    nbformat.v4.new_output("stream", name="stdout", text=self.note)]
                noted = True
        return nb, resources


class ScoreSummary(NbGraderPreprocessor):
    """In feedback, a first cell that lists each graded cell by name with its score: the
    exercise its checks test (this course's check calls) and its ``grade_id``, then the total.
    nbgrader's own table of contents names every test cell "Test cell"; this names them.
    Runs after nbgrader's ``GetGrades`` (each cell's ``score`` in its metadata)."""

    def preprocess(self, nb, resources):
        rows = []
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if not (meta.get("grade") or meta.get("task")) or not meta.get("points"):
                continue
            try:
                names = ", ".join(dict.fromkeys(c.exercise.name for c in parse_graded_cell(cell.source)))
            except (NotChecks, KeyError):
                names = ""
            grade_id = str(meta.get("grade_id", ""))
            score = "needs grading" if meta.get("score") is None else _points(meta["score"])
            rows.append(f"| {_md(names or grade_id)} | `{_md(grade_id)}` | {score} / "
                        f"{_points(meta['points'])} |")
        if rows:
            total = resources.get("nbgrader", {})
            rows.append(f"| **total** | | **{_points(total.get('score') or 0)} / "
                        f"{_points(total.get('max_score') or 0)}** |")
            summary = nbformat.v4.new_markdown_cell(
                "**Scores by exercise**\n\n| exercise | cell | score |\n|---|---|---|\n" + "\n".join(rows))
            nb.cells.insert(0, summary)
        return nb, resources


def _points(value) -> str:
    return f"{float(value):g}"


def _md(text: str) -> str:
    """``text`` safe in a markdown table cell: HTML-escaped, no pipe, backtick or line break."""
    return html.escape(" ".join(text.split())).replace("|", "&#124;").replace("`", "&#96;")
