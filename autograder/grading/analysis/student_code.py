"""What of a notebook is the student's, for answer similarity (:mod:`.similarity`): the answer
cells, the code cells written or changed outside them (new cells), and the points nbgrader's
autograde gave the notebook.

Every notebook here is parsed JSON from a submission, so untrusted: a cell that is not a dict,
whose metadata is missing or odd, or whose source is neither a str nor a list of str is skipped,
and no function raises for anything a notebook holds.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.utils import determine_grade

from autograder.grading.report_text import printable

NEW_CELL = "new cell {}"  # the label of a new cell: its position in its notebook, from 1
MAX_NOTEBOOK_BYTES = 32 * 2**20  # a larger file is skipped (autograded notebooks hold outputs)


def clean(text: str) -> str:
    """``text`` with one kind of newline and a lone surrogate (a JSON ``\\ud800``) as ``?``, so
    that it can be written as UTF-8 and reads back the same."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.encode("utf-8", "replace").decode("utf-8")


def _cells(notebook_json) -> list[dict]:
    """The cells of a parsed notebook that are dicts, in order (``[]`` for anything else)."""
    cells = notebook_json.get("cells") if isinstance(notebook_json, dict) else None
    return [cell for cell in cells if isinstance(cell, dict)] if isinstance(cells, list) else []


def _source(cell: dict) -> str | None:
    """A cell's source: a str, or a list of str joined; None for anything else."""
    source = cell.get("source")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    return source if isinstance(source, str) else None


def _nbgrader(cell: dict) -> dict | None:
    """A cell's ``metadata.nbgrader`` where it is a dict, else None."""
    meta = cell.get("metadata")
    nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbgrader if isinstance(nbgrader, dict) else None


def answer_sources(notebook_json) -> dict[str, str]:
    """grade_id -> source of each answer cell (a code cell whose ``metadata.nbgrader.solution``
    is ``true`` and that has a str ``grade_id``) of one notebook's parsed JSON, in notebook order.

    A grade_id used twice gets its cells' sources joined by a newline. Anything but a notebook
    dict gives ``{}``. Never raises.
    """
    sources: dict[str, str] = {}
    for cell in _cells(notebook_json):
        nbgrader, source = _nbgrader(cell), _source(cell)
        if cell.get("cell_type") != "code" or nbgrader is None or nbgrader.get("solution") is not True:
            continue
        grade_id = nbgrader.get("grade_id")
        if not isinstance(grade_id, str) or not grade_id or source is None:
            continue
        sources[grade_id] = sources[grade_id] + "\n" + source if grade_id in sources else source
    return sources


def code_sources(notebook_json) -> list[str]:
    """The sources of all code cells of a parsed notebook, in order. Never raises."""
    return [source for cell in _cells(notebook_json)
            if cell.get("cell_type") == "code" and (source := _source(cell)) is not None]


