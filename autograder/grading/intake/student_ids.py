"""A student id nbgrader can use for every student folder name, the same from run to run.

nbgrader puts student ids into file patterns and paths, so a folder named ``jane doe``,
``o'neil``, ``lee (2)`` or ``kim[2]`` (as LMS exports and browsers name them) cannot be its own id.
Such a folder gets a safe id: its name made of the characters nbgrader takes, then ``-`` and the
first 8 hex digits of the SHA-256 of the name (``jane_doe-1f0c3e2a``); an id taken already gets
more digits. A folder whose name nbgrader can use keeps it, unless an earlier folder holds that id
or the name has the shape of a safe id (``<slug>-<8 or more hex digits>``): such a name gets a safe
id of its own, so that no folder can be named after another's id and take it (the ids stay the
same even where ``student_ids.csv`` is lost).

A folder keeps its name only where that name is also plain ASCII and reads like no other
folder's name or id (:mod:`.intake.lookalike`): every report, ``grades.csv`` and the LMS files
show an id as it is, so ``ⅼee`` (a Roman numeral fifty) or ``аda`` (a Cyrillic а) would read as
a classmate's ``lee`` or ``ada``, and Canvas would match ``Ada`` and ``ada`` with one login. Such a
folder gets a safe id, and so does each name it reads like (a name that holds an id already keeps
it); a safe id is ASCII (``josé`` -> ``jose-<hex>``). :func:`lookalike_notes` names, for a person
to check, the folders that read alike and the names that mix scripts.

The mapping lives in the output folder, ``student_ids.csv`` (:attr:`~.layout.OutputLayout.student_ids`):
one row per folder ever graded there, ``folder`` (the name, escaped as every report cell is),
``student_id`` and ``folder_hex`` (the name's UTF-8 bytes in hex, the exact key, since an
escaped cell can stand for two names). It is read back on every run, so ids never change; a
folder met for the first time never takes an id the file holds.
"""
from __future__ import annotations

import csv
import hashlib
import re
from pathlib import Path

from autograder.grading.defaults import STUDENT_ID
from autograder.grading.intake.lookalike import alike, ascii_form, mixed_scripts, shown
from autograder.grading.layout import gradebook_lock
from autograder.grading.report_text import csv_cell, printable, write_csv

HEADER = ["folder", "student_id", "folder_hex"]
# The shape of a derived id (derived_id): a folder named so never keeps its name as its id.
DERIVED = re.compile(r".*-[0-9a-f]{8,}(-\d+)?")


class StudentIdsError(ValueError):
    """The output folder's ``student_ids.csv`` cannot be read or was changed so that an id is
    unsafe or given twice; the message names the line and how to repair it."""


def derived_id(name: str, taken: set[str]) -> str:
    """The safe id of the folder name ``name`` (see the module): not in ``taken``, always
    matching :data:`~.defaults.STUDENT_ID`, plain ASCII."""
    slug = re.sub(r"[^\w.@+-]+", "_", ascii_form(name)).strip("_.@+-")[:40].rstrip("_.@+-") or "student"
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()
    candidates = [f"{slug}-{digest[:n]}" for n in (8, 16, 64)]
    number = 2
    while all(c in taken for c in candidates):
        candidates.append(f"{slug}-{digest}-{number}")
        number += 1
    return next(c for c in candidates if c not in taken)


