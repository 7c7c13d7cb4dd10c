"""Answer similarity: which students of a graded class wrote suspiciously alike answers, as a
list for an instructor to look at. It never changes a score: it only reads the autograded
notebooks and writes its own files (``similarity_pairs.csv``, ``similarity.html``, lines for
``summary.txt``); nothing goes back to nbgrader's database or to the grades.

What is compared is the code the student wrote (:mod:`.student_code`): their answer cells (code
cells whose ``metadata.nbgrader.solution`` is true, taken by the grade_ids of the release) and
their new cells (code cells the release does not name, that are not one of its code cells as
released: code written under an emptied answer cell counts as in it); never the locked and
graded cells, which nbgrader puts back. Whole notebooks are not compared: autodiff answers are
short and formulaic, so the given code would make everyone look alike. Per assignment, a
student's document is their own lines of each answered cell (the lines that are not lines of
the release's stub: the signature, docstring, ``# YOUR CODE HERE`` and
``raise NotImplementedError()`` go), in the release's order, then their new cells, less the
lines of the answer stubs, in notebook order; each after a comment line ``# ---- cell
<grade_id> ----`` or ``# ---- new cell <N> ----``. So a copy moved into new cells reads as the
same copy in the answer cells. The release's code cells (the stubs and the given code around
them) are also copydetect's boilerplate, so given code copied into an answer does not count. An
answer cell whose own lines are shorter than one k-gram is left out (a prediction such as
``predicted_traces = 4`` is what every right answer is); a new cell is left out unless one k-gram
of its text (``noise_t`` characters) lies under no k-gram of the boilerplate, so a given cell
changed in a number, or two given cells run as one, is not a document; a student with nothing
left is left out too: two blank notebooks are not a copy.

A notebook whose answer cells hold no code of their own (empty, or only the stub) while it
scores is noted (:class:`EmptyAnswers`): its points came from code elsewhere, so a copy could be
there.

The comparison is copydetect's (https://github.com/blingenf/copydetect). It tokenizes the code
with pygments and writes names of variables and attributes as ``V``, of functions ``F``, of
classes ``O``, strings ``S``, and drops comments and whitespace: renamed variables, added
comments and reformatting change nothing. A document's fingerprints are the hashes of the
k-grams (``noise_t`` characters) of that text selected by winnowing (Schleimer, Wilkerson and
Aiken, "Winnowing: local algorithms for document fingerprinting", SIGMOD 2003), less the
boilerplate's. The window here is 1 (``guarantee_t = noise_t``): every k-gram is a fingerprint,
which answers this short can afford, and which makes the result the same in every run (a wider
window picks the smallest of Python's per-process string hashes, so the scores would change
from one run to the next).
"""
from __future__ import annotations

import hashlib
import html as html_lib
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from autograder.grading.analysis.student_code import (
    EmptyAnswers, clean, empty_answers, read_releases, student_sources)
from autograder.grading.analysis.similarity_report import Match, report_html
from autograder.grading.report_text import printable, write_csv

