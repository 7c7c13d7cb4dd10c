"""Find, validate and stage a class's submissions without ever writing to them.

Layout (nbgrader's): ``<submitted>/<student_id>/<assignment_id>/<notebook>.ipynb``, optionally with
nbgrader's ``timestamp.txt`` beside the notebooks.

Every file is read safely (:func:`read_notebook`): nothing of one submission can raise past it
(a file too large, not a regular file, in another encoding, JSON nested too deeply or not an
object); each such file gets its reason (:func:`notebook_problem`), and the rest of the class is
graded.
"""
from __future__ import annotations

import codecs
import copy
import errno
import json
import os
import re
import shutil
import stat
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .report_text import printable

# A student id nbgrader can use: it puts the id into file patterns (glob) and paths, so the
# characters of a pattern ([, ], *, ?), separators, spaces and a leading dot are refused.
STUDENT_ID = re.compile(r"[\w@+-][\w.@+-]*")
# The largest notebook file read, bytes (a notebook of this course is under 1 MB with its outputs).
MAX_NOTEBOOK_BYTES = 50 * 2**20
# What the other files of one submission folder may take together, bytes; past it they are left
# out (each job carries its files to a worker).
MAX_OTHER_FILES_BYTES = 50 * 2**20
# The deepest JSON nesting of a notebook read (a notebook is about 8 deep; deeper structures
# would reach Python's recursion limit in json, nbformat, jsonschema or copy).
MAX_JSON_DEPTH = 64
# Byte order marks of the encodings a notebook file is read in besides UTF-8 (UTF-32 before
# UTF-16: its little-endian mark starts with UTF-16's).
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
         (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"), (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
         (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"))


class UnreadableNotebook(ValueError):
    """A file that cannot be read as a notebook; the message says why, for the report."""


class FileTooLarge(UnreadableNotebook):
    """A file larger than what may be read of it."""


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
    for student_dir in sorted(p for p in Path(submitted_dir).iterdir() if _is_dir(p)):
        for assignment_id, names in expected.items():
            folder = student_dir / assignment_id
            if not _is_dir(folder):
                continue
            sub = Submission(printable(student_dir.name), assignment_id, folder)
            try:
                _find_notebooks(sub, student_dir, names)
            except Exception as error:  # an unreadable folder: this submission only
                sub.notebooks.clear()
                sub.problems = {name: "the submission folder could not be read: "
                                      f"{type(error).__name__}: {error}" for name in names}
            found.append(sub)
    return found


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a folder that cannot be looked into (permissions) is read, and said
        return True


def _find_notebooks(sub: Submission, student_dir: Path, names: list[str]) -> None:
    """Fill ``sub`` (of ``student_dir``) with its notebooks, problems and notes."""
    folder = sub.folder
    files = sorted(p for p in folder.iterdir() if p.suffix == ".ipynb")
    extra = [p for p in files if p.stem not in names]
    for path in files:
        if path.stem in names:
            sub.notebooks[path.stem] = path
    missing = [name for name in names if name not in sub.notebooks]
    if len(missing) == 1 and len(extra) == 1:
        sub.notebooks[missing[0]] = extra.pop()
        sub.notes.append(f"graded '{printable(sub.notebooks[missing[0]].name)}' as {missing[0]}.ipynb")
    sub.notes += [f"left out '{printable(p.name)}' (not a notebook of this assignment)" for p in extra]
    refused = student_id_problem(student_dir.name) or (
        "the student folder or its assignment folder is a symbolic link: not graded"
        if student_dir.is_symlink() or folder.is_symlink() else None)
    for name, path in sub.notebooks.items():
        problem, note = (refused, None) if refused else _check_notebook(path)
        if problem:
            sub.problems[name] = problem
        if note:
            sub.notes.append(f"{name}.ipynb {note}")
    if refused and not sub.notebooks:
        sub.problems.update({name: refused for name in names})


def unknown_folders(submitted_dir: Path, assignment_ids: list[str]) -> list[str]:
    """``<student>/<folder>`` entries of ``submitted_dir`` that name no assignment of the course
    (a sign of a wrong layout), and files lying directly in a student's folder."""
    odd = []
    for student_dir in sorted(p for p in Path(submitted_dir).iterdir() if p.is_dir()):
        try:
            entries = sorted(student_dir.iterdir())
        except OSError:
            continue  # said by find_submissions
        odd += [printable(f"{student_dir.name}/{p.name}") for p in entries
                if p.name not in assignment_ids and not p.name.startswith(".")]
    return odd


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


def read_capped(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, never following a symbolic link, never blocking
    (a named pipe) and never reading more than ``limit`` bytes; else :class:`UnreadableNotebook`
    (:class:`FileTooLarge`) with the reason."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnreadableNotebook("a symbolic link, not a file (never followed)") from None
        raise UnreadableNotebook(f"cannot read the file ({error.strerror or type(error).__name__})") \
            from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableNotebook("not a regular file (a folder, a named pipe or a device with "
                                     "the name of a notebook)")
        too_big = FileTooLarge(f"{_mib(max(info.st_size, limit + 1))}, over {_mib(limit)}")
        if info.st_size > limit:
            raise too_big
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise too_big
    return data


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size < 10 * 2**20 else f"{size / 2**20:.0f} MiB"


def read_notebook_json(path: Path) -> tuple[dict, str | None]:
    """The JSON object of the notebook file ``path`` and a note on its encoding (None for UTF-8).

    Raises :class:`UnreadableNotebook` (never anything else but MemoryError's kin) with the reason
    for a file over :data:`MAX_NOTEBOOK_BYTES`, not a regular file, not UTF-8 (or UTF-16 or
    UTF-32 with a byte order mark), not JSON, JSON nested deeper than :data:`MAX_JSON_DEPTH`, or
    JSON that is not an object."""
    try:
        data = read_capped(path, MAX_NOTEBOOK_BYTES)
    except FileTooLarge as error:
        raise UnreadableNotebook(
            f"the file is too large to grade ({error}, the most a notebook may have; outputs of "
            "many plots or of large arrays? clear them and submit again)") from None
    note = None
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as error:
                raise UnreadableNotebook(f"the file is marked as {name} text (a byte order mark) but "
                                         f"is not ({error.reason} at byte {error.start})") from None
            note = None if name == "UTF-8" else f"was saved as {name}: read as such"
            break
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise UnreadableNotebook(
                f"the file is not UTF-8 text, as notebooks are (byte 0x{data[error.start]:02x} at "
                f"offset {error.start}): saved in another encoding, such as Latin-1?") from None
    try:
        nb = json.loads(text)
    except RecursionError:
        raise UnreadableNotebook(f"its JSON is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except MemoryError:
        raise UnreadableNotebook("its JSON is too large to read") from None
    except json.JSONDecodeError as error:
        start = text.lstrip()[:15].lower()
        kind = "an HTML page saved as .ipynb" if start.startswith(("<!doctype", "<html")) else \
            "not JSON (truncated or corrupted?)"
        raise UnreadableNotebook(f"{kind}; JSON error at line {error.lineno}") from None
    except ValueError as error:  # a number too long to convert, say
        raise UnreadableNotebook(f"not JSON that can be read ({str(error)[:100]})") from None
    if not isinstance(nb, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(nb), "a number")
        raise UnreadableNotebook(f"its JSON is {kind}, not a notebook (a JSON object)")
    if _nested_deeper(nb, MAX_JSON_DEPTH):
        raise UnreadableNotebook(f"its JSON is nested deeper than {MAX_JSON_DEPTH} levels")
    return nb, note


def _nested_deeper(value, limit: int) -> bool:
    """Whether the JSON ``value`` nests lists and objects deeper than ``limit`` (no recursion)."""
    stack = [(value, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def read_notebook(path: Path):
    """Read ``path`` as an nbformat 4.5 notebook, normalized the way front ends differ.

    Any nbformat 4.x (or 3) is upgraded; missing or duplicated cell ids are replaced; saved widget
    state, whose layout differs between JupyterLab, Notebook 7, VS Code and Colab, is dropped
    (grading never needs it). The file is read by :func:`read_notebook_json` (its size, encoding
    and nesting checked). Raises :class:`UnreadableNotebook`, or what nbformat raises for JSON
    that is not a notebook.
    """
    return _normalized(read_notebook_json(path)[0])


def _normalized(data: dict):
    from nbformat.reader import get_version

    # Not nbformat.reads: its validation replaces duplicated ids with random ones (and warns),
    # and ids must be derived from the notebook so that a resumed run recognises it.
    major, minor = get_version(data)
    if not isinstance(major, int) or major not in nbformat.versions:
        raise UnreadableNotebook(f"nbformat version {printable(major)} is not one nbformat reads")
    try:
        nb = nbformat.convert(nbformat.versions[major].to_notebook_json(data, minor=minor), 4)
    except AttributeError as error:
        raise UnreadableNotebook(f"the notebook is missing an expected key ({error})") from None
    if not isinstance(nb.get("cells"), list) or \
            not all(isinstance(cell, dict) for cell in nb.cells):
        raise UnreadableNotebook("its cells are not a list of cells")
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

    Catches symbolic links, files that are not regular files, too large, not UTF-8 (or UTF-16 or
    UTF-32 with a byte order mark), not JSON (an HTML page saved as .ipynb, a truncated download),
    nested too deeply, JSON that is not a valid notebook or cannot be staged, and notebooks whose
    nbgrader cell metadata was stripped. Never raises.
    """
    return _check_notebook(path)[0]


def _check_notebook(path: Path) -> tuple[str | None, str | None]:
    """:func:`notebook_problem` and the note on the file's encoding (None for UTF-8)."""
    try:
        data, note = read_notebook_json(path)
        nb = _normalized(data)
        nbformat.validate(nb)
        nbformat.writes(nb).encode("utf-8")  # what staging writes
    except UnreadableNotebook as error:
        return f"not a valid notebook: {error}", None
    except UnicodeEncodeError:
        return ("not a valid notebook: it holds text that cannot be written as UTF-8 (a lone "
                "surrogate such as \\ud800)"), None
    except Exception as error:  # nbformat raises several types for bad structure
        first = (str(error).splitlines() or [""])[0][:200]
        return f"not a valid notebook: {first or type(error).__name__}", None
    if not any("nbgrader" in cell.get("metadata", {}) for cell in nb.cells):
        return ("not a valid notebook for grading: its nbgrader cell metadata was stripped "
                "(was it copied into a new notebook?)"), note
    return None, note


def stage(sub: Submission, staged_root: Path, release_dir: Path | None = None) -> Path:
    """Copy the gradable files of ``sub`` to ``<staged_root>/<student>/<assignment>/`` (each notebook
    under the assignment's name for it, normalized by :func:`read_notebook`) and return that
    folder. nbgrader reads only this copy, so the submitted files cannot change.

    With ``release_dir`` (holding ``<assignment>/<notebook>.ipynb``), each notebook is also repaired
    against its release by :func:`repair_grade_cells` (:func:`staged_notebook`); what was done is
    added to ``sub.notes``. The other files of the folder are copied while they take no more
    than :data:`MAX_OTHER_FILES_BYTES` together; symbolic links, what is not a regular file, and
    a ``timestamp.txt`` nbgrader could not read are left out, with a note.
    """
    dest = Path(staged_root) / sub.student_id / sub.assignment_id
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    budget = MAX_OTHER_FILES_BYTES
    for path in sorted(sub.folder.iterdir()):
        if path.suffix == ".ipynb" or path.is_dir() and not path.is_symlink():
            continue
        shown = printable(path.name)
        try:
            data = read_capped(path, budget)
        except FileTooLarge as error:
            sub.notes.append(f"left out '{shown}' ({error} left of the "
                             f"{_mib(MAX_OTHER_FILES_BYTES)} the other files of a submission may take)")
            continue
        except UnreadableNotebook as error:
            sub.notes.append(f"left out '{shown}' ({error})")
            continue
        if path.name == "timestamp.txt" and not _nbgrader_timestamp(data):
            sub.notes.append("left out 'timestamp.txt' (not a time nbgrader can read)")
            continue
        budget -= len(data)
        (dest / path.name).write_bytes(data)
    for name, path in sub.notebooks.items():
        if name not in sub.problems:
            released = Path(release_dir or "") / sub.assignment_id / f"{name}.ipynb"
            nb, notes = staged_notebook(
                path, released if release_dir is not None and released.exists() else None)
            sub.notes += notes
            nbformat.write(nb, dest / f"{name}.ipynb")
    return dest


def staged_notebook(path: Path, released: Path | None) -> tuple:
    """The notebook that grading runs for the submitted file ``path``: read by
    :func:`read_notebook`, repaired against the ``released`` notebook (when given) by
    :func:`repair_grade_cells`; and the notes of the repair. :func:`stage` writes it, the scan
    (:func:`~.scan.review_flags`) reads it."""
    nb = read_notebook(path)
    notes = repair_grade_cells(nb, nbformat.read(released, as_version=4)) if released else []
    return nb, notes


def _nbgrader_timestamp(data: bytes) -> bool:
    """Whether nbgrader can read ``data`` as the contents of a ``timestamp.txt``."""
    from nbgrader.utils import parse_utc

    try:
        text = data.decode("utf-8").strip()
        return not text or parse_utc(text) is not None
    except Exception:
        return False


def _grade_id(cell) -> str | None:
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
    released = {_grade_id(c): c for c in release.cells if _grade_id(c)}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta is None:
            continue
        source = released.get(_grade_id(cell))
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
    mine = {_grade_id(c): c for c in read_notebook(submitted).cells}
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