def new_sources(notebook_json, release_json) -> dict[str, str]:
    """:data:`NEW_CELL` label -> source of each new cell of ``notebook_json``: a code cell with no
    nbgrader metadata (or metadata that is not a dict, or no str grade_id), or whose grade_id is
    that of no cell of ``release_json`` (the release's version of the notebook), and whose source
    is not the source of a code cell of the release (newlines and the whitespace around it
    aside): a given cell run as it came is not the student's, one they changed is. The cells
    the release names are left out: its answer cells (:func:`answer_sources`) and its locked and
    graded cells, which nbgrader puts back as released. Labels number all cells of the
    notebook, markdown too, as a notebook shows them. Never raises.
    """
    released = {clean(source).strip() for source in code_sources(release_json)}
    named = {nbgrader.get("grade_id") for cell in _cells(release_json) if (nbgrader := _nbgrader(cell))}
    new = {}
    cells = notebook_json.get("cells") if isinstance(notebook_json, dict) else None
    for index, cell in enumerate(cells if isinstance(cells, list) else [], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        nbgrader, source = _nbgrader(cell), _source(cell)
        grade_id = nbgrader.get("grade_id") if nbgrader else None
        if source is None or (isinstance(grade_id, str) and grade_id in named):
            continue
        if clean(source).strip() not in released:
            new[NEW_CELL.format(index)] = source
    return new


def autograded_score(notebook_json) -> tuple[float, float]:
    """(points, most points) of the graded code cells of an autograded notebook, as nbgrader's
    autograde scored them: nbgrader's own ``determine_grade`` of each cell, the function its
    ``SaveAutoGrades`` records the score with (full points for a cell with no error or stderr
    output). Answer cells with points (graded by hand) are not counted; a graded cell whose
    metadata or outputs nbgrader cannot read scores 0 of 0. Never raises."""
    score = most = 0.0
    for cell in _cells(notebook_json):
        nbgrader = _nbgrader(cell)
        if cell.get("cell_type") != "code" or not nbgrader or nbgrader.get("grade") is not True \
                or nbgrader.get("solution") is True:
            continue
        try:
            points, max_points = determine_grade(nbformat.from_dict(cell))
            score, most = score + float(points or 0), most + float(max_points)
        except (AttributeError, KeyError, TypeError, ValueError, OverflowError, RecursionError):
            continue
    return score, most


def read_notebook(path: Path, shown: str, notes: list[str]) -> dict | None:
    """The parsed JSON of the notebook at ``path``, or None with a line appended to ``notes``
    (naming it ``shown``) when it is not a plain file (a symbolic link is never followed), is
    larger than MAX_NOTEBOOK_BYTES or is not a JSON object. Never raises."""
    try:
        if path.is_symlink() or not path.is_file():
            notes.append(f"skipped {shown}: not a plain file")
            return None
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            notes.append(f"skipped {shown}: larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
            return None
        notebook = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        notes.append(f"skipped {shown}: not a JSON notebook ({type(error).__name__})")
        return None
    if not isinstance(notebook, dict):
        notes.append(f"skipped {shown}: not a JSON notebook (not an object)")
        return None
    return notebook


@dataclass
class Release:
    """One assignment as released: ``notebooks`` (file names, sorted), ``prefixes`` (file name
    -> the prefix of its cells' labels: ``""`` for an assignment of one notebook, else
    ``"<stem>/"``), ``released`` (file name -> its parsed JSON), ``stubs`` (answer cell label ->
    the release's source) and ``boilerplate`` (its code cells as one text, to which the course's
    answers may be added)."""
    notebooks: list[str]
    prefixes: dict[str, str]
    released: dict[str, dict]
    stubs: dict[str, str]
    boilerplate: str


def read_releases(release: Path, notes: list[str]) -> dict[str, Release]:
    """Assignment id -> its :class:`Release`, for each folder of ``release``
    (``<assignment>/<notebook>.ipynb``) whose notebooks have answer cells; a notebook that
    cannot be read is noted in ``notes`` and taken as empty. Raises OSError if ``release``
    cannot be listed."""
    assignments = {}
    for folder in sorted(p for p in Path(release).iterdir() if p.is_dir() and not p.name.startswith(".")):
        notebooks = sorted(p.name for p in folder.glob("*.ipynb") if p.is_file())
        prefixes = {name: "" if len(notebooks) == 1 else Path(name).stem + "/" for name in notebooks}
        released = {name: read_notebook(folder / name, printable(f"release {folder.name}/{name}"), notes) or {}
                    for name in notebooks}
        stubs = {prefixes[name] + gid: src for name in notebooks for gid, src in answer_sources(released[name]).items()}
        boilerplate = "\n".join(clean(src) for name in notebooks for src in code_sources(released[name])) + "\n"
        if stubs:
            assignments[folder.name] = Release(notebooks, prefixes, released, stubs, boilerplate)
    return assignments


def student_sources(person: Path, assignment_id: str, release: Release, label_prefix: str, notes: list[str],
                    with_new: bool = True) -> tuple[dict[str, str], dict[str, str], dict[str, dict]]:
    """What ``person`` (a folder ``<assignment>/<notebook>.ipynb``) wrote for one assignment
    (``release``): (answer cell label -> source, new cell label -> source (none without
    ``with_new``), file name -> parsed notebook), labels prefixed as :attr:`Release.prefixes`
    says. A notebook not there is not submitted; one that cannot be read is noted in ``notes``
    (its path shown after ``label_prefix``) and skipped. Never raises."""
    answers, new, read = {}, {}, {}
    for name in release.notebooks:
        path = person / assignment_id / name
        if not os.path.lexists(path):
            continue  # not submitted
        notebook = read_notebook(path, printable(f"{label_prefix}{person.name}/{assignment_id}/{name}"), notes)
        if notebook is None:
            continue
        prefix, read[name] = release.prefixes[name], notebook
        answers.update({prefix + gid: src for gid, src in answer_sources(notebook).items()})
        if with_new:
            new.update({prefix + label: src for label, src in new_sources(notebook, release.released[name]).items()})
    return answers, new, read


@dataclass(frozen=True)
class EmptyAnswers:
    """A notebook that scores while its answer cells hold no code of their own (each is empty, a
    comment or the release's stub): ``student``'s ``notebook`` (file name) of ``assignment_id``
    scored ``score`` of ``max_score`` points (:func:`autograded_score`); ``new_cells`` are the
    labels of its new cells that answer similarity compares, where its code is."""
    student: str
    assignment_id: str
    notebook: str
    score: float
    max_score: float
    new_cells: tuple[str, ...]

    def text(self) -> str:
        """One line naming the student and the assignment, and what is noted (not yet escaped)."""
        where = f"code in {', '.join(self.new_cells)}" if self.new_cells else "no new cell compared"
        return (f"{self.student} / {self.assignment_id}: {self.notebook} scores {self.score:g}/"
                f"{self.max_score:g} while its answer cells hold no code of their own ({where})")


def empty_answers(student: str, assignment_id: str, release: Release, read: dict[str, dict],
                  with_code: set[str], new_cells: list[str]) -> list[EmptyAnswers]:
    """An :class:`EmptyAnswers` for each notebook of ``read`` (file name -> autograded
    notebook, of ``release``) that scores while none of its answer cells' labels is in
    ``with_code`` (those that hold code of their own); ``new_cells``: the labels of the new cells
    compared, of any of the notebooks. Never raises."""
    found = []
    for name, notebook in read.items():
        prefix = release.prefixes[name]
        labels = [label for label in release.stubs if label.startswith(prefix)]
        score, max_score = autograded_score(notebook)
        if labels and score > 0 and not with_code.intersection(labels):
            cells = tuple(label for label in new_cells if label.startswith(prefix))
            found.append(EmptyAnswers(student, assignment_id, name, score, max_score, cells))
    return found
