"""Answer similarity: which students of a graded class wrote suspiciously alike answers, as a
list for an instructor to look at. It never changes a score: it only reads the autograded
notebooks and writes its own files (``similarity_pairs.csv``, ``similarity.html``, lines for
``summary.txt``); nothing goes back to nbgrader's database or to the grades.

Only answer cells are compared (code cells whose ``metadata.nbgrader.solution`` is true, taken
by the grade_ids of the release): autodiff answers are short and formulaic, so whole notebooks
would look alike for everyone. Per assignment, a student's document is their own lines of each
answered cell (the lines that are not lines of the release's stub: the signature, docstring,
``# YOUR CODE HERE`` and ``raise NotImplementedError()`` go), each after a comment line
``# ---- cell <grade_id> ----``. The release's code cells (the stubs and the given code around
them) are also copydetect's boilerplate, so given code copied into an answer does not count. A
cell whose own lines are shorter than one k-gram is left out (a prediction such as
``predicted_traces = 3`` is what every right answer is), and so is a student with no answered
cell: two blank notebooks are not a copy.

The comparison is copydetect's (https://github.com/blingenf/copydetect). It tokenizes the code
with pygments and writes names of variables and attributes as ``V``, of functions ``F``, of
classes ``O``, strings ``S``, and drops comments and whitespace: renamed variables, added
comments and reformatting change nothing. A document's fingerprints are the hashes of the
k-grams (``noise_t`` characters) of that text selected by winnowing (Schleimer, Wilkerson and
Aiken, "Winnowing: local algorithms for document fingerprinting", SIGMOD 2003), less the
boilerplate's. The window here is 1 (``guarantee_t = noise_t``): every k-gram is a fingerprint,
which answers this short afford, and which makes the result the same in every run (a wider
window picks the smallest of Python's per-process string hashes, so the scores would change
from one run to the next).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from autograder.grading.report_text import printable, write_csv

# k, in characters of copydetect's filtered text: copydetect's default, and the best of those
# measured on the class of tests/test_similarity.py (three answers of 1-9 lines; the larger side):
# planted copies 0.96, 0.83 and 0.78 at k = 25, independent correct answers at most 0.24, but
# 0.44 at k = 20 and 0.57 at k = 12 (tf.constant and tf.convert_to_tensor are both V.V once
# filtered, so short TensorFlow answers look alike in short k-grams).
NOISE_T = 25
# Halfway between those at k = 25: independent answers at most 0.24, copies at least 0.78.
THRESHOLD = 0.5
MAX_NOTEBOOK_BYTES = 32 * 2**20  # a larger file is skipped (autograded notebooks hold outputs)
MAX_ANSWER_CHARS = 200_000  # one student's answers to one assignment, or they are skipped
REFERENCE = "reference/"  # the prefix of a reference solution's name (a student id has no "/")
CSV_HEADER = ["student_a", "student_b", "assignment_id", "similarity", "cells", "folder_a", "folder_b"]
_EMPTY_HTML = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Answer similarity"
               "</title></head><body><p>No two answers to compare.</p></body></html>\n")


@dataclass(frozen=True)
class Pair:
    """Two documents of one assignment that share fingerprints.

    ``student_a`` and ``student_b`` are student ids (the autograded folder's names), ``a`` before
    ``b``; with a reference solution ``student_b`` is ``"reference/<name>"``. ``similarity`` is
    in 0..1: copydetect's ``compare_files`` gives, for each side, the characters of its filtered
    text under fingerprints the other side has too, divided by those under any of its
    non-boilerplate fingerprints; this is the larger of the two. The larger, because a copy with
    code added, or a part of a longer reference, is still found (the mean would halve it), and
    because copydetect's own report lists a pair when either side is above its threshold. The
    price: a short answer made of idioms the other also wrote scores high, so read ``cells`` and
    the report before concluding. ``cells`` are the grade_ids (``notebook/grade_id`` where an
    assignment has several notebooks) of the cells that share fingerprints when fingerprinted
    alone (a k-gram across two cells of the document counts in ``similarity`` but names no
    cell), in the release's order.
    """
    student_a: str
    student_b: str
    assignment_id: str
    similarity: float
    cells: tuple[str, ...]


@dataclass(frozen=True)
class ClassSimilarity:
    """What :func:`compare_class` found: ``pairs`` ranked by similarity (descending), ``notes``
    (one line each: the inputs skipped and why) and ``html``, copydetect's report."""
    pairs: tuple[Pair, ...]
    notes: tuple[str, ...]
    html: str


def answer_sources(notebook_json) -> dict[str, str]:
    """grade_id -> source of each answer cell (a code cell whose ``metadata.nbgrader.solution``
    is ``true`` and that has a str ``grade_id``) of one notebook's parsed JSON, in notebook order.

    The notebook is untrusted: a cell that is not a dict, whose metadata is missing or odd, or
    whose source is neither a str nor a list of str is skipped; a grade_id used twice gets its
    cells' sources joined by a newline. Never raises; anything but a notebook dict gives ``{}``.
    """
    cells = notebook_json.get("cells") if isinstance(notebook_json, dict) else None
    sources: dict[str, str] = {}
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata")
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        if not isinstance(nbgrader, dict) or nbgrader.get("solution") is not True:
            continue
        grade_id, source = nbgrader.get("grade_id"), cell.get("source")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(grade_id, str) or not grade_id or not isinstance(source, str):
            continue
        sources[grade_id] = sources[grade_id] + "\n" + source if grade_id in sources else source
    return sources


def _code_cells(notebook_json: dict) -> list[str]:
    """The sources of all code cells of a (release) notebook, skipping odd ones."""
    cells = notebook_json.get("cells")
    out = []
    for cell in cells if isinstance(cells, list) else []:
        source = cell.get("source") if isinstance(cell, dict) and cell.get("cell_type") == "code" else None
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if isinstance(source, str):
            out.append(source)
    return out


def _read_notebook(path: Path, shown: str, notes: list[str]) -> dict | None:
    """The parsed JSON of the notebook at ``path``, or None with a note when it is not a plain
    file, is larger than MAX_NOTEBOOK_BYTES or is not a JSON object."""
    try:
        if path.is_symlink() or not path.is_file():
            notes.append(f"skipped {shown}: not a plain file")
            return None
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            notes.append(f"skipped {shown}: larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
            return None
        notebook = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        notes.append(f"skipped {shown}: not a JSON notebook ({type(error).__name__})")
        return None
    if not isinstance(notebook, dict):
        notes.append(f"skipped {shown}: not a JSON notebook (not an object)")
        return None
    return notebook


def _clean(text: str) -> str:
    """``text`` with one kind of newline and a lone surrogate (a JSON ``\\ud800``) as ``?``, so
    that it can be written as UTF-8 and reads back the same."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.encode("utf-8", "replace").decode("utf-8")


def _slug(name: str) -> str:
    """A file name for ``name`` that is safe in copydetect's report, which writes file names
    without HTML escaping in its file lists: letters, digits and ``._-`` are kept, every other
    character is percent-encoded (so ``evil<script>`` is ``evil%3Cscript%3E``); one-to-one, and
    a long name is cut and given a hash."""
    slug = "".join(ch if (ch.isalnum() and ch.isprintable()) or ch in "._-"
                   else "".join(f"%{byte:02X}" for byte in ch.encode("utf-8", "surrogateescape"))
                   for ch in name)
    if len(slug) > 150:
        slug = slug[:120] + "~" + hashlib.sha256(slug.encode()).hexdigest()[:16]
    return slug


@dataclass
class _Document:
    label: str  # a student id or "reference/<name>"
    assignment_id: str
    cells: dict[str, set]  # cell label -> the fingerprints of that cell alone, release's order


def _own_lines(source: str, stub: str) -> str:
    """The lines of an answer cell that are not lines of its stub (the signature, docstring and
    stub lines a student keeps are not theirs)."""
    given = {line.strip() for line in stub.splitlines()}
    return "\n".join(line for line in source.splitlines() if line.strip() not in given)


def _fingerprint(text: str, noise_t: int, boilerplate=None):
    """copydetect's CodeFingerprint of a piece of Python, with a window of 1 (all k-grams)."""
    from copydetect import CodeFingerprint

    return CodeFingerprint("cell.py", noise_t, 1, boilerplate=boilerplate, fp=io.StringIO(text), language="python")


def _answered(sources: dict[str, str], stubs: dict[str, str], noise_t: int, boilerplate) -> dict[str, tuple]:
    """Cell label -> (the student's own lines (:func:`_own_lines`), their fingerprints less
    ``boilerplate``) of each answered cell, in the release's order (``stubs``: cell label -> the
    release's source). A cell is answered if its own lines hold at least ``noise_t`` characters
    of copydetect's filtered text (one k-gram): a shorter answer (a prediction such as
    ``predicted_traces = 3``) has no fingerprint of its own, and is what every right answer is."""
    answered = {}
    for label, stub in stubs.items():
        own = _own_lines(_clean(sources.get(label, "")), _clean(stub))
        fingerprint = _fingerprint(own, noise_t, boilerplate)
        if len(fingerprint.filtered_code) >= noise_t:
            answered[label] = (own, fingerprint.hashes)
    return answered


def _hashes(text: str, noise_t: int):
    """The fingerprints of ``text`` (all its k-grams), as copydetect's boilerplate takes them."""
    import numpy as np

    return np.unique(np.array(list(_fingerprint(text, noise_t).hashes), dtype=np.int64))


def _sources(person: Path, assignment_id: str, notebooks: list[str], label_prefix: str,
             notes: list[str]) -> dict[str, str]:
    """Cell label -> source of each answer cell of ``person``'s notebooks of an assignment (a
    notebook not there is not submitted; one that cannot be read is noted and skipped)."""
    sources = {}
    for name in notebooks:
        path = person / assignment_id / name
        if not os.path.lexists(path):
            continue  # not submitted
        shown = printable(f"{label_prefix}{person.name}/{assignment_id}/{name}")
        notebook = _read_notebook(path, shown, notes) or {}
        prefix = "" if len(notebooks) == 1 else Path(name).stem + "/"
        sources.update({prefix + gid: src for gid, src in answer_sources(notebook).items()})
    return sources


def _document_text(answered: dict[str, tuple]) -> str:
    """One document of a student's answered cells, each under a line naming it."""
    return "".join(f"# ---- cell {printable(label)} ----\n{source}\n"
                   for label, (source, _) in answered.items())


def compare_class(autograded: Path, release: Path, reference: Path | None = None,
                  threshold: float = THRESHOLD, noise_t: int = NOISE_T,
                  known_answers: Path | None = None) -> ClassSimilarity:
    """Compare the answers of every two students of each assignment, and of each student with
    each reference solution.

    ``autograded``: nbgrader's folder ``<student>/<assignment>/<notebook>.ipynb``. ``release``:
    ``<assignment>/<notebook>.ipynb``, the student version of each assignment: its notebooks and
    their answer cells' grade_ids are the ones compared, and its code cells are the boilerplate.
    ``reference`` (optional): earlier years' or public solutions laid out like ``autograded``
    (``<name>/<assignment>/<notebook>.ipynb``), compared with each student, not with each other.
    ``threshold`` (0..1): the similarity above which copydetect's report shows a pair's code.
    ``noise_t``: copydetect's k, in characters of the filtered text (see the module).
    ``known_answers`` (optional): laid out like ``release``, the course's own answers (its
    ``solutions/``): their code is boilerplate too, so that two students who both wrote the
    course's answer are not a pair for it (short answers are often written alike, and the
    canonical one most of all); compare with a ``reference`` to find copies of a leaked one.

    Returns a :class:`ClassSimilarity`: the pairs with a similarity above 0, ranked by
    similarity, descending; notes on what was skipped; copydetect's HTML report. A notebook
    that cannot be read (not a plain file, not JSON, too large) is skipped with a note, as are a
    student's answers to an assignment longer than MAX_ANSWER_CHARS; nothing in the folders is
    written to (the documents compared are written to a temporary folder). Raises ValueError if
    ``threshold`` is not in 0..1 (copydetect's check), OSError if ``release`` or ``autograded``
    cannot be listed.
    """
    from copydetect import CopyDetector  # imports matplotlib.pyplot: only when comparing

    notes: list[str] = []
    assignments = {}  # assignment id -> (notebook names, cell label -> stub, boilerplate text)
    for folder in sorted(p for p in Path(release).iterdir() if p.is_dir() and not p.name.startswith(".")):
        notebooks = sorted(p.name for p in folder.glob("*.ipynb") if p.is_file())
        stubs, boilerplate = {}, []
        for name in notebooks:
            notebook = _read_notebook(folder / name, printable(f"release {folder.name}/{name}"), notes) or {}
            prefix = "" if len(notebooks) == 1 else Path(name).stem + "/"
            stubs.update({prefix + gid: src for gid, src in answer_sources(notebook).items()})
            boilerplate += [_clean(src) for src in _code_cells(notebook)]
        if stubs:
            assignments[folder.name] = (notebooks, stubs, "\n".join(boilerplate) + "\n")
    given = {a: _hashes(text, noise_t) for a, (_, _, text) in assignments.items()}
    if known_answers is not None:  # as a student's document, so that its seams match theirs too
        for assignment_id, (notebooks, stubs, text) in list(assignments.items()):
            sources = _sources(Path(known_answers), assignment_id, notebooks, "known answers ", notes)
            answered = _answered(sources, stubs, noise_t, given[assignment_id])
            text += _document_text(answered)
            assignments[assignment_id] = (notebooks, stubs, text)
            given[assignment_id] = _hashes(text, noise_t)

    with tempfile.TemporaryDirectory(prefix="similarity-") as tmp:
        tmp = Path(tmp)
        documents: dict[str, _Document] = {}  # written file -> what it is

        def add(root: Path, kind: str, label_prefix: str) -> None:
            for person in sorted(p for p in Path(root).iterdir()
                                 if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")):
                for assignment_id, (notebooks, stubs, _) in assignments.items():
                    sources = _sources(person, assignment_id, notebooks, label_prefix, notes)
                    if sum(len(source) for source in sources.values()) > MAX_ANSWER_CHARS:
                        notes.append(printable(f"skipped {label_prefix}{person.name}/{assignment_id}: "
                                               f"answers longer than {MAX_ANSWER_CHARS} characters"))
                        continue
                    answered = _answered(sources, stubs, noise_t, given[assignment_id])
                    if not answered:
                        continue  # nothing answered: left out
                    text = _document_text(answered)
                    file = tmp / kind / _slug(person.name) / f"{_slug(assignment_id)}.py"
                    file.parent.mkdir(parents=True, exist_ok=True)
                    file.write_text(text, encoding="utf-8", newline="")
                    documents[str(file)] = _Document(label_prefix + person.name, assignment_id,
                                                     {label: hashes for label, (_, hashes) in answered.items()})

        if Path(autograded).is_dir():
            add(Path(autograded), "students", "")
        if reference is not None and Path(reference).is_dir():
            add(Path(reference), "reference", REFERENCE)
        if not (tmp / "students").is_dir():
            return ClassSimilarity((), tuple(notes), _EMPTY_HTML)
        (tmp / "release").mkdir()
        for assignment_id, (_, _, boilerplate) in assignments.items():
            (tmp / "release" / f"{_slug(assignment_id)}.py").write_text(boilerplate, encoding="utf-8")

        ref_dirs = [str(tmp / "students")] + ([str(tmp / "reference")] if (tmp / "reference").is_dir() else [])
        detector = CopyDetector(test_dirs=[str(tmp / "students")], ref_dirs=ref_dirs,
                                boilerplate_dirs=[str(tmp / "release")], extensions=["py"],
                                noise_t=noise_t, guarantee_t=noise_t, display_t=threshold,
                                same_name_only=True, autoopen=False, silent=True,
                                force_language="python", out_file=str(tmp / "similarity.html"))
        detector.run()

        pairs, seen = [], set()
        for i, test_file in enumerate(detector.test_files):
            for j, ref_file in enumerate(detector.ref_files):
                sims = detector.similarity_matrix[i, j]
                key = frozenset((test_file, ref_file))
                if sims[0] < 0 or key in seen or max(sims) <= 0:
                    continue  # not compared (same file, other assignment), seen, or nothing shared
                seen.add(key)
                a, b = documents[test_file], documents[ref_file]
                if b.label < a.label and not b.label.startswith(REFERENCE):
                    a, b = b, a
                cells = tuple(cell for cell, hashes in a.cells.items() if hashes & b.cells.get(cell, set()))
                pairs.append(Pair(a.label, b.label, a.assignment_id, float(max(sims)), cells))
        html = detector.generate_html_report(output_mode="return")
    pairs.sort(key=lambda p: (-p.similarity, p.assignment_id, p.student_a, p.student_b))
    return ClassSimilarity(tuple(pairs), tuple(notes), html or _EMPTY_HTML)


def write_similarity(result: ClassSimilarity, out: Path, folders: dict[str, str] | None = None) -> list[Path]:
    """Write ``similarity_pairs.csv`` (columns :data:`CSV_HEADER`; ``similarity`` with 3
    decimals, ``cells`` the grade_ids separated by ``"; "``, ``folder_a``/``folder_b`` each
    student's folder as submitted, from ``folders`` (student id -> folder; default the id); every
    cell through ``report_text.write_csv``) and ``similarity.html`` (copydetect's report) into
    ``out`` (created if missing). Returns the two paths. Raises OSError if ``out`` cannot be
    written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    folders = folders or {}
    csv_path, html_path = out / "similarity_pairs.csv", out / "similarity.html"
    write_csv(csv_path, CSV_HEADER, ([p.student_a, p.student_b, p.assignment_id, f"{p.similarity:.3f}",
                                      "; ".join(p.cells), folders.get(p.student_a, p.student_a),
                                      folders.get(p.student_b, p.student_b)] for p in result.pairs))
    html_path.write_text(result.html, encoding="utf-8")
    return [csv_path, html_path]


def summary_lines(pairs: Iterable[Pair], threshold: float = THRESHOLD, notes: Iterable[str] = (),
                  folders: dict[str, str] | None = None) -> list[str]:
    """Lines for ``summary.txt``, each one :func:`printable` line: the pairs with a similarity
    above ``threshold`` (0..1) to look at, most similar first, or one line saying there are none;
    then ``notes`` (the inputs skipped). A student whose folder (``folders``: student id ->
    folder as submitted) is not its id is shown with it. A list to look at: it never changes a
    score."""
    folders = folders or {}

    def shown(student: str) -> str:
        folder = folders.get(student, student)
        return student if folder == student else f"{student} (folder {folder!r})"

    above = [p for p in pairs if p.similarity > threshold]
    if not above:
        lines = [f"Answer similarity: no pair above {threshold:.2f} (copydetect; scores unchanged)."]
    else:
        lines = [f"Answer similarity: {len(above)} pair{'s' if len(above) != 1 else ''} above "
                 f"{threshold:.2f} to look at (copydetect; scores unchanged; see similarity.html):"]
        lines += [f"  {p.assignment_id}: {shown(p.student_a)} ~ {shown(p.student_b)} {p.similarity:.2f}"
                  f" (cells {', '.join(p.cells) or '-'})" for p in above]
    lines += [f"  note: {note}" for note in notes]
    return [printable(line) for line in lines]
