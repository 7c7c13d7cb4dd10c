"""A SavedModel written here is loaded and run by a separate Python process that has never seen
the Python class that built it (notebook 05, static graphs)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

# The interpreter of the virtual environment running the tests (it has TensorFlow).
VENV_PYTHON = sys.executable


class Affine(tf.Module):
    """relu(x @ w + b) with fixed weights, traced for any batch size."""

    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0)
        self.b = tf.Variable([-1.0, 0.0, 1.0])

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def __call__(self, x):
        return tf.nn.relu(x @ self.w + self.b)


PROGRAM = """
import numpy as np, tensorflow as tf
loaded = tf.saved_model.load({path!r})
for batch in (2, 5):
    x = np.linspace(-1.0, 1.0, 4 * batch, dtype=np.float32).reshape(batch, 4)
    print(float(tf.reduce_sum(loaded(tf.constant(x)))))
print(type(loaded).__name__)
"""


def expected_sums(module):
    return [float(tf.reduce_sum(module(np.linspace(-1.0, 1.0, 4 * b, dtype=np.float32)
                                       .reshape(b, 4)))) for b in (2, 5)]


def test_saved_model_runs_in_a_fresh_process_without_the_source(tmp_path: Path):
    module = Affine()
    export_dir = tmp_path / "affine"
    tf.saved_model.save(module, str(export_dir))
    assert (export_dir / "saved_model.pb").is_file()

    result = subprocess.run(
        [VENV_PYTHON, "-c", PROGRAM.format(path=str(export_dir))],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-2000:]
    *sums, class_name = result.stdout.split()
    np.testing.assert_allclose([float(s) for s in sums], expected_sums(module), rtol=1e-6)
    # The other process rebuilt a generic object from the graph, not our class.
    assert class_name == "_UserObject"
