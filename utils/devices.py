"""Devices for teaching: what TensorFlow sees, and a CPU vs GPU matrix multiplication timing.

Nothing here assumes a GPU. Every GPU part checks :func:`has_gpu` first; without one it skips and
says so (the notebooks print that message instead of failing).

Example::

    from utils.devices import describe_devices, time_matmul_on_devices, plot_matmul_timings
    print(describe_devices())
    timings = time_matmul_on_devices(sizes=[256, 512, 1024], repeats=3)
    plot_matmul_timings(timings)
"""
from __future__ import annotations

import os
import statistics
import time

NO_GPU_MESSAGE = ("No GPU found: TensorFlow sees only the CPU, so the GPU timing is skipped. "
                  "Run this notebook on a machine with an NVIDIA GPU (or Colab) to compare.")


def has_gpu() -> bool:
    """True when TensorFlow sees at least one physical GPU."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def describe_devices() -> str:
    """A few lines naming the devices TensorFlow can place operations on.

    Returns:
        Text such as ``"CPU: /CPU:0 (2 cores visible to Python)\\nGPU: none"``; with a GPU, its
        logical name (``/GPU:0``) and, when TensorFlow reports it, its model name.
    """
    import tensorflow as tf

    lines = []
    cores = os.cpu_count() or 1
    for device in tf.config.list_logical_devices("CPU"):
        lines.append(f"CPU: /{device.device_type}:{device.name.rsplit(':', 1)[-1]} "
                     f"({cores} cores visible to Python)")
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        lines.append("GPU: none")
    for index, gpu in enumerate(gpus):
        details = {}
        try:
            details = tf.config.experimental.get_device_details(gpu)
        except Exception:  # pragma: no cover - depends on the driver
            pass
        name = details.get("device_name", "unknown model")
        lines.append(f"GPU: /GPU:{index} ({name})")
    return "\n".join(lines)


def time_matmul(device: str, n: int, repeats: int = 3, dtype: str = "float32") -> float:
    """Median wall-clock seconds of one ``n x n`` by ``n x n`` matrix product on ``device``.

    The inputs are created on the device first, so the time excludes the host-to-device copy. One
    warm-up product runs before timing (it pays for kernel selection, e.g. cuBLAS set-up). Each
    timed product is followed by reading back a scalar (the sum of the result), which waits for
    the device to finish: GPU kernels launch asynchronously.

    Args:
        device: a TensorFlow device name such as ``"/CPU:0"`` or ``"/GPU:0"``.
        n: matrix size; the product costs about ``2 * n**3`` floating-point operations.
        repeats: timed products; the median is returned.
        dtype: ``"float32"`` (default) or another float dtype name.
    Returns:
        Seconds (float).
    Raises:
        RuntimeError: when ``device`` names a GPU and there is none.
    """
    import tensorflow as tf

    if "GPU" in device.upper() and not has_gpu():
        raise RuntimeError(NO_GPU_MESSAGE)
    with tf.device(device):
        a = tf.random.normal((n, n), dtype=dtype, seed=1)
        b = tf.random.normal((n, n), dtype=dtype, seed=2)
        float(tf.reduce_sum(tf.matmul(a, b)))  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            float(tf.reduce_sum(tf.matmul(a, b)))
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_matmul_on_devices(sizes=(256, 512, 1024), repeats: int = 3, verbose: bool = True) -> dict:
    """Time :func:`time_matmul` for each size on ``/CPU:0`` and, when there is one, on ``/GPU:0``.

    Args:
        sizes: matrix sizes ``n`` to time.
        repeats: timed products per size and device (median taken).
        verbose: print :data:`NO_GPU_MESSAGE` to stdout when the GPU part is skipped.
    Returns:
        ``{"sizes": [n, ...], "/CPU:0": [seconds, ...], "/GPU:0": [seconds, ...]}``; the
        ``"/GPU:0"`` entry is absent without a GPU.
    """
    sizes = [int(n) for n in sizes]
    result = {"sizes": sizes, "/CPU:0": [time_matmul("/CPU:0", n, repeats) for n in sizes]}
    if has_gpu():
        result["/GPU:0"] = [time_matmul("/GPU:0", n, repeats) for n in sizes]
    elif verbose:
        print(NO_GPU_MESSAGE)
    return result


def gflops(n: int, seconds: float) -> float:
    """Throughput of an ``n x n`` matrix product that took ``seconds``: ``2 n^3 / seconds / 1e9``."""
    return 2.0 * n ** 3 / seconds / 1e9


def plot_matmul_timings(timings: dict, ax=None):
    """Plot throughput (GFLOP/s) against matrix size for every device in ``timings``.

    Args:
        timings: the dictionary returned by :func:`time_matmul_on_devices`.
        ax: a matplotlib Axes to draw on; a new small figure by default.
    Returns:
        The Axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.2))
    sizes = timings["sizes"]
    for device, seconds in timings.items():
        if device == "sizes":
            continue
        ax.plot(sizes, [gflops(n, s) for n, s in zip(sizes, seconds)], marker="o", label=device)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("matrix size n (n x n @ n x n)")
    ax.set_ylabel("GFLOP/s (higher is better)")
    ax.set_title("Matrix multiplication throughput")
    ax.legend()
    ax.grid(alpha=0.3)
    return ax


def time_host_to_device_copy(n: int = 4096, repeats: int = 3) -> dict | None:
    """Seconds to copy an ``n x n`` float32 matrix from host memory to ``/GPU:0``, and to multiply
    it there, for comparing transfer cost with compute cost.

    Returns:
        ``{"megabytes": ..., "copy_s": ..., "matmul_s": ...}``, or None (after printing
        :data:`NO_GPU_MESSAGE`) when there is no GPU.
    """
    import numpy as np
    import tensorflow as tf

    if not has_gpu():
        print(NO_GPU_MESSAGE)
        return None
    host = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    copies = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        with tf.device("/GPU:0"):
            on_gpu = tf.identity(tf.constant(host))
            float(on_gpu[0, 0])
        copies.append(time.perf_counter() - start)
    return {"megabytes": host.nbytes / 1e6, "copy_s": statistics.median(copies[1:]),
            "matmul_s": time_matmul("/GPU:0", n, repeats)}
