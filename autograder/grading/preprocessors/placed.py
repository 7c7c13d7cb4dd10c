"""A notebook's other files in its sandbox's working folder, as plain ``nbgrader autograde`` runs
a notebook in the folder that holds them: the data files nbgrader copied from the source folder
(``data.csv``, ``data/train.csv``) and those the student submitted beside the notebook, and the
files an earlier notebook of the same submission wrote (:data:`.preprocessors.written.WRITTEN`).

A sandboxed kernel works in a private folder (:data:`~.defaults.WORKDIR`) that sees nothing of the
host's, so before the notebook's first cell, while no student code has run, the grader writes each
file there (:mod:`.kernel_side.placed_files`), in pieces. Placed: regular files at most
:data:`MAX_DEPTH` folders deep whose every part is a name of :data:`~.defaults.WRITTEN_NAME`, at
most :data:`MAX_PLACED_FILES` of them taking at most :data:`MAX_PLACED_BYTES` together. Never
placed: the notebooks and ``timestamp.txt`` at the top, names starting with a dot, links, and
files that act by where they lie (:data:`~.defaults.WRITTEN_REFUSED`: a ``.py`` file submitted
beside a notebook would be code the grader's scan never reads). What is not placed is noted.
"""
from __future__ import annotations

import base64
import os
from pathlib import Path

from autograder.grading.defaults import WRITTEN_CHUNK_BYTES, WRITTEN_NAME, WRITTEN_REFUSED
from autograder.grading.report_text import printable

SOURCE = (Path(__file__).parents[1] / "kernel_side" / "placed_files.py").read_text()

MAX_DEPTH = 4
MAX_PLACED_FILES = 500
# Under the working folder's own size (defaults.WORK_SIZE_MB), leaving room for what cells write.
MAX_PLACED_BYTES = 128 * 2**20
# Notes on what was not placed, per notebook.
MAX_NOTES = 10


def files_to_place(folder: Path, written: dict[str, bytes]) -> tuple[dict[str, Path | bytes],
                                                                      list[str]]:
    """What to place for a notebook in ``folder`` (on the host): ``({relative path with "/": the
    file, or its bytes for a file in written}, [why each file left out was]) ``; ``written``: the
    files earlier notebooks of the submission wrote (name -> bytes), placed unless ``folder``
    holds a file of that name."""
    chosen: dict[str, Path | bytes] = {}
    notes: list[str] = []
    total = 0

    def take(rel: str, size: int, what: Path | bytes) -> None:
        nonlocal total
        parts = rel.split("/")
        if not all(WRITTEN_NAME.fullmatch(part) for part in parts):
            notes.append(f"'{printable(rel)[:120]}' (a name with characters the grader does not copy)")
        elif WRITTEN_REFUSED.fullmatch(parts[-1]):
            notes.append(f"'{rel}' (a kind of file that acts by where it lies: a notebook, Python, "
                         "a config)")
        elif len(chosen) >= MAX_PLACED_FILES:
            notes.append(f"'{rel}' (past the {MAX_PLACED_FILES} files placed)")
        elif total + size > MAX_PLACED_BYTES:
            notes.append(f"'{rel}' ({size:,} bytes, past the {MAX_PLACED_BYTES // 2**20} MiB placed)")
        else:
            chosen[rel] = what
            total += size

    for top, dirs, files in os.walk(folder, followlinks=False):
        depth = len(Path(top).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__"
                         and depth < MAX_DEPTH and not os.path.islink(os.path.join(top, d)))
        for name in sorted(files):
            path = Path(top) / name
            rel = path.relative_to(folder).as_posix()
            if name.startswith(".") or depth == 0 and (name.endswith(".ipynb") or name == "timestamp.txt"):
                continue
            if path.is_symlink() or not path.is_file():
                notes.append(f"'{printable(rel)[:120]}' (not a regular file)")
                continue
            take(rel, path.stat().st_size, path)
    for name, data in sorted(written.items()):
        if not (folder / name).exists():
            take(name, len(data), data)
    return chosen, notes


async def place(ask, timeout_s: float, folder: Path, workdir: str, notebook: str,
                written: dict[str, bytes]) -> tuple[dict[str, int | None], list[str]]:
    """Write the files :func:`files_to_place` chooses for the notebook ``notebook`` in ``folder``
    into the kernel's ``workdir``. ``ask(expression, timeout_s)`` evaluates a Python expression in
    the kernel and returns ``(result, problem)`` (``GradingExecute._ask``). Returns ``({top-level name: its
    size in bytes, or None for a folder}, notes)``: what is now in ``workdir`` and the notes on
    what is not. Never raises for what the kernel answers."""
    chosen, why = files_to_place(folder, written)
    notes = [f"{notebook}: left out of the sandbox's working folder {reason}; a cell that reads it "
             "fails" for reason in why[:MAX_NOTES]]
    if len(why) > MAX_NOTES:
        notes.append(f"{notebook}: {len(why) - MAX_NOTES} more files left out of the sandbox's working folder")
    placed: dict[str, int | None] = {}
    for rel, what in chosen.items():
        data = what if isinstance(what, bytes) else what.read_bytes()
        size = None
        for offset in range(0, max(len(data), 1), WRITTEN_CHUNK_BYTES):
            piece = base64.b64encode(data[offset:offset + WRITTEN_CHUNK_BYTES]).decode()
            result, problem = await ask(
                f"(lambda ns: (exec({SOURCE!r}, ns), ns['place']({workdir!r}, {rel!r}, "
                f"__import__('base64').b64decode({piece!r}), {offset > 0}))[1])({{}})", timeout_s)
            text = ((result or {}).get("data") or {}).get("text/plain") if isinstance(result, dict) else None
            size = int(text) if isinstance(text, str) and text.isdigit() else None
            if problem or size != min(len(data), offset + WRITTEN_CHUNK_BYTES):
                break
        if size != len(data):
            notes.append(f"{notebook}: '{rel}' could not be placed in the sandbox's working folder")
            continue
        top, _, rest = rel.partition("/")
        placed[top] = None if rest else len(data)
    return placed, notes
