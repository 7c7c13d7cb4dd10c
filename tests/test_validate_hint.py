"""An unanswered prediction gets a message that says what to do under nbgrader's Validate, as an
unanswered exercise does (issue 29): the released 01 notebook, untouched, run by the real
`nbgrader validate` (a real kernel). Its first answer cell still raises NotImplementedError, so
neither the prediction nor the function is defined: each check cell's NameError ends with the
workbook's hint. In a grading kernel (NBGRADER_EXECUTION=autograde) the hint is not installed:
the grader words graded cells itself and the set-up leaves the interpreter as it found it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from utils.notebook import NAME_HINT, explain_missing_names

ROOT = Path(__file__).resolve().parents[1]
RELEASED = ROOT / "notebooks" / "01_gradient_tape" / "01_gradient_tape.ipynb"


def test_validate_of_an_untouched_notebook_says_to_run_the_answer_cell(tmp_path):
    notebook = tmp_path / RELEASED.name
    shutil.copy(RELEASED, notebook)
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "validate", str(notebook)],
                          capture_output=True, text=True, timeout=1200, cwd=tmp_path,
                          env={**os.environ, "WORKBOOK_FAST": "1"})
    text = proc.stdout + proc.stderr
    assert "NameError" in text, text[-3000:]
    # The first check cell needs square_grad, which the unanswered cell did not define either.
    hint = NAME_HINT.format(name="square_grad")
    for line in hint.splitlines():  # each whole: Validate cuts long lines
        assert line in text, (line, text[-3000:])


def test_no_hint_is_installed_in_a_grading_kernel(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert explain_missing_names() is False


SHELL_SCRIPT = r"""
from IPython.core.interactiveshell import InteractiveShell
from utils.notebook import explain_missing_names
shell = InteractiveShell.instance(colors="nocolor")
assert explain_missing_names()
for cell in ["print(square_grad)",
             "def f():\n    return undefined_name\nf()",
             "raise NotImplementedError()",
             "raise NotImplementedError('numpy() is only available when eager execution is enabled.')"]:
    shell.run_cell(cell)
    print("=====")
"""


def test_a_name_missing_at_the_top_of_a_cell_is_one_line_and_the_hint(tmp_path):
    """In a real IPython shell: a check run before its answer shows the error's line and the hint,
    no traceback; a name missing inside a function keeps its traceback (where it is); the stub's
    bare NotImplementedError says to write the answer; TensorFlow's own, with a message, does
    not get that hint."""
    env = {**os.environ, "NBGRADER_EXECUTION": "", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SHELL_SCRIPT], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env=env)
    top, inside, stub, tensorflow_own, _ = proc.stdout.split("=====\n")
    assert "name 'square_grad' is not defined" in top and "run the cell that defines it" in top
    assert "Traceback" not in top and "---->" not in top, top
    assert "undefined_name" in inside and "run the cell that defines it" in inside
    assert "Traceback" in inside and "return undefined_name" in inside, inside
    assert "This answer cell is not written yet" in stub and "Traceback" not in stub, stub
    assert "eager execution" in tensorflow_own
    assert "not written yet" not in tensorflow_own, tensorflow_own
