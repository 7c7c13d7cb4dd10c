"""nbgrader preprocessors of the course, each one job, placed in nbgrader's lists by
:func:`autograder.grading.settings.configure`."""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import time
import uuid
from pathlib import Path
from queue import Empty

import nbformat
from jupyter_core.utils import ensure_async, run_sync
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Integer, List, Unicode

from .sandbox import LimitedKernelManager, SandboxedKernelManager
from .settings import TF_LOG_LINE


# Key of the notebook metadata where GradingExecute leaves what it flagged for review.
REVIEW_KEY = "grading_review"
# Seconds GradingExecute spent in this process, by step ("kernel start", "integrity checks",
# "set-up cell", "other cells"), summed over notebooks; a grading job clears it first (one job
# at a time per process).
TIMINGS: dict[str, float] = {}


def _add_time(step: str, started: float) -> None:
    """Add the seconds since ``started`` (``time.perf_counter()``) to ``TIMINGS[step]``."""
    TIMINGS[step] = TIMINGS.get(step, 0.0) + time.perf_counter() - started
PROBE_SOURCE = (Path(__file__).parent / "integrity_probe.py").read_text()
# Where the check modules are (the same path inside the sandbox, mounted read-only).
CHECKS_DIR = importlib.util.find_spec("autograder.checks").submodule_search_locations[0]


class GradingExecute(Execute):
    """nbgrader's ``Execute`` with integrity checks, which skips the course's demonstration cells.

    The check (:mod:`.integrity_probe`, run silently in the kernel) reports what the cells since
    the last check changed in the interpreter: IPython transformers and hooks, exception handlers,
    import hooks, builtins, replaced methods. It runs before the first cell the student can edit
    (after the course's set-up) and before each graded cell, so nothing changed escapes it before
    a grade is given. Changes made by locked cells before any student cell (the course's own,
    such as ``%matplotlib inline``) are expected; later changes are flagged with the cells that
    ran since the last check. Before each graded cell it also checks that the course's check
    functions hold the code on disk. What it flags goes to the notebook's
    ``metadata.grading_review`` (a list of strings); scores are never changed here.

    A cell whose source is one of :attr:`demo_sha256`, and which is neither graded nor an answer
    cell, is not run: the author marked it as a demonstration no grade depends on.
    """

    probe_timeout_s = Integer(30, help="longest wait for one integrity check, seconds").tag(
        config=True)
    demo_sha256 = List(Unicode(), help="sha256 of the sources of the course's demonstration "
                       "cells (settings.demo_cell_hashes): such a cell, unchanged and neither "
                       "graded nor an answer, is not run").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", LimitedKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        # Each notebook gets a kernel of its own, so a state of its own: the token naming the
        # probe's record in the kernel, the suspect cells that ran since the last probe, and
        # whether a cell the student can edit has run yet.
        self._token, self._suspects, self._student_ran = f"_grader_{uuid.uuid4().hex}", [], False
        self._demo_sha256 = set(self.demo_sha256)
        nb.metadata[REVIEW_KEY] = []
        return super().preprocess(nb, resources, km)

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if self._is_demo(cell):
            return cell
        if cell.cell_type != "code" or not cell.source.strip() or self.kc is None:
            return await super().async_execute_cell(cell, cell_index, execution_count,
                                                    store_history)
        nbgrader = cell.metadata.get("nbgrader", {})
        if is_grade(cell) or (not self._student_ran and not nbgrader.get("locked")):
            started = time.perf_counter()
            await self._integrity_check(cell, cell_index)
            _add_time("integrity checks", started)
        # From the first editable cell on, every change is suspect but the set-up cell's.
        self._student_ran |= not nbgrader.get("locked")
        if self._student_ran and nbgrader.get("grade_id") != "setup":
            self._suspects.append(cell_index + 1)
        started = time.perf_counter()
        # A graded cell's source holds hidden tests: keep it out of the kernel's history (In, _i).
        store_history = store_history and not is_grade(cell)
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count,
                                                    store_history)
        finally:
            _add_time("set-up cell" if nbgrader.get("grade_id") == "setup" else "other cells",
                      started)

    def _is_demo(self, cell) -> bool:
        """An unchanged demonstration cell of the course, which no grade depends on."""
        return cell.cell_type == "code" and not is_grade(cell) and not is_solution(cell) and \
            hashlib.sha256(cell.source.encode()).hexdigest() in self._demo_sha256

    async def async_start_new_kernel(self, **kwargs):
        started = time.perf_counter()
        try:
            return await super().async_start_new_kernel(**kwargs)
        finally:
            _add_time("kernel start", started)

    async def async_start_new_kernel_client(self):
        started = time.perf_counter()
        try:
            return await super().async_start_new_kernel_client()
        finally:
            _add_time("kernel start", started)

    start_new_kernel = run_sync(async_start_new_kernel)  # as execute_cell below
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    execute_cell = run_sync(async_execute_cell)  # nbclient binds its own at class creation

    async def _integrity_check(self, cell, cell_index) -> None:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        expression = (f"(lambda ns: (exec({PROBE_SOURCE!r}, ns), ns['probe']({self._token!r}, "
                      f"{CHECKS_DIR!r}, {bool(is_grade(cell))})))({{}})[1]")
        msg_id = self.kc.execute("", silent=True, store_history=False,
                                 user_expressions={"probe": expression})
        found = {"changed": [], "checks": []}
        deadline = time.monotonic() + self.probe_timeout_s
        while True:
            try:
                reply = await ensure_async(self.kc.shell_channel.get_msg(
                    timeout=max(0.1, deadline - time.monotonic())))
            except Empty:
                found["checks"] = ["the integrity check got no answer (the interpreter was changed?)"]
                await ensure_async(self.km.interrupt_kernel())
                break
            if reply["parent_header"].get("msg_id") == msg_id:
                result = reply["content"].get("user_expressions", {}).get("probe", {})
                if result.get("status") == "ok":
                    found = ast.literal_eval(result["data"]["text/plain"])
                else:
                    found["checks"] = [f"the integrity check failed: {result.get('ename')}: "
                                       f"{result.get('evalue')}"]
                break
        review = self.nb.metadata[REVIEW_KEY]
        if self._suspects:
            first, last = self._suspects[0], self._suspects[-1]
            ran = f"cell {first}" if first == last else f"cells {first}-{last}"
            review += [f"{what} was changed while {ran} ran" for what in found["changed"]]
        self._suspects = []
        before = f"before cell {cell_index + 1}" + (f" ('{grade_id}')" if grade_id else "")
        review += [f"{finding} ({before})" for finding in found["checks"]
                   if not any(r.startswith(finding) for r in review)]


