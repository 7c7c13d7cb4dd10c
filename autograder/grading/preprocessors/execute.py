"""nbgrader's ``Execute`` for grading: the grader's verdict on graded cells, integrity checks,
output limits as output arrives.
"""
from __future__ import annotations

import hashlib
import os
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from queue import Empty

import nbformat
import zmq
from jupyter_core.utils import ensure_async, run_sync
from nbclient.exceptions import DeadKernelError
from nbgrader.preprocessors import Execute
from nbgrader.utils import is_grade, is_solution
from traitlets import Integer, List, Unicode

from autograder.checks.judge import error_name
from autograder.grading.defaults import (
    DEMO_NOT_RUN,
    DEMO_SKIPPED_KEY,
    MAX_CELL_OUTPUT_BYTES,
    MAX_MESSAGE_BYTES,
    MAX_NOTEBOOK_OUTPUT_BYTES,
    REVIEW_KEY,
    VERDICT_KEY,
    WORKDIR,
)
from autograder.grading.kernels.managers import LimitedKernelManager, SandboxedKernelManager
from autograder.grading.preprocessors import door, placed, probe, verdict, written
from autograder.grading.preprocessors.autograde import output_size

# Seconds GradingExecute spent in this process, by step ("kernel start", "integrity checks",
# "set-up cell", "graded cells", "other cells"), summed over notebooks; a grading job clears it
# first (one job at a time per process).
TIMINGS: dict[str, float] = {}


def _add_time(step: str, started: float) -> None:
    """Add the seconds since ``started`` (``time.perf_counter()``) to ``TIMINGS[step]``."""
    TIMINGS[step] = TIMINGS.get(step, 0.0) + time.perf_counter() - started


