"""The course's nbgrader settings, in one place: ``nbgrader_config.py`` and the ``course`` command
both call :func:`configure`, so plain ``nbgrader`` commands and ours grade the same way."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

# Per-cell time limit in graded runs, in seconds. Importing TensorFlow and the first trace of a
# tf.function take several seconds on a laptop CPU; the heaviest solution cell (06's training)
# takes about 20 s in fast mode, so 120 s leaves room on a loaded grading machine.
CELL_TIMEOUT_S = 120
# Memory one graded kernel may map, in MiB (TensorFlow alone maps about 2 GiB of address space on
# import; a student's runaway allocation stops here, not at the machine's end).
DEFAULT_MEMORY_LIMIT_MB = 8192
# Seconds to wait for a kernel to start (a loaded machine with several workers needs more).
KERNEL_STARTUP_TIMEOUT_S = 120
# The kernel every notebook runs with, whatever kernelspec a submission names (G06).
KERNEL_NAME = "python3"

# Environment of every kernel started by a grading or validation run ("grading mode"), given to
# the kernel at its start by autograder.grading.kernels.GradingKernelManager, never to the process
# that loads this configuration. TF_CPP_MIN_LOG_LEVEL quiets most of TensorFlow's C++ log;
# WORKBOOK_FAST shrinks heavy cells (see utils.fast_mode).
KERNEL_ENV = {
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "WORKBOOK_FAST": "1",
    "PYTHONWARNINGS": "ignore",
}

# TensorFlow's own log lines on stderr (C++ absl/glog lines, Python tf logger, CPU feature notice).
# nbgrader scores any stderr in a test cell as 0; these lines are never the student's fault (G08).
TF_LOG_LINE = re.compile(
    r"^(?:[IWEF]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [^\]]+\].*"
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called.*"
    r"|(?:WARNING|INFO|ERROR):tensorflow:.*"
    r"|To enable the following instructions:.*"
    r"|\s*)$"
)

# Longest stored output of one cell, in lines (G07: a tf.print every step for 10^5 steps).
MAX_OUTPUT_LINES = 200
# Output bytes kept, counted as they arrive, for one cell and for one notebook; past them output
# is dropped (thousands of outputs each under nbgrader's cut would otherwise fill the worker).
MAX_CELL_OUTPUT_BYTES = 2_000_000
MAX_NOTEBOOK_OUTPUT_BYTES = 10_000_000
# Largest message the grader receives from a kernel, bytes (ZMQ drops a larger one unread).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

# Cell tag, set when authoring in solutions/, of a cell that only demonstrates (timings, plots,
# subprocess demos, the visible checks that the hidden tests repeat): grading does not run it.
DEMO_TAG = "demo"


def demo_cell_hashes(notebooks) -> list[str]:
    """The sha256 (hex) of the source of every code cell tagged :data:`DEMO_TAG` in the given
    source notebooks (paths). A submitted cell whose source hashes to one of these, and which is
    neither graded nor an answer cell, is the author's demonstration, unchanged: it is skipped
    when grading (:class:`~.preprocessors.GradingExecute`). A demo cell a student edited runs."""
    import hashlib
    import json

    hashes = set()
    for path in notebooks:
        for cell in json.loads(open(path, encoding="utf-8").read())["cells"]:
            if cell["cell_type"] == "code" and DEMO_TAG in cell["metadata"].get("tags", []):
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                hashes.add(hashlib.sha256(source.encode()).hexdigest())
    return sorted(hashes)


def put_scripts_on_path() -> None:
    """Put this Python's scripts folder on this process's ``PATH``: nbgrader runs ``alembic`` from
    there to make a gradebook, and ``.venv/bin/course`` or ``.venv/bin/pytest`` run without an
    activated environment. Only grading processes call this (the ``course`` command, the grading
    API, ``nbgrader`` commands): never :func:`configure`, which a Jupyter server runs too."""
    scripts = os.path.dirname(sys.executable)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")


def _insert_after(steps: list, anchor, new: list) -> None:
    """Insert the preprocessors ``new`` into ``steps`` right after ``anchor`` (in place)."""
    at = steps.index(anchor) + 1
    steps[at:at] = new


def configure(c, cell_timeout_s: int = CELL_TIMEOUT_S, sandbox: bool | None = None,
              demo_sha256: list[str] | None = None) -> None:
    """Fill a traitlets ``Config`` ``c`` with the course's nbgrader settings. Graded kernels run
    in grading mode (:data:`KERNEL_ENV`, given by their kernel manager); nothing else changes.

    ``cell_timeout_s`` is the per-cell time limit of graded runs, in seconds. ``sandbox`` runs
    every graded kernel in the bubblewrap sandbox (:mod:`.sandbox`); None: where it is available
    (Linux with ``bwrap``). ``demo_sha256`` lists the demonstration cells grading skips
    (:func:`demo_cell_hashes`; [] runs every cell); None: those of this course's ``solutions/``.

    Directories are relative to the course root (the repository): ``solutions`` is nbgrader's
    source directory and ``notebooks`` its release directory.
    """
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.preprocessors import ClearHiddenTests, Execute, GetGrades, LimitOutput

    from .preprocessors import (GradingExecute, HideOutputsAfterTests, HideTestOutputs,
                                HideTracebacks, LimitOutputSize,
                                NameTimeouts, NoCreditFromResults, QuietTensorFlowStderr,
                                SandboxedExecute)
    from .sandbox import sandbox_default

    # Configuration only: no environment variable of this process is changed here (a Jupyter
    # server loads this too, through nbgrader's server extension, and its kernels are students').
    c.CourseDirectory.source_directory = "solutions"
    c.CourseDirectory.release_directory = "notebooks"
    c.CourseDirectory.course_id = "tf-autodiff-workbook"

    c.Execute.timeout = cell_timeout_s
    c.Execute.startup_timeout = KERNEL_STARTUP_TIMEOUT_S
    c.Execute.kernel_name = KERNEL_NAME
    c.Execute.interrupt_on_timeout = True
    # G07: a flood of output (10^5 tf.print lines) may still be arriving after the cell's reply;
    # wait for it a while, then go on with what came (it is truncated below anyway).
    c.Execute.iopub_timeout = 30
    c.Execute.raise_on_iopub_timeout = False
    # G01: a cell past its time limit is interrupted, scores 0 and says why; the rest still runs.
    c.Execute.error_on_timeout = {
        "ename": "CellTimeoutError",
        "evalue": f"timed out after {cell_timeout_s} s (an infinite loop?)",
        "traceback": [f"CellTimeoutError: timed out after {cell_timeout_s} s (an infinite loop?)"],
    }

    # G03/G04: graded cells a student deleted are restored from the source.
    c.OverwriteCells.add_missing_cells = True
    c.ClearHiddenTests.enforce_metadata = True

    if sandbox is None:
        sandbox = sandbox_default()
    # nbgrader's own lists, extended: our Execute in place of its, our steps after the ones named.
    autograde = list(Autograde.class_traits()["autograde_preprocessors"].default())
    autograde[autograde.index(Execute)] = SandboxedExecute if sandbox else GradingExecute
    _insert_after(autograde, autograde[0], [NameTimeouts, QuietTensorFlowStderr])
    _insert_after(autograde, LimitOutput, [LimitOutputSize, NoCreditFromResults])
    c.Autograde.autograde_preprocessors = autograde
    c.NameTimeouts.cell_timeout_s = cell_timeout_s
    if demo_sha256 is None:
        solutions = (Path(__file__).resolve().parents[2] / "solutions").glob("*/*.ipynb")
        demo_sha256 = demo_cell_hashes(sorted(solutions))
    c.GradingExecute.demo_sha256 = list(demo_sha256)
    c.LimitOutput.max_lines = MAX_OUTPUT_LINES
    c.LimitOutput.max_traceback = 100
    # Feedback: scores, but no hidden test source and no traceback that could quote it.
    feedback = list(GenerateFeedback.class_traits()["preprocessors"].default())
    _insert_after(feedback, GetGrades, [ClearHiddenTests, HideTracebacks, HideTestOutputs,
                                        HideOutputsAfterTests])
    c.GenerateFeedback.preprocessors = feedback
