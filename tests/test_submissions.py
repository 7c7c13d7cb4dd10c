"""Validation of submitted files (G05): a clear reason for each kind of bad file."""
import json
from pathlib import Path

import nbformat
import pytest

from autograder.grading.submissions import notebook_problem

ROOT = Path(__file__).resolve().parents[1]


def _release_notebook() -> Path:
    return sorted((ROOT / "notebooks").glob("*/*.ipynb"))[0]


def test_released_notebook_is_valid():
    assert notebook_problem(_release_notebook()) is None


def test_html_saved_as_ipynb_is_named(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text("<!DOCTYPE html>\n<html><body>Jupyter</body></html>")
    assert "HTML page saved as .ipynb" in notebook_problem(path)


def test_truncated_json_is_named(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text(_release_notebook().read_text()[:500])
    assert "not JSON (truncated or corrupted?)" in notebook_problem(path)


def test_json_that_is_not_a_notebook_is_named(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text(json.dumps({"cells": "nope"}))
    assert notebook_problem(path).startswith("not a valid notebook")


def test_stripped_nbgrader_metadata_is_named(tmp_path):
    nb = nbformat.read(_release_notebook(), as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    path = tmp_path / "a.ipynb"
    nbformat.write(nb, path)
    assert "nbgrader cell metadata was stripped" in notebook_problem(path)


@pytest.mark.parametrize("data", [b"\xff\xfe\x00garbage", b""])
def test_binary_or_empty_file_is_named(tmp_path, data):
    path = tmp_path / "a.ipynb"
    path.write_bytes(data)
    assert notebook_problem(path).startswith("not a valid notebook")