class SandboxedExecute(GradingExecute):
    """:class:`GradingExecute` with each kernel in the bubblewrap sandbox
    (:class:`~.sandbox.SandboxedKernelManager`). Configured as ``Execute`` is (``c.Execute.*``);
    nbgrader's ``__init__`` fixes ``kernel_manager_class``, so configuration alone cannot."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)


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


class NameTimeouts(NbGraderPreprocessor):
    """Say "timed out" where a cell was stopped for running past its time limit (G01), and say
    it again where a later cell misses a name because of it (G17).

    nbgrader's ``Execute`` interrupts such a cell, so its output is a ``KeyboardInterrupt``; in a
    grading run nobody presses Ctrl-C, so that error always means the time limit. A set-up cell
    that timed out leaves its imports undefined: every later ``NameError`` then names that cell,
    so the student reads "the set-up cell timed out", not ``name 'tf' is not defined``.
    """

    cell_timeout_s = Integer(0, help="the per-cell time limit, seconds").tag(config=True)

    def preprocess(self, nb, resources):
        timed_out = None
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            for output in cell.outputs:
                if output.output_type != "error":
                    continue
                if output.ename in ("KeyboardInterrupt", "CellTimeoutError"):
                    output.ename = "CellTimeoutError"
                    output.evalue = f"timed out after {self.cell_timeout_s} s (an infinite loop?)"
                    output.traceback = [f"CellTimeoutError: {output.evalue}"]
                    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                    timed_out = timed_out or ("the set-up cell" if grade_id == "setup" else
                                              f"cell '{grade_id}'" if grade_id else
                                              f"cell {index + 1}")
                elif output.ename == "NameError" and timed_out and "timed out" not in output.evalue:
                    output.evalue = (f"{timed_out} timed out after {self.cell_timeout_s} s, so what "
                                     f"it defines is missing ({output.evalue})")
                    output.traceback = [f"NameError: {output.evalue}"]
        return nb, resources


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
    """In feedback, show a graded cell's error (its message) and nothing else it printed.

    What a graded cell prints comes from the hidden tests' calls: a student's ``print(x)`` inside
    the function under test would show the hidden inputs. The score and the error say the rest.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and is_grade(cell):
            cell.outputs = [o for o in cell.outputs if o.output_type == "error"]
        return cell, resources


class NoCreditFromResults(NbGraderPreprocessor):
    """Make a graded cell's value (``execute_result``) plain display output.

    nbgrader gives a graded cell the credit its first ``execute_result`` names (partial credit as a
    number, full credit for anything else) before it looks at a later error, so a student function
    that displays a value when the test calls it would score. This course's tests never return a
    value: only an error costs points.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and is_grade(cell):
            for index, output in enumerate(cell.outputs):
                if output.output_type == "execute_result":
                    cell.outputs[index] = nbformat.v4.new_output(
                        "display_data", data=output.get("data", {}),
                        metadata=output.get("metadata", {}))
        return cell, resources


class LimitOutputSize(NbGraderPreprocessor):
    """Replace any output larger than ``max_bytes`` (a 150 MB ``display`` call, one endless line)
    by a note of its size; nbgrader's ``LimitOutput`` counts stream lines only (G07)."""

    max_bytes = Integer(200_000, help="largest output kept, bytes").tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        for index, output in enumerate(cell.outputs):
            size = len(output.get("text", "")) + sum(
                len(v) if isinstance(v, str) else len(str(v)) for v in output.get("data", {}).values())
            if size > self.max_bytes:
                note = f"[output of {size:,} bytes removed: larger than {self.max_bytes:,} bytes]\n"
                cell.outputs[index] = nbformat.v4.new_output(
                    "stream", name=output.get("name", "stdout"), text=note)
        return cell, resources


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
    failure_reason = Unicode(
        "", help="why the worker left no executed notebook").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        path = os.path.join(self.executed_directory, info["student"], info["assignment"],
                            info["notebook"] + ".ipynb")
        if not os.path.exists(path):
            reason = self.failure_reason or "the notebook was not executed"
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = [nbformat.v4.new_output(
                        "error", ename="NotGraded", evalue=reason, traceback=[f"NotGraded: {reason}"])]
            return nb, resources
        executed = nbformat.read(path, as_version=4)
        if [c.source for c in executed.cells] != [c.source for c in nb.cells]:
            raise ValueError(f"executed notebook {path} does not match the submission's cells")
        for cell, done in zip(nb.cells, executed.cells):
            if cell.cell_type == "code":
                cell.outputs = done.outputs
                cell.execution_count = done.execution_count
        if REVIEW_KEY in executed.metadata:
            nb.metadata[REVIEW_KEY] = executed.metadata[REVIEW_KEY]
        return nb, resources
