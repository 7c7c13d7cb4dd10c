"""The one way text reaches a report: every string a submission can choose (a folder or file
name, a message, a finding, a review flag, a cell name) goes through here before it is written
to the printed table, ``summary.txt``, a CSV or a log.

- :func:`printable` makes a string one line that a terminal shows as it is: control characters
  (newlines, carriage returns, ``ESC`` and so terminal escapes, ``BEL``), Unicode format
  characters (bidi overrides and isolates, zero-width characters), line and paragraph
  separators, private-use and unassigned code points, lone surrogates and the undecodable bytes of
  a file name are written as ``\\x1b``, ``\\n``, ``\\u202e``... Printable text is left as it is,
  so escaping twice changes nothing.
- :func:`render` joins report lines, each through :func:`printable`: the text functions of
  :mod:`.run.reports` and the command return what it gives, so no line of theirs can hold a second,
  forged one.
- :func:`write_csv` writes every cell through :func:`csv_cell`: escaped as above, and a cell that
  would start a spreadsheet formula (``=``, ``+``, ``-``, ``@``, tab, carriage return, or their
  full-width forms) gets a leading ``'``, as OWASP recommends; plain numbers stay numbers
  (nbgrader's ``grades.csv`` is read back and written so, with its extra columns).
- :func:`printable_block` is :func:`printable` keeping line breaks and tabs, for logs.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Iterable

# The first characters with which a spreadsheet reads a cell as a formula (OWASP, "CSV
# Injection"), with the full-width forms some spreadsheets take for them.
FORMULA_START = frozenset("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}" if ch not in "\n\r\t" else {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch]
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text) -> str:
    """``text`` (any object: its ``str``) as one line a terminal, a spreadsheet and UTF-8 show
    safely: what is not printable is written as an escape (see the module)."""
    text = text if isinstance(text, str) else str(text)
    # str.isprintable() is False for the categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs but space.
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def printable_block(text) -> str:
    """:func:`printable`, keeping line breaks and tabs (a log read with ``cat`` or ``less``):
    carriage returns, terminal escapes and bidi controls are still escaped."""
    return "\n".join("\t".join(printable(part) for part in line.split("\t"))
                     for line in str(text).split("\n"))


def render(lines: Iterable) -> str:
    """Report lines joined by newlines, each one made :func:`printable` (one line each)."""
    return "\n".join(printable(line) for line in lines)


def csv_cell(value) -> str:
    """One CSV cell: :func:`printable`, and a leading ``'`` where a spreadsheet would otherwise
    read a formula (a plain number such as ``-1.5`` is left as it is)."""
    text = printable("" if value is None else value)
    start = text.lstrip(" ")[:1]
    if start and start in FORMULA_START and not _NUMBER.fullmatch(text.strip()):
        return "'" + text
    return text


def write_csv(path: Path, header: list[str], rows: Iterable[Iterable]) -> None:
    """Write a CSV file, every cell (the header's too) through :func:`csv_cell`."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([csv_cell(cell) for cell in header])
        for row in rows:
            writer.writerow([csv_cell(cell) for cell in row])

