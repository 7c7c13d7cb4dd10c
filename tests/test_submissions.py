"""Validation of submitted files (G05): a clear reason for each kind of bad file."""
import json
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grade import grade_class
from autograder.grading.submissions import find_submissions, notebook_problem, stage, unknown_folders

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


def _class_folder(tmp_path, files: dict[str, str]) -> Path:
    for rel, source in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return tmp_path


def test_a_second_download_name_stands_for_the_assignment_notebook(tmp_path):
    valid = _release_notebook().read_text()
    folder = _class_folder(tmp_path, {"erin/a1/a1 (1).ipynb": valid})
    [sub] = find_submissions(folder, {"a1": ["a1"]})
    assert sub.notebooks == {"a1": folder / "erin/a1/a1 (1).ipynb"} and not sub.problems
    assert sub.notes == ["graded 'a1 (1).ipynb' as a1.ipynb"]
    staged = stage(sub, tmp_path / "staged")
    assert sorted(p.name for p in staged.iterdir()) == ["a1.ipynb"]


def test_extra_notebooks_are_left_out_and_said(tmp_path):
    valid = _release_notebook().read_text()
    folder = _class_folder(tmp_path, {"erin/a1/a1.ipynb": valid, "erin/a1/scratch.ipynb": valid})
    [sub] = find_submissions(folder, {"a1": ["a1"]})
    assert list(sub.notebooks) == ["a1"]
    assert sub.notes == ["left out 'scratch.ipynb' (not a notebook of this assignment)"]


def test_folders_that_name_no_assignment_are_reported(tmp_path):
    folder = _class_folder(tmp_path, {"frank/hw1/hw1.ipynb": "{}", "erin/a1/a1.ipynb": "{}",
                                      "gus/notes.ipynb": "{}"})
    assert find_submissions(folder, {"a1": ["a1"]})[0].student_id == "erin"
    assert unknown_folders(folder, ["a1"]) == ["frank/hw1", "gus/notes.ipynb"]


def test_grading_an_unknown_assignment_says_which_exist(tmp_path):
    with pytest.raises(ValueError, match="unknown assignment 07_nope: the course has 01_gradient_tape"):
        grade_class(tmp_path, tmp_path / "out", assignment_ids=["07_nope"])
