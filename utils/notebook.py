"""Setup shared by every notebook: seeds, quiet TensorFlow, fast mode."""
from __future__ import annotations

import os
import sys
import traceback


def fast_mode() -> bool:
    """True when ``WORKBOOK_FAST`` is set to a non-empty value other than ``0``.

    CI and graded runs set it: heavy cells use fewer repeats, steps and epochs. The values a
    notebook checks do not depend on it; only timings and curve lengths do.
    """
    return os.environ.get("WORKBOOK_FAST", "0") not in ("", "0")


#: TensorFlow's C++ log level for the notebooks: 3 keeps FATAL only (INFO "I0000", WARNING and
#: ERROR "E0000" lines are dropped). TensorFlow reads it once, when its C++ library loads.
CPP_MIN_LOG_LEVEL = "3"


def quiet_tensorflow_logs() -> None:
    """Silence TensorFlow's log before TensorFlow is imported.

    Sets ``TF_CPP_MIN_LOG_LEVEL`` (unless the environment already chose a level): TensorFlow's
    C++ library reads it once, when it loads, so set after ``import tensorflow`` it silences
    nothing and lines such as ``I0000 ... MLIR V1 optimization pass is not enabled`` reach a
    notebook's stderr. Also sets Python's absl logger (which Keras and TensorFlow's Python code
    log through) to ERROR, when absl is installed. Does not import TensorFlow; safe to call more
    than once.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", CPP_MIN_LOG_LEVEL)
    try:
        from absl import logging as absl_logging
    except ImportError:  # absl comes with TensorFlow; without it there is nothing to quiet
        return
    absl_logging.set_verbosity(absl_logging.ERROR)
    absl_logging.set_stderrthreshold("error")


def import_tensorflow_quietly() -> None:
    """Import TensorFlow (and start its devices) with file descriptor 2 sent to /dev/null.

    First :func:`quiet_tensorflow_logs` (the C++ log level must be set before TensorFlow loads).
    TensorFlow 2.21 also writes part of its C++ start-up log (absl's "All log messages before
    absl::InitializeLog()", oneDNN and CPU feature notices, CUDA probing errors) straight to the
    process's stderr, where no environment variable silences it; in a notebook it shows as a red
    block that alarms students. Python exceptions still raise as usual.
    """
    quiet_tensorflow_logs()
    if os.environ.get("WORKBOOK_WARM_TEMPLATE"):
        # The grader's warm-kernel template imports TensorFlow here but must
        # not start its runtime: each kernel forked from it starts its own, as below.
        import tensorflow  # noqa: F401
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        import tensorflow as tf

        split_cpu(logical_cpus())
        tf.constant(0.0) + 1.0  # device initialisation logs too, on first use
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


#: Environment variable naming how many logical devices the CPU is split into (08's
#: distribution section needs two replicas on a CPU). The split must come before TensorFlow's
#: first operation, which importing this package runs: 08's set-up cell sets it before that
#: import, and grading kernels get it from their environment (grading.defaults.KERNEL_ENV),
#: which a warm kernel forked from its template reads before it starts TensorFlow's runtime.
LOGICAL_CPUS_ENV = "WORKBOOK_LOGICAL_CPUS"


def logical_cpus() -> int:
    """The number of logical CPU devices :data:`LOGICAL_CPUS_ENV` asks for: 1 when it is unset
    or not a whole number from 1 to 8."""
    text = os.environ.get(LOGICAL_CPUS_ENV, "1")
    return int(text) if text.isdigit() and 1 <= int(text) <= 8 else 1


def split_cpu(count: int) -> bool:
    """Split the first physical CPU into ``count`` logical devices (``/CPU:0`` ...), before
    TensorFlow's runtime starts; afterwards TensorFlow refuses (``RuntimeError: Virtual devices
    cannot be modified after being initialized``) and nothing changes. Returns whether the CPU
    is split as asked."""
    import tensorflow as tf

    if count <= 1:
        return False
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
    except RuntimeError:  # the runtime has started already
        return len(tf.config.list_logical_devices("CPU")) == count
    return True


def setup_notebook(seed: int = 0, deterministic: bool = False) -> None:
    """Make a notebook deterministic and quiet, then say in one line what it runs on.

    Seeds Python's ``random``, NumPy and TensorFlow with ``seed`` (``tf.keras.utils.set_random_seed``),
    and sets TensorFlow's Python logger to ERROR so that warnings do not land on stderr (which
    nbgrader would score as a failure in a test cell). Turns TensorFloat-32 off: on Ampere and
    newer NVIDIA GPUs (A100, H100, H200) TensorFlow otherwise rounds float32 matmul and
    convolution inputs to 10 bits of mantissa, about 1e-3 relative error, which a check comparing
    with a float64 reference would call wrong (no effect on a CPU). With ``deterministic``, also
    ``tf.config.experimental.enable_op_determinism()``: the same seed gives the same training run
    on a GPU too (some GPU ops are slower then, and an op without a deterministic kernel raises).
    Prints :func:`ready_line`, so the first cell, which waits for TensorFlow's import, ends with a
    sign of life.
    """
    quiet_tensorflow_logs()  # in effect only if TensorFlow is not imported yet: utils does it
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    tf.keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_tensor_float_32_execution(False)
    if deterministic:
        tf.config.experimental.enable_op_determinism()
    explain_missing_names()
    print(ready_line())


#: What a NameError adds in a student's kernel: the usual cause in this workbook. In lines of
#: under 76 characters: nbgrader's Validate cuts longer ones.
NAME_HINT = ("{name!r} is not defined yet: run the cell that defines it first.\n"
             "An answer cell that still holds `raise NotImplementedError()` stops\n"
             "there and defines nothing after it: write your answer, or your\n"
             "prediction, in it, run it, then run this cell again.")


#: What a bare NotImplementedError (the stub of an unanswered cell) adds. TensorFlow raises
#: NotImplementedError with a message of its own (``.numpy()`` in a graph), which gets none.
STUB_HINT = ("This answer cell is not written yet: replace `raise NotImplementedError()`\n"
             "with your answer (or prediction), then run it again.")


def explain_missing_names() -> bool:
    """In a student's IPython kernel, end the traceback of every NameError with
    :data:`NAME_HINT` (an unanswered prediction or answer cell defines nothing, so its check,
    under Validate too, fails with a NameError that otherwise says only "not defined"), and of
    a NotImplementedError without a message (the stub an answer cell starts with) with
    :data:`STUB_HINT`. Raised at the top level of a cell, the error is shown without its
    traceback (the one line and the hint); raised inside a function, with it.

    Not in a grading kernel (``NBGRADER_EXECUTION=autograde``): there the grader words every
    graded cell's result itself and leaves the interpreter as the set-up found it.

    Returns:
        True when the hint was installed (an IPython shell is running), else False.
    """
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False

    def with_hint(shell, etype, value, tb, tb_offset=None):
        # IPython leaves the showing to the handler: the error, with the hint as its note.
        # A name missing at the top of the cell (a check run before its answer) needs no
        # traceback; one missing inside a function keeps it, to show where.
        hint = None
        if etype is NameError and getattr(value, "name", None):
            hint = NAME_HINT.format(name=value.name)
        elif etype is NotImplementedError and not str(value):
            hint = STUB_HINT
        if hint and hint not in getattr(value, "__notes__", ()):
            value.add_note(hint)
        frames = list(traceback.walk_tb(tb))
        at_top = bool(frames) and frames[-1][0].f_code.co_name == "<module>"
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset,
                            exception_only=bool(hint) and at_top)

    shell.set_custom_exc((NameError, NotImplementedError), with_hint)
    return True


def ready_line() -> str:
    """One line: TensorFlow's version and the device it places operations on by default, e.g.
    ``TensorFlow 2.21.0 is ready; it will run on the CPU (2 cores).`` or
    ``TensorFlow 2.21.0 is ready; it will run on the GPU /GPU:0 (NVIDIA H200).``"""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        try:
            name = tf.config.experimental.get_device_details(gpus[0]).get("device_name")
        except Exception:  # depends on the driver
            name = None
        device = "the GPU /GPU:0" + (f" ({name})" if name else "")
    else:
        cores = os.cpu_count() or 1
        device = f"the CPU ({cores} core{'s' if cores != 1 else ''})"
    return f"TensorFlow {tf.__version__} is ready; it will run on {device}."
