"""Find, validate and stage a class's submissions without ever writing to them.

Layout (nbgrader's): ``<submitted>/<student_id>/<assignment_id>/<notebook>.ipynb``, optionally with
nbgrader's ``timestamp.txt`` beside the notebooks.
"""
from __future__ import annotations

import copy
import json
import re
import shutil
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

# A student id nbgrader can use: it puts the id into file patterns (glob) and paths, so the
# characters of a pattern ([, ], *, ?), separators, spaces and a leading dot are refused.
STUDENT_ID = re.compile(r"[\w@+-][\w.@+-]*")


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
    notebooks are left out. Both are said in ``notes``. A student id is shown with unprintable
    characters escaped; a symbolic link (to a solution, to another student's file) is never
    followed: such a notebook or folder is refused, such an extra file left out.
    """
    found = []
    for student_dir in sorted(p for p in Path(submitted_dir).iterdir() if p.is_dir()):
        for assignment_id, names in expected.items():
            folder = student_dir / assignment_id
            if not folder.is_dir():
                continue
            sub = Submission(printable(student_dir.name), assignment_id, folder)
            files = sorted(p for p in folder.iterdir() if p.suffix == ".ipynb")
            extra = [p for p in files if p.stem not in names]
            for path in files:
                if path.stem in names:
                    sub.notebooks[path.stem] = path
            missing = [name for name in names if name not in sub.notebooks]
            if len(missing) == 1 and len(extra) == 1:
                sub.notebooks[missing[0]] = extra.pop()
                sub.notes.append(f"graded '{sub.notebooks[missing[0]].name}' as {missing[0]}.ipynb")
            sub.notes += [f"left out '{p.name}' (not a notebook of this assignment)" for p in extra]
            refused = student_id_problem(student_dir.name) or (
                "the student folder or its assignment folder is a symbolic link: not graded"
                if student_dir.is_symlink() or folder.is_symlink() else None)
            for name, path in sub.notebooks.items():
                problem = refused or notebook_problem(path)
                if problem:
                    sub.problems[name] = problem
            if refused and not sub.notebooks:
                sub.problems.update({name: refused for name in names})
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


def printable(text: str) -> str:
    """``text`` with what a terminal, a CSV or UTF-8 cannot show safely escaped (control
    characters, undecodable bytes of a file name), so that reports never break on it."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def student_id_problem(student_id: str) -> str | None:
    """Why the folder name ``student_id`` cannot be a student id in nbgrader, or None (G15).

    nbgrader finds a student's files with file patterns, so ``kim[2]`` would match ``kim2``; such a
    folder is refused with this reason, and the rest of the class is graded."""
    if STUDENT_ID.fullmatch(student_id):
        return None
    odd = sorted({ch for ch in student_id if not re.fullmatch(r"[\w.@+-]", ch)} |
                 ({"."} if student_id.startswith(".") else set()))
    shown = " ".join(f"'{printable(ch)}'" for ch in odd)
    safe = printable(re.sub(r"[^\w.@+-]+", "_", student_id).strip("_.")) or "student"
    return (f"student folder '{printable(student_id)}' not graded: nbgrader cannot use it as a "
            f"student id (characters {shown}); rename the folder, for example to '{safe}', and "
            "grade again")


def _stable_id(text: str, taken: set) -> str:
    """A cell id made from ``text``, not yet in ``taken``: the same notebook always gets the same
    ids, so a submission staged again is recognised as unchanged (resume)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    for start in range(0, len(digest) - 8):
        if digest[start:start + 8] not in taken:
            return digest[start:start + 8]
    raise ValueError("no free cell id")  # 56 tries of 8 hex digits: not in practice


def read_notebook(path: Path):
    """Read ``path`` as an nbformat 4.5 notebook, normalized the way front ends differ.

    Any nbformat 4.x (or 3) is upgraded; missing or duplicated cell ids are replaced; saved widget
    state, whose layout differs between JupyterLab, Notebook 7, VS Code and Colab, is dropped
    (grading never needs it). Raises what nbformat raises for a file that is not a notebook.
    """
    # Not nbformat.reads: its validation replaces duplicated ids with random ones (and warns),
    # and ids must be derived from the notebook so that a resumed run recognises it.
    nb = nbformat.convert(nbformat.reader.reads(Path(path).read_text(encoding="utf-8")), 4)
    nb.nbformat_minor = max(nb.get("nbformat_minor", 0), 5)
    seen = set()
    for index, cell in enumerate(nb.cells):
        if not isinstance(cell.get("id"), str) or cell["id"] in seen or \
                not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cell["id"]):
            cell["id"] = _stable_id(f"{index}:{cell.get('source', '')}", seen)
        seen.add(cell["id"])
        cell.setdefault("metadata", nbformat.NotebookNode())
    nb.metadata.pop("widgets", None)
    return nb


def notebook_problem(path: Path) -> str | None:
    """Why ``path`` cannot be graded, or None when it is a valid nbgrader notebook (G05).

    Catches symbolic links, files that are not JSON (an HTML page saved as .ipynb, a truncated
    download), JSON that is not a valid notebook, and notebooks whose nbgrader cell metadata was
    stripped.
    """
    if Path(path).is_symlink():
        return "not a valid notebook: a symbolic link, not a file (never followed)"
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
        nb = read_notebook(path)
        nbformat.validate(nb)
    except Exception as error:  # nbformat raises several types for bad structure
        return f"not a valid notebook: {str(error).splitlines()[0][:200]}"
    if not any("nbgrader" in cell.get("metadata", {}) for cell in nb.cells):
        return "not a valid notebook for grading: its nbgrader cell metadata was stripped " \
               "(was it copied into a new notebook?)"
    return None


def stage(sub: Submission, staged_root: Path, release_dir: Path | None = None) -> Path:
    """Copy the gradable files of ``sub`` to ``<staged_root>/<student>/<assignment>/`` (each notebook
    under the assignment's name for it, normalized by :func:`read_notebook`) and return that
    folder. nbgrader reads only this copy, so the submitted files cannot change.

    With ``release_dir`` (holding ``<assignment>/<notebook>.ipynb``), each notebook is also repaired
    against its release by :func:`repair_grade_cells`; what was done is added to ``sub.notes``.
    """
    dest = Path(staged_root) / sub.student_id / sub.assignment_id
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for path in sorted(sub.folder.iterdir()):
        if path.is_symlink():
            sub.notes.append(f"left out '{printable(path.name)}' (a symbolic link)")
        elif path.is_file() and path.suffix != ".ipynb":
            shutil.copy2(path, dest / path.name)
    for name, path in sub.notebooks.items():
        if name not in sub.problems:
            nb = read_notebook(path)
            released = Path(release_dir or "") / sub.assignment_id / f"{name}.ipynb"
            if release_dir is not None and released.exists():
                sub.notes += repair_grade_cells(nb, nbformat.read(released, as_version=4))
            nbformat.write(nb, dest / f"{name}.ipynb")
    return dest


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


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
    released = {_grade_id(c): c for c in release.cells if _grade_id(c)}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta is None:
            continue
        source = released.get(meta.get("grade_id")) if isinstance(meta, dict) else None
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
        if _grade_id(cell):
            by_id.setdefault(_grade_id(cell), []).append(cell)
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
    present = {_grade_id(c) for c in nb.cells}
    previous = None
    for cell in release.cells:
        grade_id = _grade_id(cell)
        if grade_id and grade_id not in present and cell.metadata["nbgrader"].get("locked"):
            at = next((i + 1 for i, c in enumerate(nb.cells)
                       if previous and _grade_id(c) == previous), 0)
            restored = copy.deepcopy(cell)
            restored["id"] = _stable_id(f"restored:{grade_id}", {c.get("id") for c in nb.cells})
            nb.cells.insert(at, restored)
            present.add(grade_id)
        if grade_id in present:
            previous = grade_id
    return notes


def restored_cells(submitted: Path, released: Path) -> list[str]:
    """The locked cells of the release that ``submitted`` lacks or changed, each as
    ``"<grade_id> (deleted|edited|changed to <type>)"``. nbgrader restores them from the source
    before grading (G03, G04); the report tells the instructor it did."""
    mine = {c.metadata.get("nbgrader", {}).get("grade_id"): c
            for c in read_notebook(submitted).cells}
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