def read_ids(path: Path) -> dict[str, str]:
    """Folder name -> student id, from a ``student_ids.csv``.

    Raises:
        StudentIdsError: the file is not UTF-8 CSV with :data:`HEADER`, or a row's ``folder_hex``
            is not the hex of its ``folder``, its id is not one nbgrader can use, or a folder or
            an id is listed twice."""
    def error(where: str, why: str) -> StudentIdsError:
        return StudentIdsError(
            f"{path}: {where}: {why}. It maps student folders to the ids the gradebook holds: "
            "repair that line, or delete the file to make it again (a folder whose name nbgrader "
            "can use is its own id, the others get the same ids again unless two collided)")

    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise error("cannot be read", f"{type(exc).__name__}: {exc}") from exc
    if not rows or rows[0] != HEADER:
        raise error("line 1", f"the header is not {','.join(HEADER)}")
    ids: dict[str, str] = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(HEADER):
            raise error(f"line {line}", f"{len(row)} cells, not {len(HEADER)}")
        shown, shown_id, hex_name = row
        student_id = shown_id.removeprefix("'")  # write_csv's mark before a leading - + @
        try:
            name = bytes.fromhex(hex_name).decode("utf-8")
        except ValueError:
            name = None
        if name is None or csv_cell(name) != shown:
            raise error(f"line {line}", "folder_hex is not the hex of the folder's name")
        if not STUDENT_ID.fullmatch(student_id) or csv_cell(student_id) != shown_id:
            raise error(f"line {line}", f"'{printable(shown_id)}' is not an id nbgrader can use")
        if name in ids or student_id in ids.values():
            raise error(f"line {line}", "a folder or an id listed twice")
        ids[name] = student_id
    return ids


def assign_ids(names: list[str], path: Path | None = None) -> dict[str, str]:
    """Folder name -> student id for each of ``names`` (folder names :func:`.submissions.student_id_problem`
    accepts), and, with ``path``, the mapping read from and written back to that
    ``student_ids.csv`` (under the output folder's gradebook lock, so two runs never interleave).

    Without ``path`` the ids are the same for the same names but not kept.

    Raises:
        StudentIdsError: ``path`` exists and :func:`read_ids` refuses it (nothing is written)."""
    if path is None:
        return _assign(names, {})
    with gradebook_lock(Path(path).parent):
        known = read_ids(path) if Path(path).exists() else {}
        ids = _assign(names, known)
        if ids.keys() - known.keys():
            rows = {**known, **ids}
            write_csv(path, HEADER, ([name, rows[name], name.encode("utf-8").hex()]
                                     for name in sorted(rows)))
    return {name: ids[name] for name in names}


def _assign(names: list[str], known: dict[str, str]) -> dict[str, str]:
    """``known`` with an id for each new name: its own where nbgrader can use it, it is ASCII,
    no other id holds it and no other folder or id differs from it only in case (these first),
    else :func:`derived_id`.

    An ASCII name that merely reads like another (``ada_fu1l``, ``ada_full``) keeps its name: both
    are distinct logins, and giving the classmate's folder a safe id would break her row in the
    LMS files; :func:`lookalike_notes` flags both. Names that differ only in case both get safe
    ids: Canvas matches logins without case, so one student's row could overwrite the other's."""
    ids = dict(known)
    taken = set(known.values())
    new = sorted(set(names) - known.keys())
    case_twins = {name for name, (_, case) in alike({*names, *known, *taken}).items() if case}
    for name in new:
        if STUDENT_ID.fullmatch(name) and name.isascii() and name not in taken and \
                not DERIVED.fullmatch(name) and name not in case_twins:
            ids[name] = name
            taken.add(name)
    for name in new:
        if name not in ids:
            ids[name] = derived_id(name, taken)
            taken.add(ids[name])
    return ids


def lookalike_notes(ids: dict[str, str]) -> dict[str, list[str]]:
    """Folder name -> what a person should check about it, for the folders of ``ids`` (folder
    name -> its student id, as :func:`assign_ids` gives them): each other folder of ``ids`` it
    reads like or that differs from it only in case (both named, with their ids), and the scripts
    it mixes; a folder with nothing to check is not in it."""
    notes: dict[str, list[str]] = {}
    for name, (looks, case) in alike(ids).items():
        notes[name] = [f"folder {shown(name)} reads like folder {shown(other)} (the same Unicode "
                       f"confusable skeleton): graded as {ids[name]} and {ids[other]}; check whose "
                       "each is before grades go to the LMS" for other in looks]
        notes[name] += [f"folders {shown(name)} and {shown(other)} differ only in case, which Canvas "
                        f"ignores when it matches logins: graded as {ids[name]} and {ids[other]}"
                        for other in case]
    for name in ids:
        scripts = mixed_scripts(name)
        if scripts:
            notes.setdefault(name, []).append(
                f"folder {shown(name)} mixes scripts in one name ({', '.join(scripts)}), as a "
                f"look-alike does: graded as {ids[name]}")
    return notes
