"""utils.timing: the structure of its results, and that warm-up and tracing are never timed.
No speed assertion: which mode wins depends on the machine."""
import signal
import time

import matplotlib
import pytest
import tensorflow as tf

from utils import timing

matplotlib.use("Agg")

SLOW_S = 0.3  # a sleep much longer than any timed call of the toy functions below


def small_ops(x):
    for _ in range(5):
        x = tf.sin(x) + 0.1
    return x


def test_compare_eager_graph_returns_timings_in_seconds_and_ratio():
    result = timing.compare_eager_graph(small_ops, tf.constant([1.0, 2.0]), repeats=4, number=2)
    assert result.name == "small_ops"
    assert result.number == 2
    for t, mode in ((result.eager, "eager"), (result.graph, "graph")):
        assert t.mode == mode
        assert len(t.times_s) == 4
        assert all(0 < s < 1 for s in t.times_s)
        assert min(t.times_s) <= t.median_s <= max(t.times_s)
    assert result.ratio == result.eager.median_s / result.graph.median_s
    assert result.retraces == 0


def test_tracing_and_first_eager_call_are_warm_up_not_timed():
    state = {"eager_calls": 0}

    def slow_once(x):
        if tf.inside_function():
            time.sleep(SLOW_S)  # runs on every trace, never when the graph executes
        else:
            state["eager_calls"] += 1
            if state["eager_calls"] == 1:
                time.sleep(SLOW_S)  # only the first eager call is slow
        return x * 2.0

    result = timing.compare_eager_graph(slow_once, tf.constant(1.0), repeats=3, number=2)
    assert result.eager.warmup_s >= SLOW_S and result.graph.warmup_s >= SLOW_S
    assert max(result.eager.times_s) < SLOW_S / 2
    assert max(result.graph.times_s) < SLOW_S / 2
    assert state["eager_calls"] == 1 + 3 * 2


def test_retraces_inside_the_timing_are_counted():
    graph_fn = tf.function(small_ops)
    result = timing.compare_eager_graph(small_ops, 1.0, graph_fn=graph_fn, repeats=2, number=1)
    assert result.retraces == 0  # same Python float every call: one trace, in the warm-up
    assert graph_fn.experimental_get_tracing_count() == 1


def test_fast_mode_shrinks_repeats(monkeypatch):
    monkeypatch.setenv("WORKBOOK_FAST", "1")
    fast = timing.compare_eager_graph(small_ops, tf.constant(1.0), number=1)
    monkeypatch.setenv("WORKBOOK_FAST", "0")
    full = timing.compare_eager_graph(small_ops, tf.constant(1.0), number=1)
    assert len(fast.eager.times_s) == timing.FAST_REPEATS < len(full.eager.times_s) == timing.REPEATS


def test_plot_timings_draws_one_bar_per_mode_and_function():
    a = timing.compare_eager_graph(small_ops, tf.constant(1.0), repeats=2, number=1)
    b = timing.compare_eager_graph(small_ops, tf.constant([1.0, 2.0]), repeats=2, number=1)
    ax = timing.plot_timings(a, b)
    assert len(ax.patches) == 4
    assert "eager/graph" in ax.get_xticklabels()[0].get_text()
    assert ax.get_ylabel() == "median time per call (ms)"


def test_time_limit_stops_a_python_loop_with_the_message_and_leaves_no_alarm():
    from utils.timing import time_limit

    before = signal.getsignal(signal.SIGALRM)
    start = time.perf_counter()
    with pytest.raises(TimeoutError, match="finite differences"):
        with time_limit(1, "two_layer_numpy: finite differences"):
            while True:
                pass
    assert 0.9 < time.perf_counter() - start < 30
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before
    with time_limit(5, "quick"):
        total = sum(range(1000))
    assert total == 499500 and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