# k, in characters of copydetect's filtered text: copydetect's default, and the best of those
# measured on the class of tests/test_similarity.py (three answers of 1-9 lines; the larger side):
# planted copies 0.96, 0.83 and 0.78 at k = 25, independent correct answers at most 0.24, but
# 0.44 at k = 20 and 0.57 at k = 12 (tf.constant and tf.convert_to_tensor are both V.V once
# filtered, so short TensorFlow answers look alike in short k-grams).
NOISE_T = 25
# Halfway between those at k = 25: independent answers at most 0.24, copies at least 0.78.
THRESHOLD = 0.5
MAX_ANSWER_CHARS = 200_000  # one student's code (answer and new cells) of one assignment, or skipped
REFERENCE = "reference/"  # the prefix of a reference solution's name (a student id has no "/")
# A row of an EmptyAnswers follows the pairs: student_a the student, student_b and similarity
# empty, cells its new cells, note what is noted.
CSV_HEADER = ["student_a", "student_b", "assignment_id", "similarity", "cells", "folder_a", "folder_b",
              "note"]
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
    the report before concluding. ``cells`` name the cells that share fingerprints when
    fingerprinted alone (a k-gram across two cells of the document counts in ``similarity`` but
    names no cell): an answer cell by its grade_id (``notebook/grade_id`` where an assignment has
    several notebooks), compared with the other side's cell of that grade_id and its new cells;
    a new cell as ``<student>: new cell <N>`` (``<student>: notebook/new cell <N>``), compared
    with every cell of the other side; ``a``'s cells in its document's order, then ``b``'s new
    cells.
    """
    student_a: str
    student_b: str
    assignment_id: str
    similarity: float
    cells: tuple[str, ...]


@dataclass(frozen=True)
class ClassSimilarity:
    """What :func:`compare_class` found: ``pairs`` ranked by similarity (descending), ``notes``
    (one line each: the inputs skipped and why, then the line of each of ``empty_answers``),
    ``html``, the report of the pairs copydetect shows (:mod:`.analysis.similarity_report`: no
    network, students and assignments named), ``empty_answers``, the notebooks of
    :class:`EmptyAnswers` by assignment and student, and ``matches``, the pairs the report shows
    (:class:`~.similarity_report.Match`), above ``threshold``."""
    pairs: tuple[Pair, ...]
    notes: tuple[str, ...]
    html: str
    empty_answers: tuple[EmptyAnswers, ...] = ()
    matches: tuple[Match, ...] = ()
    threshold: float = THRESHOLD


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
    cells: dict[str, set]  # cell label -> the fingerprints of that cell alone, document order
    new: frozenset[str]  # the labels of its new cells


def _own_lines(source: str, stub: str) -> str:
    """The lines of a cell that are not lines of ``stub`` (the signature, docstring and stub
    lines a student keeps are not theirs)."""
    given = {line.strip() for line in stub.splitlines()}
    return "\n".join(line for line in source.splitlines() if line.strip() not in given)


def _fingerprint(text: str, noise_t: int, boilerplate=None):
    """copydetect's CodeFingerprint of a piece of Python, with a window of 1 (all k-grams)."""
    from copydetect import CodeFingerprint

    return CodeFingerprint("cell.py", noise_t, 1, boilerplate=boilerplate, fp=io.StringIO(text), language="python")


def _uncovered(text: str, noise_t: int, boilerplate) -> int:
    """How many characters of the filtered ``text`` lie under no k-gram of ``boilerplate``."""
    import numpy as np

    fingerprint, given = _fingerprint(text, noise_t), set(boilerplate.tolist())
    covered = np.zeros(len(fingerprint.filtered_code), dtype=bool)
    for value, starts in fingerprint.hash_idx.items():
        if int(value) in given:
            for start in starts:
                covered[start:start + noise_t] = True
    return int(np.count_nonzero(~covered))


def _answered(sources: dict[str, str], stubs: dict[str, str], noise_t: int, boilerplate,
              new: dict[str, str] | None = None) -> tuple[dict[str, tuple], set[str]]:
    """Cell label -> (the student's own lines (:func:`_own_lines`), their fingerprints less
    ``boilerplate``) of each answered cell, in the release's order (``stubs``: cell label -> the
    release's source), then of each of the ``new`` cells (label -> source) that counts; and the
    labels of the answer cells that hold code of their own (any filtered text). An answer cell
    is answered if its own lines hold at least ``noise_t`` characters of copydetect's filtered
    text (one k-gram): a shorter answer (a prediction such as ``predicted_traces = 4``) has no
    fingerprint of its own, and is what every right answer is. A new cell's own lines are its
    lines less those of every stub, as an answer's, and it counts if ``noise_t`` characters of
    them lie under no k-gram of ``boilerplate``."""
    answered, with_code = {}, set()
    for label, stub in stubs.items():
        own = _own_lines(clean(sources.get(label, "")), clean(stub))
        fingerprint = _fingerprint(own, noise_t, boilerplate)
        if fingerprint.filtered_code:
            with_code.add(label)
        if len(fingerprint.filtered_code) >= noise_t:
            answered[label] = (own, fingerprint.hashes)
    stub_lines = "\n".join(clean(stub) for stub in stubs.values())
    for label, source in (new or {}).items():
        own = _own_lines(clean(source), stub_lines)
        if _uncovered(own, noise_t, boilerplate) >= noise_t:
            answered[label] = (own, _fingerprint(own, noise_t, boilerplate).hashes)
    return answered, with_code


def _hashes(text: str, noise_t: int):
    """The fingerprints of ``text`` (all its k-grams), as copydetect's boilerplate takes them."""
    import numpy as np

    return np.unique(np.array(list(_fingerprint(text, noise_t).hashes), dtype=np.int64))


