"""Read a submitted file as a notebook, safely: capped, regular files only, any encoding with a BOM,
nesting checked; nothing of one file can raise past it.
"""
from __future__ import annotations

import codecs
import errno
import hashlib
import json
import os
import re
import stat
from pathlib import Path

import nbformat

from autograder.grading.defaults import MAX_JSON_DEPTH, MAX_NOTEBOOK_BYTES
from autograder.grading.report_text import printable

# Byte order marks of the encodings a notebook file is read in besides UTF-8 (UTF-32 before
# UTF-16: its little-endian mark starts with UTF-16's).
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
         (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"), (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
         (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"))


class UnreadableNotebook(ValueError):
    """A file that cannot be read as a notebook; the message says why, for the report."""


class FileTooLarge(UnreadableNotebook):
    """A file larger than what may be read of it."""


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
            cell["id"] = stable_id(f"{index}:{cell.get('source', '')}", seen)
        seen.add(cell["id"])
        cell.setdefault("metadata", nbformat.NotebookNode())
    nb.metadata.pop("widgets", None)
    return nb


def notebook_problem(path: Path) -> str | None:
    """Why ``path`` cannot be graded, or None when it is a valid nbgrader notebook (G05).

    Catches symbolic links, files that are not regular files, too large, not UTF-8 (or UTF-16 or
    UTF-32 with a byte order mark), not JSON (an HTML page saved as .ipynb, a truncated download),
    nested too deeply, and JSON that is not a valid notebook or cannot be staged. A notebook whose
    cells lost their nbgrader metadata is judged against its release when it is staged
    (:func:`~.intake.align.align_with_release`). Never raises.
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
    return None, note


def stable_id(text: str, taken: set) -> str:
    """A cell id made from ``text``, not yet in ``taken``: the same notebook always gets the same
    ids, so a submission staged again is recognised as unchanged (resume)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    for start in range(0, len(digest) - 8):
        if digest[start:start + 8] not in taken:
            return digest[start:start + 8]
    raise ValueError("no free cell id")  # 56 tries of 8 hex digits: not in practice