class GradingExecute(Execute):
    """nbgrader's ``Execute`` that decides graded cells itself, with integrity checks and output
    limits, and which skips the course's demonstration cells.

    A graded cell made of this course's check calls is never run in the kernel: its verdict is
    decided here, outside the student's interpreter (:mod:`.preprocessors.verdict`): for each call
    the kernel is asked, silently and out of its history, to run the exercise's kernel half on the
    cases; what comes back is plain data, judged here against references the kernel never sees, and
    the cell's outputs are the grader's own. Any other graded cell runs in the kernel as nbgrader
    runs it.

    Output is counted as it arrives: past :data:`~.defaults.MAX_CELL_OUTPUT_BYTES` for a cell or
    :data:`~.defaults.MAX_NOTEBOOK_OUTPUT_BYTES` for the notebook, further output is dropped
    (errors are kept, shortened), and no kernel message larger than
    :data:`~.defaults.MAX_MESSAGE_BYTES` is received.

    The check (:mod:`.kernel_side.integrity_probe`, run silently in the kernel) reports what the
    cells since the last check changed in the interpreter: IPython transformers and hooks, exception
    handlers, import hooks, builtins, replaced methods. It runs before the first cell the student
    can edit (after the course's set-up) and before each graded cell, so nothing changed escapes it
    before a grade is given. Changes made by locked cells before any student cell (the course's own,
    such as ``%matplotlib inline``) are expected; later changes are flagged with the cells that ran
    since the last check. Before each graded cell it also checks that the course's check functions
    hold the code on disk. What it flags goes to the notebook's ``metadata.grading_review`` (a list
    of strings); scores are never changed here.

    A cell whose source is one of :attr:`demo_sha256`, and which is neither graded nor an answer
    cell, is not run: the author marked it as a demonstration no grade depends on.
    """

    probe_timeout_s = Integer(30, help="longest wait for one integrity check, seconds").tag(config=True)
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
        self._record = probe.Record()  # the digest of the probe's last record in the kernel
        self._demo_sha256 = set(self.demo_sha256)
        self._notebook_bytes, self._cell_bytes, self._cut_noted = 0, 0, False
        self._tests_ran = False  # whether a graded test cell has run (hidden inputs sent)
        self._setup_timed_out = False
        # The door into the kernel, pinned by the first request (before any student cell); whether
        # the notebook has graded cells of the course's checks (the door then binds their entry).
        self._door, self._course = None, any(_is_check_cell(c) for c in nb.cells)
        nb.metadata[REVIEW_KEY] = []
        for cell in nb.cells:
            cell.metadata.pop(VERDICT_KEY, None)
            cell.metadata.pop(DEMO_SKIPPED_KEY, None)
        # The files of the notebook's folder before it runs: the submission's (see _read_written).
        self._present = set(os.listdir(_folder(resources)))
        return super().preprocess(nb, resources, km)

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if self._is_demo(cell):
            # Said in the cell, so that the formgrader and the feedback do not show it as a cell
            # the student left unrun.
            cell.metadata[DEMO_SKIPPED_KEY] = True
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=DEMO_NOT_RUN)]
            cell.execution_count = None
            return cell
        if cell.cell_type != "code" or not cell.source.strip() or self.kc is None:
            return await super().async_execute_cell(cell, cell_index, execution_count,
                                                    store_history)
        nbgrader = cell.metadata.get("nbgrader", {})
        calls = None
        if is_grade(cell):
            try:
                calls = verdict.parse_graded_cell(cell.source)
            except verdict.NotChecks:
                pass  # a test cell of another form: it runs in the kernel
        if is_grade(cell) or (not self._student_ran and not nbgrader.get("locked")):
            started = time.perf_counter()
            await self._integrity_check(cell, cell_index, runs_in_kernel=calls is None)
            _add_time("integrity checks", started)
        # From the first editable cell on, every change is suspect but the set-up cell's.
        self._student_ran |= not nbgrader.get("locked")
        if self._student_ran and nbgrader.get("grade_id") != "setup":
            self._suspects.append(cell_index + 1)
        started = time.perf_counter()
        # A graded cell's source holds hidden tests: keep it out of the kernel's history (In, _i).
        store_history = store_history and not is_grade(cell)
        self._cell_bytes, self._cut_noted = 0, False
        try:
            if calls is not None:
                return await self._decide(cell, cell_index, calls)
            done = await super().async_execute_cell(cell, cell_index, execution_count,
                                                    store_history)
            if nbgrader.get("grade_id") == "setup" and any(
                    o.get("ename") in ("CellTimeoutError", "KeyboardInterrupt") for o in done.outputs
                    if o.get("output_type") == "error"):
                self._setup_timed_out = True
            return done
        finally:
            self._tests_ran |= bool(is_grade(cell)) and not is_solution(cell)
            _add_time("set-up cell" if nbgrader.get("grade_id") == "setup" else
                      "graded cells" if is_grade(cell) else "other cells", started)

    async def _decide(self, cell, cell_index, calls):
        """Give the graded cell ``cell`` the outputs of the grader's verdict on its check calls
        (see :mod:`.preprocessors.verdict`); nothing of its source runs in the kernel. After a set-up cell that
        timed out nothing is asked (G17: its imports may hang every request): the cell says so."""
        if self._setup_timed_out:
            reason = (f"the set-up cell timed out after {self.timeout} s, so "
                      f"{calls[0].exercise.name} was not tested")
            cell.outputs = [nbformat.v4.new_output("error", ename="CheckFailed", evalue=reason,
                                                   traceback=[f"CheckFailed: {reason}"])]
            cell.metadata[VERDICT_KEY] = True
            return cell
        verdicts = []
        for call in calls:
            timeout_s = self.timeout or 10 ** 6
            if self._door is None:  # the door could not be made: nothing can be asked
                reply, problem = {"status": "error", "ename": "IndexError"}, None
            else:
                reply, problem = await self._ask(door.through(
                    self._door, "observe", verdict.request_arguments(call)), timeout_s)
            found = verdict.decide(call, reply, self._door,
                                   timeout_s if problem == "timed out" else None)
            if problem == "answered twice":
                found.review.append(f"{call.check}: the kernel answered the grader twice (a "
                                    f"reply forged by the notebook's code?): no points given")
            verdicts.append(found)
            self.nb.metadata[REVIEW_KEY] += found.review
            if not found.passed:
                break
        cell.outputs = verdict.outputs(verdicts)
        cell.metadata[VERDICT_KEY] = True
        cell.execution_count = None
        self.nb.cells[cell_index] = cell
        return cell

    async def _ask(self, expression: str, timeout_s: float):
        """Evaluate ``expression`` silently in the kernel (out of its history, no output kept).

        Returns ``(result, problem)``: the ``user_expressions`` result (untrusted), or None with
        ``problem`` ``"timed out"`` (past ``timeout_s`` seconds; the kernel is interrupted) or
        ``"answered twice"``: more than one reply came for the request. Student code in the
        kernel can send a reply of its own; the kernel answers requests one at a time, so every
        reply to this request arrives before the reply to a second, empty request (a fence) sent
        after it. A kernel that died raises DeadKernelError.
        """
        msg_id = self.kc.execute("", silent=True, store_history=False,
                                 user_expressions={"answer": expression})
        reply = await self._reply_to(msg_id, timeout_s)
        if reply is None:
            await ensure_async(self.km.interrupt_kernel())
            await self._reply_to(msg_id, 10)  # the interrupted request's own reply, if it comes
            return None, "timed out"
        fence = self.kc.execute("", silent=True, store_history=False)
        replies = 1
        while True:
            other = await self._next_reply(max(timeout_s, 10))
            if other is None:
                return None, "timed out"
            parent = other["parent_header"].get("msg_id")
            replies += parent == msg_id
            if parent == fence:
                break
        if replies > 1:
            return None, "answered twice"
        return reply["content"].get("user_expressions", {}).get("answer"), None

    async def _next_reply(self, timeout_s: float):
        """The next shell reply within ``timeout_s`` seconds, or None; DeadKernelError when the
        kernel died."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                return await ensure_async(self.kc.shell_channel.get_msg(
                    timeout=min(1.0, max(0.01, deadline - time.monotonic()))))
            except Empty:
                if not await ensure_async(self.km.is_alive()):
                    raise DeadKernelError("Kernel died") from None
        return None

    async def _reply_to(self, msg_id: str, timeout_s: float):
        """The first shell reply to ``msg_id`` within ``timeout_s`` seconds, or None."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            reply = await self._next_reply(left)
            if reply is not None and reply["parent_header"].get("msg_id") == msg_id:
                return reply
        return None

    def process_message(self, msg, cell, cell_index):
        """nbclient's, with output counted as it arrives: past the cell's or the notebook's
        limit, outputs are dropped (an error is kept, shortened, so that it still costs points;
        stderr leaves one marker), and a note says how much was dropped."""
        content = msg.get("content", {})
        if self._tests_ran and msg.get("msg_type") in ("display_data", "execute_result",
                                                       "update_display_data"):
            # After the first graded test a display must not reach back: an update of an earlier
            # cell's display (its display_id) could show what the hidden tests passed in.
            if msg["msg_type"] == "update_display_data":
                return None
            msg = dict(msg, content={k: v for k, v in content.items() if k != "transient"})
            content = msg["content"]
        if msg.get("msg_type") in ("stream", "display_data", "execute_result", "error",
                                   "update_display_data"):
            size = output_size(content)
            self._cell_bytes += size
            self._notebook_bytes += size
            if (self._cell_bytes > MAX_CELL_OUTPUT_BYTES
                    or self._notebook_bytes > MAX_NOTEBOOK_OUTPUT_BYTES):
                if msg["msg_type"] == "error":
                    msg = dict(msg, content={"ename": str(content.get("ename", "Error"))[:200],
                                             "evalue": str(content.get("evalue", ""))[:2000],
                                             "traceback": []})
                    return super().process_message(msg, cell, cell_index)
                if not self._cut_noted:
                    self._cut_noted = True
                    cell.outputs.append(nbformat.v4.new_output(
                        "stream", name="stdout", text=f"[output past {MAX_CELL_OUTPUT_BYTES:,} "
                        f"bytes for this cell or {MAX_NOTEBOOK_OUTPUT_BYTES:,} for the notebook "
                        f"was dropped]\n"))
                if (msg["msg_type"] == "stream" and content.get("name") == "stderr"
                        and not any(o.get("name") == "stderr" for o in cell.outputs)):
                    cell.outputs.append(nbformat.v4.new_output(
                        "stream", name="stderr", text="[stderr output dropped]\n"))
                return None
        return super().process_message(msg, cell, cell_index)

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
        # The client's sockets, made from here on, receive no message larger than the limit: ZMQ
        # drops a bigger one before it is read into memory.
        self.km.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        try:
            return await super().async_start_new_kernel_client()
        finally:
            _add_time("kernel start", started)

    @contextmanager
    def setup_kernel(self, **kwargs):
        """nbclient's; in a sandbox, the other files of the notebook's folder (``resources``'s
        ``metadata.path``) are placed in its working folder first (:mod:`.preprocessors.placed`);
        after the last cell the files it wrote are read back (:mod:`.preprocessors.written`)."""
        with super().setup_kernel(**kwargs):
            self._placed = {}
            if isinstance(self.km, SandboxedKernelManager) and (self.resources.get("metadata") or {}).get("path"):
                self._placed, notes = run_sync(placed.place)(
                    self._ask, self.probe_timeout_s, Path(_folder(self.resources)), WORKDIR,
                    str(self.resources.get("unique_key") or "the notebook"), written.WRITTEN)
                written.NOTES.extend(notes)
            yield
            run_sync(self._read_written)()

    async def _read_written(self) -> None:
        notebook = str(self.resources.get("unique_key") or "the notebook")
        sandboxed = isinstance(self.km, SandboxedKernelManager)
        folder = WORKDIR if sandboxed else _folder(self.resources)
        try:
            await written.collect(written.through_door(self), folder, notebook, self._present,
                                  shared=not sandboxed, placed=self._placed)
        except Exception as error:  # a kernel that died at the end: its files are lost, no more
            written.NOTES.append(f"{notebook}: the files it wrote could not be read "
                                 f"({type(error).__name__})")

    start_new_kernel = run_sync(async_start_new_kernel)  # as execute_cell below
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    execute_cell = run_sync(async_execute_cell)  # nbclient binds its own at class creation

    async def _pin_door(self):
        """Make the grader's door into the kernel (:mod:`.preprocessors.door`), before any cell a
        student can edit has run, and keep its addresses. Returns None when it was made, else the
        integrity check's findings saying why not."""
        # Before the set-up cell (a student's cell put first) the pin imports what it imports,
        # TensorFlow included: as long as a cell may take.
        result, problem = await self._ask(door.pin_expression(self._token, self._course),
                                          max(self.probe_timeout_s, self.timeout or 0))
        self._door = door.read_pin(result) if problem is None else None
        if self._door is not None:
            return None
        why = problem or error_name(result.get("ename") if isinstance(result, dict) else None)
        return {"changed": [], "checks": [f"the grader's door into the kernel could not be made ({why})"]}

    async def _integrity_check(self, cell, cell_index, runs_in_kernel: bool = True) -> None:
        """Run the integrity check before ``cell``; a graded cell that ``runs_in_kernel`` (not
        decided by the grader) is also kept out of the kernel's ``linecache``."""
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        graded = bool(is_grade(cell))
        found = await self._pin_door() if self._door is None and not self._student_ran else None
        if found is None and self._door is None:
            found = {"changed": [], "checks": ["the grader's door into the kernel is missing"]}
        if found is None:
            rest = f"{self._token!r}, {probe.CHECKS_DIR!r}, {graded}, {graded and runs_in_kernel}, " \
                f"{probe.DEFINITIONS if graded else None!r}"
            result, problem = await self._ask(
                door.through(self._door, "probe", f"{probe.SOURCE!r}, ({rest},)"), self.probe_timeout_s)
            found = self._record.answer(self._door, result, problem)
        review = self.nb.metadata[REVIEW_KEY]
        if self._suspects:
            first, last = self._suspects[0], self._suspects[-1]
            ran = f"cell {first}" if first == last else f"cells {first}-{last}"
            review += [f"{what} was changed while {ran} ran" for what in found["changed"]]
        self._suspects = []
        before = f"before cell {cell_index + 1}" + (f" ('{grade_id}')" if grade_id else "")
        review += [f"{finding} ({before})" for finding in found["checks"]
                   if not any(r.startswith(finding) for r in review)]


def _folder(resources) -> str:
    """The notebook's folder (nbconvert's ``resources["metadata"]["path"]``), absolute."""
    return os.path.abspath(((resources or {}).get("metadata") or {}).get("path") or ".")


def _is_check_cell(cell) -> bool:
    """Whether ``cell`` is a graded cell of this course's check calls (decided by the grader)."""
    if not is_grade(cell):
        return False
    try:
        return bool(verdict.parse_graded_cell(cell.source))
    except verdict.NotChecks:
        return False


class SandboxedExecute(GradingExecute):
    """:class:`GradingExecute` with each kernel in the bubblewrap sandbox
    (:class:`~.kernels.managers.SandboxedKernelManager`). Configured as ``Execute`` is (``c.Execute.*``);
    nbgrader's ``__init__`` fixes ``kernel_manager_class``, so configuration alone cannot."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)
