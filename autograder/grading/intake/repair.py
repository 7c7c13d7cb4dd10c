"""Put back, as released, the nbgrader cells a student deleted or changed, and say which.
"""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from autograder.grading.intake.reading import read_notebook, stable_id


def grade_id_of(cell) -> str | None:
    """The ``grade_id`` of ``cell``'s nbgrader metadata when it is a string, else None."""
    meta = cell.get("metadata", {}).get("nbgrader")
    grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
    return grade_id if isinstance(grade_id, str) else None


def repair_grade_cells(nb, release) -> list[str]:
    """Make ``nb`` (a submission, changed in place) gradable against its ``release``; returns
    notes for the instructor.

    - A ``grade_id`` that several cells share (a cell copy-pasted with its metadata, G11) stays on
      one: for an answer cell the last one that differs from the release's placeholder, else the
      first; the copies keep running as ordinary cells.
    - A locked cell of the release that the submission lacks (a deleted test or check cell, G03,
      G12) is put back after the cell that precedes it in the release; nbgrader then overwrites
      locked cells with the source's version, hidden tests included.
    - A cell's nbgrader metadata is the release's: metadata for a ``grade_id`` the assignment
      does not have is dropped, and changed flags or points (an answer cell made a graded cell of
      10 points) are put back, with a note.
    """
    notes = []
    released = {grade_id_of(c): c for c in release.cells if grade_id_of(c)}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta is None:
            continue
        source = released.get(grade_id_of(cell))
        if source is None:
            del cell.metadata["nbgrader"]
            notes.append(f"cell {index + 1} carried nbgrader metadata the assignment does not have: "
                         "graded as an ordinary cell")
        elif {k: v for k, v in meta.items() if k != "checksum"} != \
                {k: v for k, v in source.metadata["nbgrader"].items() if k != "checksum"}:
            cell.metadata["nbgrader"] = copy.deepcopy(source.metadata["nbgrader"])
            notes.append(f"cell '{meta['grade_id']}' had its nbgrader metadata changed: put back "
                         "as released")
    by_id: dict[str, list] = {}
    for cell in nb.cells:
        if grade_id_of(cell):
            by_id.setdefault(grade_id_of(cell), []).append(cell)
    for grade_id, cells in by_id.items():
        if len(cells) < 2:
            continue
        placeholder = released[grade_id].source.strip() if grade_id in released else None
        answered = [c for c in cells if c.source.strip() != placeholder]
        keep = answered[-1] if answered and cells[0].metadata["nbgrader"].get("solution") \
            else cells[0]
        for cell in cells:
            if cell is not keep:
                del cell.metadata["nbgrader"]
        notes.append(f"cell '{grade_id}' appeared {len(cells)} times (copy-pasted?): graded cell "
                     f"{nb.cells.index(keep) + 1}; the copies ran as ordinary cells")
    present = {grade_id_of(c) for c in nb.cells}
    previous = None
    for cell in release.cells:
        grade_id = grade_id_of(cell)
        if grade_id and grade_id not in present and cell.metadata["nbgrader"].get("locked"):
            at = next((i + 1 for i, c in enumerate(nb.cells)
                       if previous and grade_id_of(c) == previous), 0)
            restored = copy.deepcopy(cell)
            restored["id"] = stable_id(f"restored:{grade_id}", {c.get("id") for c in nb.cells})
            nb.cells.insert(at, restored)
            present.add(grade_id)
        if grade_id in present:
            previous = grade_id
    return notes


def restored_cells(submitted: Path, released: Path) -> list[str]:
    """The locked cells of the release that ``submitted`` lacks or changed, each as
    ``"<grade_id> (deleted|edited|changed to <type>)"``. nbgrader restores them from the source
    before grading (G03, G04); the report tells the instructor it did."""
    mine = {grade_id_of(c): c for c in read_notebook(submitted).cells}
    notes = []
    for cell in nbformat.read(released, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("locked"):
            continue
        theirs = mine.get(meta.get("grade_id"))
        if theirs is None:
            notes.append(f"{meta['grade_id']} (deleted)")
        elif theirs.cell_type != cell.cell_type:
            notes.append(f"{meta['grade_id']} (changed to {theirs.cell_type})")
        elif theirs.source.strip() != cell.source.strip():
            notes.append(f"{meta['grade_id']} (edited)")
    return notes
