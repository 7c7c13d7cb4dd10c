"""Small changes to a full, correct submission that real students' habits and front ends make
(issue: failure isolation). Each function takes a notebook (nbformat v4) and returns a changed
copy; :func:`write_class` lays a class of them out as nbgrader's submitted folder."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat


def _index(nb, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells)
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def first_answer_id(nb) -> str:
    return next(c.metadata["nbgrader"]["grade_id"] for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("solution"))


def duplicated_answer_cell(nb):
    """The first answer cell copy-pasted with its metadata (two cells share a grade_id); the copy
    comes first and holds only the release's placeholder, as after paste-then-undo-the-edit."""
    nb = copy.deepcopy(nb)
    i = _index(nb, first_answer_id(nb))
    paste = copy.deepcopy(nb.cells[i])
    paste.source = "# scratch copy\nraise NotImplementedError()"
    paste.id = "pasted-" + nb.cells[i].get("id", "x")
    nb.cells.insert(i, paste)
    return nb


def deleted_cell(nb, grade_id: str):
    """The cell ``grade_id`` deleted."""
    nb = copy.deepcopy(nb)
    del nb.cells[_index(nb, grade_id)]
    return nb


def shell_output(nb):
    """Cells whose shell commands and subprocesses print to the terminal and to the notebook."""
    nb = copy.deepcopy(nb)
    cells = [
        '!echo done\n!echo \'{"success": true, "error": "", "log": ""}\'',
        'import os, subprocess, sys\n'
        'os.system("echo from os.system; echo to stderr >&2")\n'
        'subprocess.run(["echo", \'{"not": "a pipeline message"}\'])\n'
        'os.write(1, b"raw fd 1\\n"); os.write(2, b"raw fd 2\\n")',
    ]
    at = _index(nb, first_answer_id(nb)) + 1
    for source in reversed(cells):
        nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


def colab_widget_state(nb):
    """Widget state as Google Colab saves it: models directly under the mime type, no ``state``."""
    nb = copy.deepcopy(nb)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "3f0c2a9e6b5d4c1e8f7a6b5c4d3e2f1a": {
            "model_module": "@jupyter-widgets/controls", "model_name": "HBoxModel",
            "model_module_version": "1.5.0", "state": {"children": []}}}}
    return nb


def hidden_test_markers(nb):
    """An answer cell whose comments hold nbgrader's hidden-test markers, twice."""
    nb = copy.deepcopy(nb)
    cell = nb.cells[_index(nb, first_answer_id(nb))]
    cell.source += "\n# ### BEGIN HIDDEN TESTS\n# ### BEGIN HIDDEN TESTS\n# my notes"
    return nb


def slow_setup(nb):
    """A cell before the set-up cell that makes its imports hang, so the set-up cell
    runs past its time limit (what a loaded machine does to a slow import)."""
    nb = copy.deepcopy(nb)
    # Through builtins.__import__, which every import statement calls, even of a module already
    # imported (a warm grading kernel has imported TensorFlow and utils before the first cell).
    nb.cells.insert(0, nbformat.v4.new_code_cell(
        "import builtins, time\n\n"
        "_import = builtins.__import__\n\n"
        "def slow_import(name, *args, **kwargs):\n"
        "    if name.split('.')[0] in ('tensorflow', 'utils'):\n"
        "        time.sleep(10**6)\n"
        "    return _import(name, *args, **kwargs)\n\n"
        "builtins.__import__ = slow_import"))
    return nb


def old_format(nb):
    """The notebook as an nbformat 4.0 front end saves it: no cell ids."""
    nb = copy.deepcopy(nb)
    nb.nbformat_minor = 0
    for cell in nb.cells:
        cell.pop("id", None)
    return nb


def duplicated_cell_ids(nb):
    """Every cell with the same id (what some tools' copy-paste and merges leave)."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        cell["id"] = "same-id"
    return nb


def write_class(folder: Path, assignment_id: str, notebooks: dict) -> Path:
    """Write ``{student_id: notebook}`` as ``folder/<student>/<assignment>/<assignment>.ipynb``,
    as plain JSON (nbformat's writer would repair what the mutations broke)."""
    for student_id, nb in notebooks.items():
        path = Path(folder) / student_id / assignment_id / f"{assignment_id}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return Path(folder)
