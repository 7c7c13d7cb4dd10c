"""Find, validate and stage a class's submissions without ever writing to them.

Layout (nbgrader's): ``<submitted>/<student_id>/<assignment_id>/<notebook>.ipynb``, optionally with
nbgrader's ``timestamp.txt`` beside the notebooks.

Every file is read safely (:func:`read_notebook`): nothing of one submission can raise past it
(a file too large, not a regular file, in another encoding, JSON nested too deeply or not an
object); each such file gets its reason (:func:`notebook_problem`), and the rest of the class is
graded.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.grading.defaults import MAX_OTHER_FILES_BYTES, MAX_TIMESTAMP_BYTES
from autograder.grading.intake.reading import (
    FileTooLarge,
    UnreadableNotebook,
    _check_notebook,
    _mib,
    read_capped,
    read_notebook,
)
from autograder.grading.intake.align import Unalignable, align_with_release
from autograder.grading.intake.markers import neutralize_markers
from autograder.grading.intake.repair import repair_grade_cells
from autograder.grading.intake.student_ids import assign_ids, lookalike_notes
from autograder.grading.report_text import printable


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
    review: list[str] = field(default_factory=list)  # for a person to check; scores unchanged

    @property
    def key(self) -> str:
        return f"{self.student_id}/{self.assignment_id}"


def find_submissions(submitted_dir: Path, expected: dict[str, list[str]],
                     ids_file: Path | None = None) -> list[Submission]:
    """Every ``<student>/<assignment>`` folder of ``submitted_dir`` for the assignments of
    ``expected`` (assignment id -> its notebook names), sorted by student then assignment, each
    notebook validated with :func:`notebook_problem`.

    A notebook file with another name (``01_gradient_tape (1).ipynb``, as a browser names a second
    download) stands for the assignment's notebook when it is the only candidate; other extra
    notebooks are left out. Both are said in ``notes``. Each submission's ``student_id`` is the
    id nbgrader grades it under: the folder's name, or a safe id for a name nbgrader cannot use
    (:func:`~.intake.student_ids.assign_ids`, kept in ``ids_file``, the output folder's
    ``student_ids.csv``, when given); a folder :func:`student_id_problem` refuses keeps its name,
    unprintable characters escaped. A folder that reads like another or mixes scripts has that in
    its ``review`` (:func:`~.intake.student_ids.lookalike_notes`). A symbolic link (to a solution,
    to another student's file) is never followed: such a notebook or folder is refused, such an
    extra file left out.

    Raises:
        StudentIdsError: ``ids_file`` exists and cannot be read or was changed unsafely.
    """
    found = []
    student_dirs = sorted(p for p in Path(submitted_dir).iterdir() if _is_dir(p))
    ids = assign_ids([d.name for d in student_dirs if not student_id_problem(d.name)
                      and any(_is_dir(d / a) for a in expected)], ids_file)
    lookalikes = lookalike_notes(ids)
    for student_dir in student_dirs:
        for assignment_id, names in expected.items():
            folder = student_dir / assignment_id
            if not _is_dir(folder):
                continue
            sub = Submission(ids.get(student_dir.name) or printable(student_dir.name),
                             assignment_id, folder, review=list(lookalikes.get(student_dir.name, [])))
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
    """Why the student folder named ``student_id`` is not graded, or None (G15).

    A name nbgrader cannot use as it is (``jane doe``, ``kim[2]``) is graded under a safe id
    (:mod:`.intake.student_ids`). Refused, with this reason, are only a hidden folder (``.x``,
    ``..``), a path (``a/b``) and a name holding characters that do not show as themselves
    (control and format characters, bidi overrides, undecodable bytes: what
    :func:`~.report_text.printable` escapes), which would make the reports lie about whose work
    is whose; the rest of the class is graded."""
    odd = sorted({ch for ch in student_id if not ch.isprintable() or ch == "/"} |
                 ({"."} if student_id.startswith(".") else set()))
    if not odd:
        return None
    shown = " ".join(f"'{printable(ch)}'" for ch in odd)
    safe = printable(re.sub(r"[^\w.@+-]+", "_", student_id).strip("_.")) or "student"
    return (f"student folder '{printable(student_id)}' not graded: a hidden folder, a path, or a "
            f"name that does not show as it is (characters {shown}); rename the folder, for example "
            f"to '{safe}', and grade again")




def stage(sub: Submission, staged_root: Path, release_dir: Path | None = None) -> Path:
    """Copy the gradable files of ``sub`` to ``<staged_root>/<student>/<assignment>/`` (each notebook
    under the assignment's name for it, normalized by :func:`read_notebook`) and return that
    folder. nbgrader reads only this copy, so the submitted files cannot change.

    With ``release_dir`` (holding ``<assignment>/<notebook>.ipynb``), each notebook is also aligned
    with and repaired against its release (:func:`staged_notebook`); what was done is added to
    ``sub.notes``, and a notebook that cannot be aligned is not staged: its reason goes to
    ``sub.problems``. The other files of the folder are copied while they take no more than
    :data:`MAX_OTHER_FILES_BYTES` together; symbolic links, what is not a regular file, and a
    ``timestamp.txt`` nbgrader could not read are left out, with a note.

    Raises:
        Unalignable: a notebook was refused so and none of ``sub`` is left to grade (the message
            is its reason, as in ``sub.problems``).
    """
    dest = Path(staged_root) / sub.student_id / sub.assignment_id
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    budget = MAX_OTHER_FILES_BYTES
    for path in sorted(sub.folder.iterdir()):
        if path.name == "timestamp.txt" and (path.is_symlink() or not path.is_file()):
            sub.review.append(TIMESTAMP_LEFT_OUT.format(why="not a regular file"))
            continue
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
            sub.review.append(TIMESTAMP_LEFT_OUT.format(why="not a time nbgrader can read, or "
                                                            f"over {MAX_TIMESTAMP_BYTES} bytes"))
            continue
        budget -= len(data)
        (dest / path.name).write_bytes(data)
    refused = []
    for name, path in sub.notebooks.items():
        if name not in sub.problems:
            released = Path(release_dir or "") / sub.assignment_id / f"{name}.ipynb"
            try:
                nb, notes = staged_notebook(
                    path, released if release_dir is not None and released.exists() else None)
            except Unalignable as error:
                sub.problems[name] = str(error)
                refused.append(str(error))
                continue
            sub.notes += notes
            nbformat.write(nb, dest / f"{name}.ipynb")
    if refused and not sub.notebooks.keys() - sub.problems.keys():
        raise Unalignable("; ".join(refused))
    return dest


def staged_notebook(path: Path, released: Path | None) -> tuple:
    """The notebook that grading runs for the submitted file ``path`` and the notes on what was
    done to it: read by :func:`read_notebook`; against the ``released`` notebook (when given), the
    nbgrader metadata its cells lost recovered (:func:`~.intake.align.align_with_release`) and its
    cells repaired (:func:`repair_grade_cells`); then nbgrader's markers in the student's text made
    inert (:func:`~.intake.markers.neutralize_markers`). :func:`stage` writes it.

    Raises:
        Unalignable: its cells lost their nbgrader metadata and cannot be matched with the
            release's (the message says why).
    """
    nb = read_notebook(path)
    notes = []
    if released:
        release = nbformat.read(released, as_version=4)
        notes = align_with_release(nb, release) + repair_grade_cells(nb, release)
    return nb, notes + neutralize_markers(nb)


# A timestamp.txt the submission's own folder holds is the student's word (``nbgrader collect``
# writes it from the exchange; an LMS download or a shared drive lets the student write it): one
# that cannot be read is left out and flagged, since without it no late penalty applies.
TIMESTAMP_LEFT_OUT = ("timestamp.txt left out ({why}): the time of submission is unknown, so no "
                      "late penalty was applied; check when it was submitted")


def _nbgrader_timestamp(data: bytes) -> bool:
    """Whether nbgrader can read ``data`` as the contents of a ``timestamp.txt`` (at most
    :data:`~.defaults.MAX_TIMESTAMP_BYTES`: dateutil's parser takes minutes on megabytes)."""
    from nbgrader.utils import parse_utc

    if len(data) > MAX_TIMESTAMP_BYTES:
        return False
    try:
        text = data.decode("utf-8").strip()
        return not text or parse_utc(text) is not None
    except Exception:
        return False