def _document_text(answered: dict[str, tuple], new: Iterable[str] = ()) -> str:
    """One document of a student's answered cells, each under a line naming it."""
    return "".join(f"# ---- {'' if label in new else 'cell '}{printable(label)} ----\n{source}\n"
                   for label, (source, _) in answered.items())


def _shared_cells(a: _Document, b: _Document) -> tuple[str, ...]:
    """:attr:`Pair.cells` of the pair ``a``, ``b``."""
    def shares(doc: _Document, label: str, other: _Document) -> bool:
        mine = doc.cells[label]
        if label in doc.new:
            return any(mine & theirs for theirs in other.cells.values())
        return bool(mine & other.cells.get(label, set())) or any(mine & other.cells[n] for n in other.new)

    named = [label if label not in a.new else f"{a.label}: {label}" for label in a.cells if shares(a, label, b)]
    return tuple(named + [f"{b.label}: {label}" for label in b.cells if label in b.new and shares(b, label, a)])


def compare_class(autograded: Path, release: Path, reference: Path | None = None,
                  threshold: float = THRESHOLD, noise_t: int = NOISE_T,
                  known_answers: Path | None = None) -> ClassSimilarity:
    """Compare the code of every two students of each assignment, and of each student with
    each reference solution, and find the notebooks of :class:`EmptyAnswers`.

    ``autograded``: nbgrader's folder ``<student>/<assignment>/<notebook>.ipynb``. ``release``:
    ``<assignment>/<notebook>.ipynb``, the student version of each assignment: its notebooks and
    their answer cells' grade_ids are the ones compared, its other cells are not the students',
    and its code cells are the boilerplate. ``reference`` (optional): earlier years' or public
    solutions laid out like ``autograded`` (``<name>/<assignment>/<notebook>.ipynb``), compared
    with each student, not with each other.
    ``threshold`` (0..1): the similarity above which copydetect's report shows a pair's code.
    ``noise_t``: copydetect's k, in characters of the filtered text (see the module).
    ``known_answers`` (optional): laid out like ``release``, the course's own answers (its
    ``solutions/``): their answer cells are boilerplate too, so that two students who both wrote
    the course's answer are not a pair for it (short answers are often written alike, and the
    canonical one most of all); compare with a ``reference`` to find copies of a leaked one.

    Returns a :class:`ClassSimilarity`: the pairs with a similarity above 0, ranked by
    similarity, descending; notes on what was skipped and on each notebook of
    :class:`EmptyAnswers`; copydetect's HTML report, those notebooks listed first. A notebook
    that cannot be read (not a plain file, not JSON, too large) is skipped with a note, as is a
    student's code of an assignment longer than MAX_ANSWER_CHARS; nothing in the folders is
    written to (the documents compared are written to a temporary folder). Raises ValueError if
    ``threshold`` is not in 0..1 (copydetect's check), OSError if ``release`` or ``autograded``
    cannot be listed.
    """
    from copydetect import CopyDetector  # imports matplotlib.pyplot: only when comparing

    notes: list[str] = []
    assignments = read_releases(release, notes)
    given = {a: _hashes(r.boilerplate, noise_t) for a, r in assignments.items()}
    if known_answers is not None:  # as a student's document, so that its seams match theirs too
        for assignment_id, release_of in assignments.items():
            sources, _, _ = student_sources(Path(known_answers), assignment_id, release_of, "known answers ",
                                            notes, with_new=False)
            answered, _ = _answered(sources, release_of.stubs, noise_t, given[assignment_id])
            release_of.boilerplate += _document_text(answered)
            given[assignment_id] = _hashes(release_of.boilerplate, noise_t)
    empty: list[EmptyAnswers] = []

    with tempfile.TemporaryDirectory(prefix="similarity-") as tmp:
        tmp = Path(tmp)
        documents: dict[str, _Document] = {}  # written file -> what it is

        def add(root: Path, kind: str, label_prefix: str) -> None:
            for person in sorted(p for p in Path(root).iterdir()
                                 if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")):
                for assignment_id, release_of in assignments.items():
                    answers, new, read = student_sources(person, assignment_id, release_of, label_prefix, notes)
                    if sum(len(source) for source in [*answers.values(), *new.values()]) > MAX_ANSWER_CHARS:
                        notes.append(printable(f"skipped {label_prefix}{person.name}/{assignment_id}: "
                                               f"answers longer than {MAX_ANSWER_CHARS} characters"))
                        continue
                    answered, with_code = _answered(answers, release_of.stubs, noise_t, given[assignment_id], new)
                    if not label_prefix:
                        empty.extend(empty_answers(person.name, assignment_id, release_of, read, with_code,
                                                   [label for label in answered if label in new]))
                    if not answered:
                        continue  # nothing answered: left out
                    text = _document_text(answered, new)
                    file = tmp / kind / _slug(person.name) / f"{_slug(assignment_id)}.py"
                    file.parent.mkdir(parents=True, exist_ok=True)
                    file.write_text(text, encoding="utf-8", newline="")
                    documents[str(file)] = _Document(label_prefix + person.name, assignment_id,
                                                     {label: hashes for label, (_, hashes) in answered.items()},
                                                     frozenset(new.keys() & answered.keys()))

        if Path(autograded).is_dir():
            add(Path(autograded), "students", "")
        if reference is not None and Path(reference).is_dir():
            add(Path(reference), "reference", REFERENCE)
        empty.sort(key=lambda e: (e.assignment_id, e.student, e.notebook))
        notes += [printable(e.text()) for e in empty]
        if not (tmp / "students").is_dir():
            return ClassSimilarity((), tuple(notes), _with_empty_answers(_EMPTY_HTML, empty), tuple(empty))
        (tmp / "release").mkdir()
        for assignment_id, release_of in assignments.items():
            (tmp / "release" / f"{_slug(assignment_id)}.py").write_text(release_of.boilerplate, encoding="utf-8")

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
                pairs.append(Pair(a.label, b.label, a.assignment_id, float(max(sims)), _shared_cells(a, b)))
        matches = tuple(Match(documents[t].label, documents[r].label, documents[t].assignment_id,
                              float(st), float(sr), int(tokens), code_t, code_r)
                        for st, sr, t, r, code_t, code_r, tokens in detector.get_copied_code_list())
    pairs.sort(key=lambda p: (-p.similarity, p.assignment_id, p.student_a, p.student_b))
    return ClassSimilarity(tuple(pairs), tuple(notes), _with_empty_answers(
        report_html(list(matches), threshold), empty), tuple(empty), matches, threshold)


def _with_empty_answers(html: str, empty: list[EmptyAnswers]) -> str:
    """``html`` with a list of the notebooks of ``empty`` first in its body (each line
    :func:`printable`, then HTML-escaped)."""
    if not empty:
        return html
    items = "".join(f"<li>{html_lib.escape(printable(e.text()))}</li>" for e in empty)
    section = ('<div class="container"><h2>Scored with no code in the answer cells</h2><p>These notebooks '
               "scored while their answer cells hold no code of their own: their code is in the new cells "
               f"named, compared as answers are. Advice only: scores unchanged.</p><ul>{items}</ul></div>")
    return html.replace("<body>", "<body>\n" + section, 1)


def write_similarity(result: ClassSimilarity, out: Path, folders: dict[str, str] | None = None) -> list[Path]:
    """Write ``similarity_pairs.csv`` (columns :data:`CSV_HEADER`; ``similarity`` with 3
    decimals, ``cells`` the cells separated by ``"; "``, ``folder_a``/``folder_b`` each
    student's folder as submitted, from ``folders`` (student id -> folder; default the id); then
    a row for each of ``result.empty_answers``; every cell through ``report_text.write_csv``)
    and ``similarity.html`` (its students named with their folders too) into ``out`` (created if missing). Returns the
    two paths. Raises OSError if ``out`` cannot be written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    folders = folders or {}
    csv_path, html_path = out / "similarity_pairs.csv", out / "similarity.html"
    rows = [[p.student_a, p.student_b, p.assignment_id, f"{p.similarity:.3f}", "; ".join(p.cells),
             folders.get(p.student_a, p.student_a), folders.get(p.student_b, p.student_b), ""]
            for p in result.pairs]
    rows += [[e.student, "", e.assignment_id, "", "; ".join(e.new_cells), folders.get(e.student, e.student), "",
              e.text()] for e in result.empty_answers]
    write_csv(csv_path, CSV_HEADER, rows)
    html = result.html if not result.matches else _with_empty_answers(
        report_html(list(result.matches), result.threshold, folders), list(result.empty_answers))
    html_path.write_text(html, encoding="utf-8")
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
