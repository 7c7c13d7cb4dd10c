"""What a student sees when the set-up cell runs: no TensorFlow C++ log line on stderr, then or later.

Each solution notebook's set-up cell (its first code cell) runs in a real Jupyter kernel (nbclient)
whose environment does not set ``TF_CPP_MIN_LOG_LEVEL`` (a student's does not; conftest.py sets
it for nbval, which therefore never sees these lines). After it, a probe cell runs ops that make
TensorFlow 2.21 log at INFO level from C++ (``I0000 ... MLIR V1 optimization pass is not
enabled`` when a TF1 Session runs, ``TFRecordDataset `buffer_size` is unspecified``): the level
must have been set before TensorFlow loaded, so neither line may show. A control kernel that
imports TensorFlow before ``utils`` shows that the probe does log, so the test is not vacuous.
The set-up cell's stdout is the one stored in the notebook (one line, "TensorFlow ... is ready").
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(ROOT.glob("solutions/*/*.ipynb"))

#: A C++ log line of TensorFlow (absl / glog format: I, W, E or F, then 4 digits, a time...).
CPP_LOG = re.compile(r"^[IWEF]\d{4} [\d:. ]+\s*\d+ \S+\.(cc|h):\d+\]", re.M)

PROBE = """\
import os, tempfile
import tensorflow as tf
with tf.Graph().as_default():
    p = tf.compat.v1.placeholder(tf.float32, (2,))
    out = tf.reduce_sum(p * 2.0)
    with tf.compat.v1.Session() as sess:
        sess.run(out, feed_dict={p: [1.0, 2.0]})
path = os.path.join(tempfile.mkdtemp(), "probe.tfrecord")
with tf.io.TFRecordWriter(path) as writer:
    writer.write(b"x")
print(len(list(tf.data.TFRecordDataset(path))))
"""


def _setup_source(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


def _stored_stdout(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    setup = next(c for c in cells if c["cell_type"] == "code")
    return "".join("".join(o.get("text", "")) for o in setup.get("outputs", [])
                   if o.get("name") == "stdout")


def _run(cells):
    """Run ``cells`` (sources) in one fresh kernel started in the repository root, without
    TF_CPP_MIN_LOG_LEVEL in its environment; returns ``[(stdout, stderr)]`` per cell. A last
    cell waits a moment: a C++ line written to file descriptor 2 reaches the cell's output
    through ipykernel's reader thread, after the line's cell may have finished."""
    from nbclient import NotebookClient

    # ipykernel forwards what is written to file descriptor 2 into the cell's output, as a
    # student sees it, except when it finds PYTEST_CURRENT_TEST in its environment.
    env = {key: value for key, value in os.environ.items()
           if key not in ("TF_CPP_MIN_LOG_LEVEL", "PYTEST_CURRENT_TEST")}
    env["WORKBOOK_FAST"] = "1"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)
                for source in [*cells, "import time\ntime.sleep(2)"]]
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute(env=env)
    streams = []
    for cell in nb.cells:
        text = {"stdout": "", "stderr": ""}
        for output in cell.outputs:
            if output.get("output_type") == "stream":
                text[output["name"]] += output["text"]
        streams.append((text["stdout"], text["stderr"]))
    *streams, (_, late) = streams
    streams[-1] = (streams[-1][0], streams[-1][1] + late)
    return streams


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_the_setup_cell_leaves_no_tensorflow_log_line_on_stderr(path):
    (setup_out, setup_err), (probe_out, probe_err) = _run([_setup_source(path), PROBE])
    assert not CPP_LOG.search(setup_err), setup_err
    assert not CPP_LOG.search(probe_err), probe_err
    assert probe_out.strip() == "1"
    assert re.fullmatch(r"TensorFlow \S+ is ready; it will run on .*\.\n", setup_out)
    stored = _stored_stdout(path)
    assert stored.startswith("TensorFlow ") and stored.count("\n") == setup_out.count("\n")


def test_the_probe_logs_when_tensorflow_comes_before_utils():
    """The control: TensorFlow imported first, its C++ level unset, logs the probe's lines."""
    (_, err), = _run(["import tensorflow as tf\nimport utils\n" + PROBE])
    assert CPP_LOG.search(err), err
