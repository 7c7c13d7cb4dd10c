"""Give back, from the release, the nbgrader metadata an editor dropped from a submission's cells.

Some front ends save a notebook without the metadata of the cells they ran (versions of VS Code
do): nbgrader then finds no set-up, answer or test cell where the student left them, and the
cells put back for it land in the wrong place. :func:`align_with_release` matches such cells
with the release's, locked cells by their source and answer cells by their position between the
cells that match, and gives each the release's nbgrader metadata.
"""
from __future__ import annotations

import copy
import difflib

from nbgrader import utils as nbgrader_utils

from autograder.grading.intake.reading import UnreadableNotebook
from autograder.grading.intake.repair import grade_id_of


class Unalignable(UnreadableNotebook):
    """A notebook whose cells lost their nbgrader metadata and cannot be matched with its
    release; the message is the reason, for the report."""


def align_with_release(nb, release) -> list[str]:
    """Give the cells of the submission ``nb`` (changed in place) that lost their nbgrader
    metadata the metadata of the cells of ``release`` they are; returns notes for the instructor.

    Only a cell of ``release`` whose ``grade_id`` no cell of ``nb`` carries is looked for, and only
    among the cells of ``nb`` with no ``grade_id`` of the release. The two lists of cells are
    matched in order (``difflib.SequenceMatcher``): cells carrying a ``grade_id`` by it, the others
    by their type and source. A locked cell (nbgrader's ``is_locked``: set-up, check, test and task
    cells) is recovered only where its source is the release's (nbgrader puts back its source
    anyway); one not found is put back by :func:`~.intake.repair.repair_grade_cells` and
    reported as deleted. An answer cell is recovered by its position between the cells that
    match: the cell at its place when the student's cells between them are as many as the
    release's, else the cell of its type there most like the release's placeholder, line by line.

    Raises:
        Unalignable: no cell of ``nb`` carries a ``grade_id`` of the release and none is a locked
            cell of the release as released (another assignment's notebook, or code copied into
            a new notebook): nothing to align on.
    """
    released = {grade_id_of(c): c for c in release.cells if grade_id_of(c)}
    carried = {grade_id_of(c) for c in nb.cells} & released.keys()
    wanted = released.keys() - carried
    if not wanted or all(grade_id_of(c) in released for c in nb.cells):
        return []

    def key(cell):
        grade_id = grade_id_of(cell)
        return ("id", grade_id) if grade_id in carried else (cell.cell_type, cell.source.strip())

    found: dict[int, object] = {}  # index in nb -> the release's cell it is
    matcher = difflib.SequenceMatcher(None, [key(c) for c in release.cells],
                                      [key(c) for c in nb.cells], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs = zip(range(i1, i2), range(j1, j2))
        elif tag == "replace":
            pairs = _answers_in_gap(release.cells[i1:i2], nb.cells[j1:j2], wanted, released)
            pairs = [(i1 + i, j1 + j) for i, j in pairs]
        else:
            continue
        for i, j in pairs:
            if grade_id_of(release.cells[i]) in wanted and grade_id_of(nb.cells[j]) not in released:
                found[j] = release.cells[i]
    if not carried and not any(nbgrader_utils.is_locked(cell) for cell in found.values()):
        raise Unalignable(
            "not a valid notebook for grading: its nbgrader cell metadata was stripped, and none "
            "of its cells is a locked cell of the release (the set-up, a check or a test) as "
            "released, so its cells cannot be matched with the release's (was it copied into a "
            "new notebook, or is it another assignment's?)")
    for j, cell in found.items():
        nb.cells[j].metadata["nbgrader"] = copy.deepcopy(cell.metadata["nbgrader"])
    notes = []
    if found:
        names = ", ".join(grade_id_of(nb.cells[j]) for j in sorted(found))
        notes.append(f"nbgrader metadata of {_cells(len(found))} recovered from the release (locked "
                     f"cells by their source, answer cells by their position): {names}")
        recovered = {grade_id_of(cell) for cell in found.values()}
        lost = [g for g, cell in released.items() if g in wanted and g not in recovered
                and nbgrader_utils.is_solution(cell)]
        if lost:
            notes.append(f"answer cell{'s' if len(lost) > 1 else ''} {', '.join(lost)} not found "
                         "among the cells that lost their nbgrader metadata: the student's code "
                         "ran as ordinary cells")
    return notes


def _answers_in_gap(theirs: list, ours: list, wanted: set, released: dict) -> list[tuple[int, int]]:
    """``(i, j)`` for each wanted answer cell ``theirs[i]`` (cells of the release between two
    matched cells) and the cell ``ours[j]`` (the submission's cells in the same place) that is it,
    in order: the cell at the same place when both lists are as long, else the loose cell of its
    type most like it, line by line (the first of equals)."""
    answers = [i for i, cell in enumerate(theirs)
               if grade_id_of(cell) in wanted and nbgrader_utils.is_solution(cell)]
    if len(theirs) == len(ours):
        return [(i, i) for i in answers if ours[i].cell_type == theirs[i].cell_type]
    pairs, start = [], 0
    for i in answers:
        candidates = [j for j in range(start, len(ours)) if ours[j].cell_type == theirs[i].cell_type
                      and grade_id_of(ours[j]) not in released]
        if not candidates:
            break
        lines = theirs[i].source.splitlines()
        j = max(candidates, key=lambda j: difflib.SequenceMatcher(
            None, lines, ours[j].source.splitlines()).ratio())
        pairs.append((i, j))
        start = j + 1
    return pairs


def _cells(n: int) -> str:
    return f"{n} cell{'s' if n != 1 else ''}"
