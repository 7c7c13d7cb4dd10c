"""Put back, as released, the nbgrader cells a student deleted or changed, and say which.
"""
from __future__ import annotations

import copy

from nbgrader import utils as nbgrader_utils

from autograder.grading.intake.reading import stable_id


def grade_id_of(cell) -> str | None:
    """The ``grade_id`` of ``cell``'s nbgrader metadata when it is a string, else None."""
    meta = cell.get("metadata", {}).get("nbgrader")
    grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
    return grade_id if isinstance(grade_id, str) else None


def grading_fields(cell) -> tuple:
    """What of ``cell``'s nbgrader metadata changes how it is graded: its ``grade_id``, whether
    nbgrader grades it, reads it as an answer, puts its source back (``is_locked``) or leaves it
    to a person (a task), and its points where it has some; not the keys that nbgrader versions
    write differently (``cell_type``, ``checksum``, ``schema_version``)."""
    meta = cell.metadata["nbgrader"]
    flags = tuple(bool(test(cell)) for test in (nbgrader_utils.is_grade, nbgrader_utils.is_solution,
                                                nbgrader_utils.is_locked, nbgrader_utils.is_task))
    points = meta.get("points") if flags[0] or flags[3] else None
    try:
        points = None if points is None else float(points)
    except (TypeError, ValueError):
        pass  # compared as it is: it differs from the release's number
    return (meta.get("grade_id"), *flags, points)


def repair_grade_cells(nb, release) -> list[str]:
    """Make ``nb`` (a submission, changed in place) gradable against its ``release``; returns
    notes for the instructor.

    - A ``grade_id`` that several cells share (a cell copy-pasted with its metadata, G11) stays on
      one: for an answer cell the last one that differs from the release's placeholder, else the
      first; the copies keep running as ordinary cells.
    - A cell of the release that nbgrader puts back as released (``is_locked``: locked, or
      graded and not an answer) and that the submission lacks (a deleted test or check cell, G03,
      G12) is put back after the last cell with nbgrader metadata of the release that precedes it
      there; nbgrader then overwrites such cells with the source's version, hidden tests included.
    - A cell's nbgrader metadata is the release's: metadata for a ``grade_id`` the assignment
      does not have is dropped; metadata that differs from the release's is put back, with a
      note where that changes the grade (:func:`grading_fields`: an answer cell made a graded
      cell of 10 points), silently where only keys that nbgrader versions write differently
      differ (a task cell without ``cell_type`` and ``checksum``, as older versions wrote it).
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
        elif meta != source.metadata["nbgrader"]:
            changed = grading_fields(cell) != grading_fields(source)
            cell.metadata["nbgrader"] = copy.deepcopy(source.metadata["nbgrader"])
            if changed:
                notes.append(f"cell '{meta['grade_id']}' had its nbgrader metadata changed: put "
                             "back as released")
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
        if grade_id and grade_id not in present and nbgrader_utils.is_locked(cell):
            at = next((i + 1 for i, c in enumerate(nb.cells)
                       if previous and grade_id_of(c) == previous), 0)
            restored = copy.deepcopy(cell)
            restored["id"] = stable_id(f"restored:{grade_id}", {c.get("id") for c in nb.cells})
            nb.cells.insert(at, restored)
            present.add(grade_id)
        if grade_id and grade_id in present:
            previous = grade_id
    return notes


def restored_cells(nb, release) -> list[str]:
    """The cells of ``release`` that nbgrader puts back as released before grading (G03, G04):
    ``is_locked`` ones (locked, or graded and not an answer: a test cell whose metadata says
    unlocked too), each that the submission ``nb`` (its metadata recovered by
    :func:`~.intake.align.align_with_release`, before :func:`repair_grade_cells`) lacks or changed,
    in the release's order, as ``"<grade_id> (<what>)"``, what being ``deleted``, ``changed to
    <type>``, ``emptied`` or ``edited`` (of the first cell with that ``grade_id``, the one
    graded). The report tells the instructor nbgrader did it."""
    mine: dict = {}
    for cell in nb.cells:
        mine.setdefault(grade_id_of(cell), cell)
    notes = []
    for cell in release.cells:
        grade_id = grade_id_of(cell)
        if not grade_id or not nbgrader_utils.is_locked(cell):
            continue
        theirs = mine.get(grade_id)
        if theirs is None:
            notes.append(f"{grade_id} (deleted)")
        elif theirs.cell_type != cell.cell_type:
            notes.append(f"{grade_id} (changed to {theirs.cell_type})")
        elif not theirs.source.strip() and cell.source.strip():
            notes.append(f"{grade_id} (emptied)")
        elif theirs.source.strip() != cell.source.strip():
            notes.append(f"{grade_id} (edited)")
    return notes
