"""Time a function eagerly and as a graph (``tf.function``), fairly, and plot the result.

A fair comparison excludes what happens only once: the first eager call (allocations, kernel
lookup) and the trace of the graph version (running the Python body to build the graph). Both
are done in a warm-up call that is never timed. Each mode is then timed ``repeats`` times, each
timing covering ``number`` back-to-back calls, and the median per-call time is reported, which is
robust to the odd slow run on a busy machine. All times are in seconds.

    from utils.timing import compare_eager_graph, plot_timings
    result = compare_eager_graph(many_small_ops, x)
    print(f"graph is {result.ratio:.1f}x faster")  # the ratio measured here, not a claim
    plot_timings(result)
"""
from __future__ import annotations

import signal
import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from .notebook import fast_mode

# Defaults: timings per mode, and calls per timing. Fast mode (CI, grading) uses fewer repeats.
REPEATS = 7
FAST_REPEATS = 3
NUMBER = 10


@dataclass
class Timing:
    """The timings of one mode (``"eager"`` or ``"graph"``).

    Attributes:
        mode: ``"eager"`` or ``"graph"``.
        times_s: per-call time of each repeat, in seconds (``repeats`` values; warm-up excluded).
        warmup_s: time of the untimed warm-up call, in seconds (for the graph: includes tracing).
    """

    mode: str
    times_s: list[float]
    warmup_s: float

    @property
    def median_s(self) -> float:
        """Median per-call time in seconds."""
        return statistics.median(self.times_s)


@dataclass
class Comparison:
    """Result of :func:`compare_eager_graph`.

    Attributes:
        name: the function's name (for titles).
        eager, graph: the :class:`Timing` of each mode.
        number: calls per timed repeat.
        retraces: how many times the graph version traced during the timed repeats (should be 0:
            a retrace inside the timing means the inputs change its trace key).
    """

    name: str
    eager: Timing
    graph: Timing
    number: int
    retraces: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """Median eager time divided by median graph time (> 1: the graph is faster)."""
        return self.eager.median_s / self.graph.median_s


def _time_calls(fn: Callable, args: tuple, kwargs: dict, number: int, repeats: int) -> list[float]:
    """Per-call seconds of ``repeats`` timings of ``number`` calls each. The result of the last
    call is converted to NumPy when it is a tensor, so asynchronous work is finished."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            out = fn(*args, **kwargs)
        _block(out)
        times.append((time.perf_counter() - start) / number)
    return times


def _block(out) -> None:
    """Wait for a result (a tensor, or a nest of tensors) to be computed."""
    import tensorflow as tf

    for t in tf.nest.flatten(out):
        if hasattr(t, "numpy"):
            t.numpy()


def compare_eager_graph(fn: Callable, *args, repeats: int | None = None, number: int = NUMBER,
                        graph_fn: Callable | None = None, **kwargs) -> Comparison:
    """Time ``fn(*args, **kwargs)`` run eagerly and as a ``tf.function``.

    Args:
        fn: a plain Python function of tensors (not decorated); if it is a ``tf.function``, its
            ``python_function`` is used for the eager run.
        *args, **kwargs: its inputs (use tensors, not Python numbers, so the graph does not retrace).
        repeats: timed repeats per mode; default 7, or 3 in fast mode (``utils.fast_mode()``).
        number: calls per timed repeat (the reported time is per call).
        graph_fn: the graph version; default ``tf.function(fn)``.

    Returns:
        A :class:`Comparison`: per-call median times in seconds and ``ratio`` = eager / graph.
        The first call of each mode (for the graph: the trace) is a warm-up, timed separately
        in ``warmup_s`` and excluded from the medians.
    """
    import tensorflow as tf

    eager_fn = getattr(fn, "python_function", fn)
    graph_fn = graph_fn or tf.function(eager_fn)
    repeats = repeats or (FAST_REPEATS if fast_mode() else REPEATS)

    start = time.perf_counter()
    _block(eager_fn(*args, **kwargs))
    eager_warmup = time.perf_counter() - start
    start = time.perf_counter()
    _block(graph_fn(*args, **kwargs))
    graph_warmup = time.perf_counter() - start

    traces_before = _tracing_count(graph_fn)
    eager = Timing("eager", _time_calls(eager_fn, args, kwargs, number, repeats), eager_warmup)
    graph = Timing("graph", _time_calls(graph_fn, args, kwargs, number, repeats), graph_warmup)
    retraces = _tracing_count(graph_fn) - traces_before
    return Comparison(getattr(eager_fn, "__name__", "function"), eager, graph, number, retraces)


def _tracing_count(graph_fn) -> int:
    """How many times a tf.function has traced (0 for anything else)."""
    count = getattr(graph_fn, "experimental_get_tracing_count", None)
    return count() if count else 0


def plot_timings(*comparisons: Comparison, ax=None):
    """Bar chart of median per-call time (milliseconds), eager vs graph, for each comparison.

    Each bar carries the spread of its repeats (min to max) as an error bar; the title of each
    group gives the measured ratio. Returns the matplotlib ``Axes``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        _, ax = plt.subplots(figsize=(1.8 + 2.2 * len(comparisons), 3))
    x = np.arange(len(comparisons))
    width = 0.38
    for offset, mode, color in ((-width / 2, "eager", "tab:orange"), (width / 2, "graph", "tab:blue")):
        timings = [getattr(c, mode) for c in comparisons]
        med = np.array([t.median_s for t in timings]) * 1e3
        low = med - np.array([min(t.times_s) for t in timings]) * 1e3
        high = np.array([max(t.times_s) for t in timings]) * 1e3 - med
        ax.bar(x + offset, med, width, yerr=[low, high], capsize=3, label=mode, color=color)
    ax.set_xticks(x, [f"{c.name}\n(eager/graph = {c.ratio:.1f})" for c in comparisons])
    ax.set_ylabel("median time per call (ms)")
    ax.legend()
    ax.figure.tight_layout()
    return ax


