"""The files a notebook writes in its kernel's working folder, read back after its last cell, so
that they end beside its autograded notebook as plain ``nbgrader autograde`` leaves them (a plot
saved for manual grading, a results file).

A sandboxed kernel works in a private, size-limited folder (:data:`~.defaults.WORKDIR`) that the
grader cannot see; :class:`~.preprocessors.execute.GradingExecute` asks the kernel, through the
door (the integrity check's route, :mod:`.kernel_side.written_files`), for the list of that folder
and then for each file it keeps, in pieces. What comes back is untrusted: every name, kind and
size is checked here again. Kept: regular files at the top of the folder with names of
:data:`~.defaults.WRITTEN_NAME`, at most :data:`~.defaults.MAX_WRITTEN_FILES` of them, taking
at most :data:`~.defaults.MAX_OTHER_FILES_BYTES` together (the limit of a submission's other
files), never one named as a file of the submission (its notebooks, ``timestamp.txt``, its other
files), never a file that acts by where it lies (:data:`~.defaults.WRITTEN_REFUSED`: a notebook,
which nbgrader's feedback would convert, Python and config files that tools run from the folder
would load). Left out, with a note (at most :data:`~.defaults.MAX_WRITTEN_NOTES` a notebook):
links, folders, other kinds, odd names, what is past a limit or the copy-back's time
(:data:`~.defaults.WRITTEN_SECONDS`). The kernel's listing is cut to :data:`MAX_LISTED` entries
before anything else is done with it.
Names starting with a dot (IPython's, matplotlib's and Keras's own folders) and ``__pycache__``
are left out without one.
"""
from __future__ import annotations

from pathlib import Path

import time

from autograder.grading.defaults import (
    MAX_OTHER_FILES_BYTES,
    MAX_WRITTEN_FILES,
    MAX_WRITTEN_NOTES,
    WRITTEN_CHUNK_BYTES,
    WRITTEN_NAME,
    WRITTEN_REFUSED,
    WRITTEN_SECONDS,
)
from autograder.grading.preprocessors import door
from autograder.grading.report_text import printable

SOURCE = (Path(__file__).parents[1] / "kernel_side" / "written_files.py").read_text()

# This job's files (name -> bytes) and the notes on what was left out, filled notebook by notebook
# (a later notebook's file replaces an earlier one of the same name, as in nbgrader's one
# folder); a grading job clears them first (one job at a time per process).
WRITTEN: dict[str, bytes] = {}
NOTES: list[str] = []

# The most entries of the folder listed (IPython's pretty printer shortens longer lists).
MAX_LISTED = 500

_KINDS = {"file", "link", "folder", "other"}


def left_out(name, kind, size, submitted: set[str]) -> str | None:
    """Why the entry ``name`` (untrusted: ``kind`` as :mod:`.kernel_side.written_files` says it,
    ``size`` in bytes) of the kernel's folder is not copied back; "" to leave it out without a
    note; None to copy it. ``submitted``: the names of the submission's own files."""
    if name.startswith(".") or name == "__pycache__":
        return ""
    if kind != "file":
        return {"link": "a symbolic link", "folder": "a folder"}.get(kind, "not a regular file")
    if not WRITTEN_NAME.fullmatch(name):
        return "a name with characters the grader does not copy"
    if name in submitted or name == "timestamp.txt":
        return "a file of the submission has that name"
    if WRITTEN_REFUSED.fullmatch(name):
        return "a kind of file that acts by where it lies (a notebook, Python, a config)"
    others = {k: v for k, v in WRITTEN.items() if k != name}
    if len(others) >= MAX_WRITTEN_FILES:
        return f"past the {MAX_WRITTEN_FILES} files copied back"
    if size + sum(len(v) for v in others.values()) > MAX_OTHER_FILES_BYTES:
        return f"{size:,} bytes, past the {MAX_OTHER_FILES_BYTES // 2**20} MiB copied back"
    return None


def through_door(execute):
    """The ``ask`` of :func:`collect` for ``execute``, a
    :class:`~.preprocessors.execute.GradingExecute` whose kernel is still alive: each request
    through its door (the integrity check's route), checked as every answer is."""
    async def ask(arguments: str):
        if execute._door is None:
            raise ValueError("the grader's door into the kernel is missing")
        result, problem = await execute._ask(door.through(
            execute._door, "probe", f"{SOURCE!r}, ({arguments},)"), execute.probe_timeout_s)
        if problem:
            raise ValueError(problem)
        return door.read(execute._door, "probe", result)
    return ask


async def collect(ask, folder: str, notebook: str, submitted: set[str], shared: bool,
                  placed: dict[str, int | None] | None = None) -> None:
    """Read the files the kernel's notebook ``notebook`` wrote in ``folder`` (the kernel's path)
    into :data:`WRITTEN`, and what was left out into :data:`NOTES`.

    ``ask(arguments)`` is a coroutine that runs :mod:`.kernel_side.written_files`'s ``probe`` with
    ``arguments`` (Python source) through the door and returns its answer, raising ValueError
    when none came. ``submitted``: the names of the submission's files; ``shared``: the kernel
    works in the notebook's own folder (no sandbox), where those files are expected; ``placed``:
    what :mod:`.preprocessors.placed` put in ``folder`` before the first cell (top-level name: size
    in bytes, None for a folder), left out without a note while its size is unchanged. Never
    raises for what the kernel sends."""
    placed = placed or {}
    noted = []

    def note(name, why):
        noted.append(f"{notebook}: left out '{printable(name)[:120]}', a file it wrote ({why})")

    try:
        entries = await ask(f"{folder!r}, None, 0, 0, {MAX_LISTED}")
    except ValueError as error:
        NOTES.append(f"{notebook}: the files it wrote could not be read ({printable(error)[:200]})")
        return
    # The kernel's answer is cut to what an honest listing holds before any work is done on it.
    entries = sorted(e for e in (entries if isinstance(entries, list) else [])[:MAX_LISTED]
                     if isinstance(e, tuple) and len(e) == 3 and isinstance(e[0], str)
                     and len(e[0]) <= 255 and e[1] in _KINDS and type(e[2]) is int and e[2] >= 0)
    deadline = time.monotonic() + WRITTEN_SECONDS
    for name, kind, size in entries:  # by name: the same files are kept whatever the order
        if shared and name in submitted or name in placed and placed[name] in (None, size):
            continue
        why = left_out(name, kind, size, submitted)
        if why is None and time.monotonic() > deadline:
            why = f"the files it wrote took over {WRITTEN_SECONDS} s to read"
        if why:
            note(name, why)
        if why is not None:
            continue
        parts, offset = [], 0
        while offset < size:
            want = min(WRITTEN_CHUNK_BYTES, size - offset)
            try:
                part = await ask(f"{folder!r}, {name!r}, {offset}, {want}, 0")
            except ValueError as error:
                part = str(error)
            # A piece shorter than asked (the file shrank, or a kernel reads byte by byte) or a
            # read past the time allowed ends the file: it is left out.
            if not isinstance(part, bytes) or len(part) != want or time.monotonic() > deadline:
                parts = None
                note(name, "it could not be read whole in time")
                break
            parts.append(part)
            offset += len(part)
        if parts is not None:
            WRITTEN[name] = b"".join(parts)[:size]
    NOTES.extend(noted[:MAX_WRITTEN_NOTES])
    if len(noted) > MAX_WRITTEN_NOTES:
        NOTES.append(f"{notebook}: {len(noted) - MAX_WRITTEN_NOTES} more files it wrote left out")
