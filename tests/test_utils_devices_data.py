"""utils.devices (device info, CPU vs GPU matmul timing), utils.data (digits, tf.data) and
utils.timing's spread-aware verdict."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import tensorflow as tf

from utils import data, devices
from utils.timing import spread_verdict

needs_no_gpu = pytest.mark.skipif(devices.has_gpu(), reason="tests the machine without a GPU")
needs_gpu = pytest.mark.skipif(not devices.has_gpu(), reason="needs a GPU")


# ------------------------------------------------------------------ devices
def test_describe_devices_names_the_cpu_and_the_gpus():
    text = devices.describe_devices()
    assert "CPU: /CPU:0" in text
    assert ("GPU: /GPU:0" in text) == devices.has_gpu()


def test_time_matmul_on_cpu_returns_positive_seconds():
    seconds = devices.time_matmul("/CPU:0", 64, repeats=2)
    assert isinstance(seconds, float) and seconds > 0


def test_gflops_counts_two_n_cubed_operations():
    assert devices.gflops(1000, 2.0) == pytest.approx(1.0)


@needs_no_gpu
def test_matmul_timing_skips_gpu_with_a_message(capsys):
    timings = devices.time_matmul_on_devices(sizes=[32, 64], repeats=1)
    assert set(timings) == {"sizes", "/CPU:0"}
    assert len(timings["/CPU:0"]) == 2
    assert "No GPU found" in capsys.readouterr().out


@needs_no_gpu
def test_gpu_timing_without_gpu_raises_runtime_error():
    with pytest.raises(RuntimeError, match="No GPU found"):
        devices.time_matmul("/GPU:0", 32)


@needs_no_gpu
def test_host_to_device_copy_without_gpu_returns_none(capsys):
    assert devices.time_host_to_device_copy(64) is None
    assert "No GPU found" in capsys.readouterr().out


@needs_gpu
def test_matmul_timing_includes_gpu_when_present():
    timings = devices.time_matmul_on_devices(sizes=[64], repeats=1, verbose=False)
    assert len(timings["/GPU:0"]) == 1
    copy = devices.time_host_to_device_copy(256, repeats=1)
    assert copy["copy_s"] > 0 and copy["matmul_s"] > 0


def test_plot_matmul_timings_draws_one_line_per_device():
    timings = {"sizes": [32, 64], "/CPU:0": [1e-4, 5e-4], "/GPU:0": [1e-4, 1e-4]}
    ax = devices.plot_matmul_timings(timings)
    assert [line.get_label() for line in ax.get_lines()] == ["/CPU:0", "/GPU:0"]


# ------------------------------------------------------------------ data
@pytest.fixture(scope="module")
def splits():
    return data.load_digits_splits(seed=0)


def test_digits_splits_have_fixed_sizes_dtypes_and_ranges(splits):
    assert splits.sizes() == {"train": 1257, "val": 270, "test": 270}
    for x, y in ((splits.x_train, splits.y_train), (splits.x_val, splits.y_val),
                 (splits.x_test, splits.y_test)):
        assert x.dtype == np.float32 and x.shape[1:] == (64,)
        assert y.dtype == np.int32 and set(np.unique(y)) == set(range(10))
        assert 0.0 <= x.min() and x.max() <= 1.0


def test_digits_split_is_reproducible_and_depends_on_the_seed(splits):
    again = data.load_digits_splits(seed=0)
    other = data.load_digits_splits(seed=1)
    assert np.array_equal(again.x_train, splits.x_train)
    assert np.array_equal(again.y_test, splits.y_test)
    assert not np.array_equal(other.y_train, splits.y_train)


def test_digits_split_is_stratified(splits):
    counts = np.bincount(splits.y_test, minlength=10)
    assert counts.min() >= 25 and counts.max() <= 29


def test_digits_images_unflattened():
    assert data.load_digits_splits(flatten=False).x_train.shape[1:] == (8, 8, 1)


def test_make_dataset_batches_in_order_without_shuffle():
    x = np.arange(10, dtype=np.float64)[:, None] * np.ones((1, 3))
    y = np.arange(10)
    ds = data.make_dataset(x, y, batch_size=4)
    assert ds.element_spec[0] == tf.TensorSpec((None, 3), tf.float32)
    assert ds.element_spec[1].dtype == tf.int32
    batches = [yb.numpy().tolist() for _, yb in ds]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_make_dataset_reshuffles_every_epoch_and_keeps_pairs():
    x = np.arange(40, dtype=np.float32)[:, None]
    y = np.arange(40)
    ds = data.make_dataset(x, y, batch_size=8, shuffle=True, seed=3)
    epochs = [np.concatenate([yb.numpy() for _, yb in ds]) for _ in range(2)]
    assert sorted(epochs[0].tolist()) == list(range(40))
    assert not np.array_equal(epochs[0], np.arange(40))
    assert not np.array_equal(epochs[0], epochs[1])
    for xb, yb in ds:
        assert np.array_equal(xb.numpy()[:, 0].astype(int), yb.numpy())


def test_plots_return_figures(splits):
    fig = data.plot_digits(splits.x_train, splits.y_train, n=4, predictions=splits.y_train)
    assert len(fig.axes) == 4
    fig = data.plot_history({"loss": [1.0, 0.5], "val_loss": [1.1, 0.7], "accuracy": [0.5, 0.8]})
    assert len(fig.axes) == 2


def test_setup_ends_with_one_line_naming_tensorflow_and_its_device():
    import tensorflow as tf

    from utils.notebook import ready_line

    line = ready_line()
    assert "\n" not in line and tf.__version__ in line
    assert "the CPU (" in line or "the GPU /GPU:0" in line


# ------------------------------------------------------ utils: the spread-aware verdict
def test_spread_verdict_says_about_as_fast_within_the_spread():
    assert "about as fast" in spread_verdict([1.0, 1.8], [1.2, 1.3], "a", "b")
    assert spread_verdict([1.0, 1.1], [3.0, 3.1], "a", "b") == "a ran 3.0x as fast as b"
    assert spread_verdict([3.0, 3.1], [1.0, 1.1], "a", "b") == "b ran 3.0x as fast as a"
    with pytest.raises(ValueError):
        spread_verdict([], [1.0])


def test_quiet_tensorflow_logs_sets_the_level_unless_one_is_chosen(monkeypatch):
    from utils.notebook import CPP_MIN_LOG_LEVEL, quiet_tensorflow_logs
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    quiet_tensorflow_logs()
    import os
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == CPP_MIN_LOG_LEVEL
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    quiet_tensorflow_logs()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "1"