#: The smallest ratio the verdicts call a difference: below it, two ways are "about as fast"
#: even when their repeats agree closely (a shared machine's noise is larger than it looks).
NOISE_FLOOR = 1.3


def spread(times_s: list[float]) -> float:
    """How much the repeats of one way varied: slowest / fastest (1.0 for one repeat)."""
    return max(times_s) / min(times_s)


def spread_verdict(first_s: list[float], second_s: list[float], first: str = "the first",
                   second: str = "the second", floor: float = NOISE_FLOOR) -> str:
    """A timing claim that holds whichever way a noisy measurement falls, as notebook 03 teaches.

    Compares the fastest repeat of each way (the fastest shows what the work costs; the slower
    ones also measure other jobs of the machine) against the spread of the repeats: a ratio
    inside ``max(floor, spread(first_s), spread(second_s))`` is no difference.

    Args:
        first_s, second_s: seconds of each repeat of each way (non-empty lists of positive
            floats).
        first, second: how the sentence names the two ways.
        floor: the smallest ratio ever called a difference.
    Returns:
        One sentence: ``"<first> ran 2.1x as fast as <second>"``, the same the other way round,
        or ``"<first> and <second> ran about as fast (<second> / <first> = 1.08, within the 1.9x
        spread of the repeats)"``.
    Raises:
        ValueError: an empty list, or a time that is not positive.
    """
    if not first_s or not second_s or min(first_s) <= 0 or min(second_s) <= 0:
        raise ValueError("spread_verdict needs positive times for both ways")
    ratio = min(second_s) / min(first_s)  # > 1: the first way is faster
    noise = max(floor, spread(first_s), spread(second_s))
    if ratio > noise:
        return f"{first} ran {ratio:.1f}x as fast as {second}"
    if ratio < 1 / noise:
        return f"{second} ran {1 / ratio:.1f}x as fast as {first}"
    return (f"{first} and {second} ran about as fast ({second} / {first} = {ratio:.2f}, within "
            f"the {noise:.1f}x spread of the repeats)")


@contextmanager
def time_limit(seconds: int, message: str):
    """Stop the block with ``TimeoutError(message)`` once it has run ``seconds`` of wall time.

    For a lesson cell that calls a student's function on a large problem, where a wrong design
    (finite differences over 200,000 weights, say) would otherwise hold the kernel for hours:
    the student reads why instead of waiting. Uses ``SIGALRM``, so it stops Python code between
    bytecodes (a single long NumPy or TensorFlow call finishes first). Where there is no
    ``SIGALRM`` (Windows) or the block is not on the main thread, the block runs without a limit.

    Args:
        seconds: whole seconds, at least 1.
        message: the ``TimeoutError``'s text: what ran too long and the likely reason.
    Raises:
        TimeoutError: the block was still running after ``seconds``.
    """
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise TimeoutError(message)

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(max(1, int(seconds)))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
