"""Find, validate and stage a class's submissions without ever writing to them.

Layout (nbgrader's): ``<submitted>/<student_id>/<assignment_id>/<notebook>.ipynb``, optionally with
nbgrader's ``timestamp.txt`` beside the notebooks.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat


@dataclass
class Submission:
    """One student's submission of one assignment.

    ``notebooks`` maps each notebook name of the assignment (file stem) to the submitted file;
    ``problems`` maps the name of each notebook that cannot be graded to the reason; ``notes`` says
    what was done about misnamed or extra files. The report shows problems and notes.
    """
    student_id: str
    assignment_id: str
    folder: Path
    notebooks: dict[str, Path] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.student_id}/{self.assignment_id}"


def find_submissions(submitted_dir: Path, expected: dict[str, list[str]]) -> list[Submission]:
    """Every ``<student>/<assignment>`` folder of ``submitted_dir`` for the assignments of
    ``expected`` (assignment id -> its notebook names), sorted by student then assignment, each
    notebook validated with :func:`notebook_problem`.

    A notebook file with another name (``01_gradient_tape (1).ipynb``, as a browser names a second
    download) stands for the assignment's notebook when it is the only candidate; other extra
    notebooks are left out. Both are said in ``notes``.
    """
    found = []
    for student_dir in sorted(p for p in Path(submitted_dir).iterdir() if p.is_dir()):
        for assignment_id, names in expected.items():
            folder = student_dir / assignment_id
            if not folder.is_dir():
                continue
            sub = Submission(student_dir.name, assignment_id, folder)
            files = sorted(folder.glob("*.ipynb"))
            extra = [p for p in files if p.stem not in names]
            for path in files:
                if path.stem in names:
                    sub.notebooks[path.stem] = path
            missing = [name for name in names if name not in sub.notebooks]
            if len(missing) == 1 and len(extra) == 1:
                sub.notebooks[missing[0]] = extra.pop()
                sub.notes.append(f"graded '{sub.notebooks[missing[0]].name}' as {missing[0]}.ipynb")
            sub.notes += [f"left out '{p.name}' (not a notebook of this assignment)" for p in extra]
            for name, path in sub.notebooks.items():
                problem = notebook_problem(path)
                if problem:
                    sub.problems[name] = problem
            found.append(sub)
    return found


def unknown_folders(submitted_dir: Path, assignment_ids: list[str]) -> list[str]:
    """``<student>/<folder>`` entries of ``submitted_dir`` that name no assignment of the course
    (a sign of a wrong layout), and files lying directly in a student's folder."""
    odd = []
    for student_dir in sorted(p for p in Path(submitted_dir).iterdir() if p.is_dir()):
        odd += [f"{student_dir.name}/{p.name}" for p in sorted(student_dir.iterdir())
                if p.name not in assignment_ids and not p.name.startswith(".")]
    return odd


def notebook_problem(path: Path) -> str | None:
    """Why ``path`` cannot be graded, or None when it is a valid nbgrader notebook (G05).

    Catches files that are not JSON (an HTML page saved as .ipynb, a truncated download), JSON
    that is not a valid notebook, and notebooks whose nbgrader cell metadata was stripped.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return f"not a valid notebook: cannot read the file as text ({error.__class__.__name__})"
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        start = text.lstrip()[:15].lower()
        kind = "an HTML page saved as .ipynb" if start.startswith(("<!doctype", "<html")) else \
            "not JSON (truncated or corrupted?)"
        return f"not a valid notebook: {kind}; JSON error at line {error.lineno}"
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as error:  # nbformat raises several types for bad structure
        return f"not a valid notebook: {str(error).splitlines()[0][:200]}"
    if not any("nbgrader" in cell.get("metadata", {}) for cell in nb.cells):
        return "not a valid notebook for grading: its nbgrader cell metadata was stripped " \
               "(was it copied into a new notebook?)"
    return None


def stage(sub: Submission, staged_root: Path) -> Path:
    """Copy the gradable files of ``sub`` to ``<staged_root>/<student>/<assignment>/`` (each notebook
    under the assignment's name for it) and return that folder. nbgrader reads only this copy, so
    the submitted files cannot change."""
    dest = Path(staged_root) / sub.student_id / sub.assignment_id
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for path in sorted(sub.folder.iterdir()):
        if path.is_file() and path.suffix != ".ipynb":
            shutil.copy2(path, dest / path.name)
    for name, path in sub.notebooks.items():
        if name not in sub.problems:
            shutil.copy2(path, dest / f"{name}.ipynb")
    return dest


def restored_cells(submitted: Path, released: Path) -> list[str]:
    """The locked cells of the release that ``submitted`` lacks or changed, each as
    ``"<grade_id> (deleted|edited|changed to <type>)"``. nbgrader restores them from the source
    before grading (G03, G04); the report tells the instructor it did."""
    mine = {c.metadata.get("nbgrader", {}).get("grade_id"): c
            for c in nbformat.read(submitted, as_version=4).cells}
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
