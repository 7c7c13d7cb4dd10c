"""The course's nbgrader settings, in one place: ``nbgrader_config.py`` and the ``course`` command
both call :func:`configure`, so plain ``nbgrader`` commands and ours grade the same way.
"""
from __future__ import annotations


from autograder.grading.course import REPO_ROOT, demo_cell_hashes
from autograder.grading.defaults import (
    CELL_TIMEOUT_S,
    COURSE_ID,
    KERNEL_NAME,
    KERNEL_STARTUP_TIMEOUT_S,
    MAX_OUTPUT_LINES,
    RELEASE_DIR,
    SOURCE_DIR,
)
from autograder.grading.kernels.bwrap import sandbox_default
from autograder.grading.preprocessors.autograde import (
    LimitOutputSize,
    NameTimeouts,
    NoCreditFromResults,
    QuietTensorFlowStderr,
    SanitizeHTML,
)
from autograder.grading.preprocessors.execute import GradingExecute, SandboxedExecute
from autograder.grading.preprocessors.readable import ReadableNotebookExporter
from autograder.grading.preprocessors.feedback import (HideOutputsAfterTests, HideTestOutputs,
                                                       HideTracebacks, ScoreSummary)


LATE_PENALTIES = ("none", "zero")  # nbgrader's LateSubmissionPlugin.penalty_method


def configure_late_penalty(c, late_penalty: str | None = None) -> str:
    """Choose nbgrader's late-penalty plugin (``AssignLatePenalties.plugin_class``) in ``c``.

    ``late_penalty`` is ``"none"`` (nbgrader's default: no penalty; also for None), ``"zero"``
    (nbgrader's own :class:`~nbgrader.plugins.LateSubmissionPlugin` with ``penalty_method
    "zero"``: a late notebook scores 0), or the dotted import name of a plugin class, a
    :class:`~nbgrader.plugins.BasePlugin` with a ``late_submission_penalty(student_id, score,
    total_seconds_late)`` method returning points (nbgrader's documented ``SubMarks``, say).
    nbgrader applies it when it records a submission later than its assignment's due date, and
    keeps each penalty between 0 and the notebook's score. Returns the name as chosen.

    Raises:
        ValueError: the name is neither a method nor an importable plugin class (the message says
            which and why).
    """
    from nbgrader.plugins import BasePlugin, LateSubmissionPlugin
    from traitlets.utils.importstring import import_item

    name = late_penalty or "none"
    if name in LATE_PENALTIES:
        c.AssignLatePenalties.plugin_class = LateSubmissionPlugin
        c.LateSubmissionPlugin.penalty_method = name
        return name
    try:
        plugin = import_item(name) if "." in name else None
    except Exception as error:  # ImportError, AttributeError, or the module's own error
        raise ValueError(f"late penalty {name!r} could not be imported: "
                         f"{type(error).__name__}: {error}") from None
    if not (isinstance(plugin, type) and issubclass(plugin, BasePlugin)
            and callable(getattr(plugin, "late_submission_penalty", None))):
        raise ValueError(f"late penalty {name!r} is not {' or '.join(map(repr, LATE_PENALTIES))} "
                         "nor a plugin class (module.Class, a nbgrader.plugins.BasePlugin with a "
                         "late_submission_penalty method)")
    c.AssignLatePenalties.plugin_class = plugin
    return name


def _insert_after(steps: list, anchor, new: list) -> None:
    """Insert the preprocessors ``new`` into ``steps`` right after ``anchor`` (in place)."""
    at = steps.index(anchor) + 1
    steps[at:at] = new


def configure(c, cell_timeout_s: int = CELL_TIMEOUT_S, sandbox: bool | None = None,
              demo_sha256: list[str] | None = None) -> None:
    """Fill a traitlets ``Config`` ``c`` with the course's nbgrader settings. Graded kernels run
    in grading mode (:data:`KERNEL_ENV`, given by their kernel manager); nothing else changes.

    ``cell_timeout_s`` is the per-cell time limit of graded runs, in seconds. ``sandbox`` runs
    every graded kernel in the bubblewrap sandbox (:mod:`.kernels.bwrap`); None: where it is available
    (Linux with ``bwrap``). ``demo_sha256`` lists the demonstration cells grading skips
    (:func:`demo_cell_hashes`; [] runs every cell); None: those of this course's ``solutions/``.

    Directories are relative to the course root (the repository): ``solutions`` is nbgrader's
    source directory and ``notebooks`` its release directory.
    """
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.preprocessors import ClearHiddenTests, Execute, GetGrades, LimitOutput


    # Configuration only: no environment variable of this process is changed here (a Jupyter
    # server loads this too, through nbgrader's server extension, and its kernels are students').
    c.CourseDirectory.source_directory = SOURCE_DIR
    c.CourseDirectory.release_directory = RELEASE_DIR
    c.CourseDirectory.course_id = COURSE_ID

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
    _insert_after(autograde, LimitOutput, [LimitOutputSize, NoCreditFromResults, SanitizeHTML])
    c.Autograde.autograde_preprocessors = autograde
    c.Autograde.exporter_class = ReadableNotebookExporter  # G05: the course's message, no traceback
    c.NameTimeouts.cell_timeout_s = cell_timeout_s
    if demo_sha256 is None:
        solutions = (REPO_ROOT / SOURCE_DIR).glob("*/*.ipynb")
        demo_sha256 = demo_cell_hashes(sorted(solutions))
    c.GradingExecute.demo_sha256 = list(demo_sha256)
    c.LimitOutput.max_lines = MAX_OUTPUT_LINES
    c.LimitOutput.max_traceback = 100
    # Feedback: scores, but no hidden test source and no traceback that could quote it.
    feedback = list(GenerateFeedback.class_traits()["preprocessors"].default())
    _insert_after(feedback, GetGrades, [ScoreSummary, ClearHiddenTests, HideTracebacks,
                                        HideTestOutputs, HideOutputsAfterTests])
    c.GenerateFeedback.preprocessors = feedback
