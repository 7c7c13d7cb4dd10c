"""Answer similarity (autograder.grading.analysis.similarity) on a small class written here as
real nbformat notebooks, compared by the real copydetect: a planted copy is found and ranked
first, two independent correct answers are not flagged, blank and broken notebooks are left out,
a copied public solution is found, the report escapes what students chose, inputs stay as they
were; answers moved into new cells are compared as in the answer cells, copies of the release's
code in new cells are not, and a notebook that scores with empty answer cells is noted."""
import csv
import hashlib
import html as html_lib
import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.grading.analysis.similarity import (
    CSV_HEADER, THRESHOLD, Pair, compare_class, summary_lines,
    write_similarity)
from autograder.grading.analysis.student_code import EmptyAnswers, answer_sources, autograded_score, new_sources
from autograder.grading.run.reports import class_summary

# The default THRESHOLD (0.5) and k (25) come from this class: the planted copies score 0.96
# (Carol), 0.83 (Frank, of the public solution) and 0.78 (Evil, two cells of three), the pairs
# of independent answers at most 0.24 (see the module for k = 12 to 25).
pytestmark = pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")  # copydetect 0.5

ASSIGNMENT = "01_gradient_tape"

# The release's answer stubs: signature and docstring, then nbgrader's two stub lines.
SIGNATURES = {
    "square_grad": 'def square_grad(x):\n    """dy/dx of y = x ** 2 at x, with tf.GradientTape."""\n',
    "grads_xy": ('def grads_xy(x):\n    """(dy/dx, dz/dx) for y = x ** 2 and z = x ** 3, '
                 'from one persistent tape."""\n'),
    "sum_squares": ('@tf.function\ndef sum_squares(n):\n    """0*0 + 1*1 + ... + (n-1)*(n-1) in graph '
                    'mode, with a loop AutoGraph converts."""\n'),
}
STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"
# Given code of the release, after the answers (data for a later exercise).
GIVEN = """\
rng = np.random.default_rng(0)
points = rng.normal(size=(200, 2)).astype("float32")
labels = (points[:, 0] * points[:, 1] > 0).astype("int32")
print("points", points.shape, "share of positives", labels.mean())"""

ALICE = {
    "square_grad": """\
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)""",
    "grads_xy": """\
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 2
        z = x ** 3
    dy = tape.gradient(y, x)
    dz = tape.gradient(z, x)
    del tape
    return dy, dz""",
    "sum_squares": """\
    total = tf.constant(0)
    for i in tf.range(n):
        total += i * i
    return total""",
}
# Written independently, correct too.
BOB = {
    "square_grad": """\
    v = tf.Variable(float(x))
    with tf.GradientTape() as g:
        loss = v ** 2
    dy_dx = g.gradient(loss, v)
    return dy_dx""",
    "grads_xy": """\
    v = tf.Variable(float(x))
    with tf.GradientTape(persistent=True) as g:
        outputs = [tf.square(v), tf.pow(v, 3)]
    return tuple(g.gradient(out, v) for out in outputs)""",
    "sum_squares": """\
    i = tf.constant(0)
    acc = tf.constant(0)
    while i < n:
        acc = acc + i ** 2
        i = i + 1
    return acc""",
}
# Alice's answers with the variables renamed, independent lines swapped and comments added.
CAROL = {
    "square_grad": """\
    # make x a float32 tensor first
    t = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as recorder:
        recorder.watch(t)  # constants are not watched by default
        square = t * t
    return recorder.gradient(square, t)""",
    "grads_xy": """\
    t = tf.constant(x, dtype=tf.float32)
    # persistent: two gradient calls on one tape
    with tf.GradientTape(persistent=True) as recorder:
        recorder.watch(t)
        cube = t ** 3
        square = t ** 2
    d_cube = recorder.gradient(cube, t)
    d_square = recorder.gradient(square, t)
    del recorder  # free the tape
    return d_square, d_cube""",
    "sum_squares": """\
    # AutoGraph turns this into a tf.while_loop
    s = tf.constant(0)
    for k in tf.range(n):
        s += k * k
    return s""",
}
# A public solution (the reference folder), and Frank, who copied it.
PUBLIC = {
    "square_grad": """\
    x = tf.convert_to_tensor(x, dtype=tf.float32)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = tf.multiply(x, x)
    grad = tape.gradient(y, x)
    return grad""",
    "grads_xy": """\
    x = tf.convert_to_tensor(x, dtype=tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y, z = tf.pow(x, 2), tf.pow(x, 3)
    try:
        return tape.gradient(y, x), tape.gradient(z, x)
    finally:
        del tape""",
    "sum_squares": """\
    return tf.math.reduce_sum(tf.math.square(tf.range(n, dtype=tf.int32)))""",
}
# Frank's copy: renamed, commented, and the try/finally of grads_xy unrolled.
FRANK = {
    "square_grad": """\
    inp = tf.convert_to_tensor(x, dtype=tf.float32)
    with tf.GradientTape(watch_accessed_variables=False) as gt:
        gt.watch(inp)  # watch the input
        out = tf.multiply(inp, inp)
    g = gt.gradient(out, inp)
    return g""",
    "grads_xy": """\
    inp = tf.convert_to_tensor(x, dtype=tf.float32)
    with tf.GradientTape(persistent=True) as gt:
        gt.watch(inp)
        a, b = tf.pow(inp, 2), tf.pow(inp, 3)
    da, db = gt.gradient(a, inp), gt.gradient(b, inp)
    del gt
    return da, db""",
    "sum_squares": """\
    # one vectorised op
    return tf.math.reduce_sum(tf.math.square(tf.range(n, dtype=tf.int32)))""",
}
# A student id and code chosen to break out of the HTML report, on two of Bob's answers (the
# third is Evil's own).
EVIL = "evil<script>"
EVIL_ANSWERS = {gid: "    # </code></pre><script>alert(1)</script>\n" + BOB[gid] for gid in ("square_grad", "grads_xy")}
EVIL_ANSWERS["sum_squares"] = """\
    squares = tf.TensorArray(tf.int32, size=n)
    for j in tf.range(n):
        squares = squares.write(j, j * j)
    return tf.reduce_sum(squares.stack())"""


def notebook(answers: dict[str, str] | None, passed: bool | None = None) -> nbformat.NotebookNode:
    """The assignment's notebook as nbgrader's autograde leaves it: given code, three answer
    cells (their stubs where ``answers`` is None or has no entry), a graded test cell (1 point)
    with an error output unless ``passed`` (default: whether ``square_grad`` is answered)."""
    answers = answers or {}
    cells = [new_markdown_cell("# Gradient tapes"), new_code_cell("import tensorflow as tf")]
    for gid, signature in SIGNATURES.items():
        cell = new_code_cell(signature + answers.get(gid, STUB))
        cell.metadata["nbgrader"] = {"grade": False, "grade_id": gid, "locked": False,
                                     "schema_version": 3, "solution": True, "task": False}
        cells.append(cell)
    cells.append(new_code_cell(GIVEN))
    test = new_code_cell("assert float(square_grad(3.0)) == 6.0")
    test.metadata["nbgrader"] = {"grade": True, "grade_id": "test_square_grad", "locked": True,
                                 "points": 1, "schema_version": 3, "solution": False, "task": False}
    if not (passed if passed is not None else "square_grad" in answers):
        test.outputs = [new_output("error", ename="NotImplementedError", evalue="", traceback=[])]
    cells.append(test)
    return new_notebook(cells=cells)


def write(path: Path, nb: nbformat.NotebookNode) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def build_class(root: Path) -> tuple[Path, Path, Path]:
    """autograded/, release/ and reference/ folders of one assignment."""
    release, autograded, reference = root / "release", root / "autograded", root / "reference"
    write(release / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook(None))
    for student, answers in {"alice": ALICE, "bob": BOB, "carol": CAROL, "frank": FRANK,
                             EVIL: EVIL_ANSWERS, "dave": None}.items():
        write(autograded / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook(answers))
    broken = autograded / "erin" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"cells": [{"cell_type": "code", "source": "x = 1"', encoding="utf-8")  # cut short
    write(reference / "public_2023" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook(PUBLIC))
    return autograded, release, reference


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    autograded, release, reference = build_class(root)
    before = tree_hashes(root)
    result = compare_class(autograded, release, reference)
    return root, before, result


def by_pair(result) -> dict[frozenset, Pair]:
    return {frozenset((p.student_a, p.student_b)): p for p in result.pairs}


def test_the_planted_copy_ranks_first_above_the_threshold(graded):
    _, _, result = graded
    top = result.pairs[0]
    assert (top.student_a, top.student_b, top.assignment_id) == ("alice", "carol", ASSIGNMENT)
    assert top.similarity > THRESHOLD
    assert top.cells == ("square_grad", "grads_xy", "sum_squares")
    similarities = [p.similarity for p in result.pairs]
    assert similarities == sorted(similarities, reverse=True)


def test_independent_correct_answers_stay_below_the_threshold(graded):
    _, _, result = graded
    pairs = by_pair(result)
    for a, b in [("alice", "bob"), ("alice", "frank"), ("bob", "carol"), ("bob", "frank"),
                 ("alice", "reference/public_2023"), ("bob", "reference/public_2023"),
                 ("carol", "reference/public_2023")]:
        pair = pairs.get(frozenset((a, b)))
        assert pair is None or pair.similarity < THRESHOLD, pair


def test_a_copied_public_solution_is_found_and_named(graded):
    _, _, result = graded
    pair = by_pair(result)[frozenset(("frank", "reference/public_2023"))]
    assert (pair.student_a, pair.student_b) == ("frank", "reference/public_2023")  # the student first
    assert pair.similarity > THRESHOLD
    assert pair.cells == ("square_grad", "grads_xy", "sum_squares")


def test_references_are_not_compared_with_each_other(tmp_path):
    autograded, release, reference = build_class(tmp_path)
    write(reference / "public_copy" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook(PUBLIC))
    result = compare_class(autograded, release, reference)
    labels = {(p.student_a, p.student_b) for p in result.pairs}
    assert ("frank", "reference/public_copy") in labels
    assert not any(a.startswith("reference/") for a, _ in labels)


def test_a_partial_copy_names_only_the_copied_cells(graded):
    _, _, result = graded
    pair = by_pair(result)[frozenset(("bob", EVIL))]
    assert pair.similarity > THRESHOLD
    assert pair.cells == ("square_grad", "grads_xy")  # not Evil's own sum_squares


def test_blank_and_broken_notebooks_are_left_out_with_a_note(graded):
    _, _, result = graded
    named = {name for p in result.pairs for name in (p.student_a, p.student_b)}
    assert "dave" not in named and "erin" not in named
    assert result.notes == (f"skipped erin/{ASSIGNMENT}/{ASSIGNMENT}.ipynb: not a JSON notebook (JSONDecodeError)",)


def test_inputs_are_unchanged(graded):
    root, before, _ = graded
    assert tree_hashes(root) == before


def test_csv_holds_every_pair_ranked(graded, tmp_path):
    _, _, result = graded
    csv_path, html_path = write_similarity(result, tmp_path / "out")
    assert csv_path.name == "similarity_pairs.csv" and html_path.name == "similarity.html"
    with open(csv_path, newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    assert header == ["student_a", "student_b", "assignment_id", "similarity", "cells", "folder_a",
                      "folder_b", "note"] == CSV_HEADER
    assert rows[0][:3] == ["alice", "carol", ASSIGNMENT]
    assert rows[0][4] == "square_grad; grads_xy; sum_squares"
    assert rows[2][:2] == ["bob", EVIL] and rows[2][4] == "square_grad; grads_xy"
    assert [row[:2] for row in rows] == [[p.student_a, p.student_b] for p in result.pairs]
    assert [float(row[3]) for row in rows] == [round(p.similarity, 3) for p in result.pairs]
    assert {row[7] for row in rows} == {""}  # no notebook noted in this class


def test_html_report_names_students_and_cells_and_escapes_them(graded, tmp_path):
    _, _, result = graded
    _, html_path = write_similarity(result, tmp_path / "out")
    html = html_path.read_text(encoding="utf-8")
    assert "<b>alice</b>" in html and "<b>carol</b>" in html
    assert "<b>reference/public_2023</b>" in html
    assert "<b>dave</b>" not in html and "<b>erin</b>" not in html  # blank and broken: left out
    assert "# ---- cell grads_xy ----" in html  # the cell markers are in the matched code
    assert "evil&lt;script&gt;" in html  # the student is named, HTML-escaped
    assert EVIL not in html and "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the code itself, escaped
    assert "<script" not in html  # offline: no script, nothing from the network


def test_summary_lists_the_pairs_above_the_threshold(graded):
    _, _, result = graded
    lines = summary_lines(result.pairs, THRESHOLD, result.notes)
    above = [p for p in result.pairs if p.similarity > THRESHOLD]
    assert len(above) == 3  # carol~alice, frank~public, evil~bob
    assert lines[0].startswith(f"Answer similarity: 3 pairs above {THRESHOLD:.2f} to look at")
    assert lines[1] == (f"  {ASSIGNMENT}: alice ~ carol {result.pairs[0].similarity:.2f} "
                        "(cells square_grad, grads_xy, sum_squares)")
    assert any(line.startswith(f"  {ASSIGNMENT}: bob ~ evil<script> ") for line in lines)
    assert lines[-1] == f"  note: skipped erin/{ASSIGNMENT}/{ASSIGNMENT}.ipynb: not a JSON notebook (JSONDecodeError)"
    assert summary_lines([], THRESHOLD) == [f"Answer similarity: no pair above {THRESHOLD:.2f} "
                                            "(copydetect; scores unchanged)."]
    forged = Pair("a\nFAKE LINE", "b\x1b[2J", ASSIGNMENT, 0.99, ())
    assert summary_lines([forged], THRESHOLD)[1] == f"  {ASSIGNMENT}: a\\nFAKE LINE ~ b\\x1b[2J 0.99 (cells -)"


def test_cells_of_an_assignment_with_two_notebooks_are_named_by_notebook(tmp_path):
    release, autograded = tmp_path / "release", tmp_path / "autograded"
    for name in ("part1.ipynb", "part2.ipynb"):
        write(release / "two" / name, notebook(None))
        write(autograded / "alice" / "two" / name, notebook(ALICE))
        write(autograded / "carol" / "two" / name, notebook(CAROL if name == "part1.ipynb" else None))
    result = compare_class(autograded, release)
    assert [(p.student_a, p.student_b, p.assignment_id, p.cells) for p in result.pairs] == [
        ("alice", "carol", "two", ("part1/square_grad", "part1/grads_xy", "part1/sum_squares"))]


def test_huge_and_odd_notebooks_are_skipped_with_a_note_or_compared(tmp_path):
    autograded, release, reference = build_class(tmp_path)
    huge = autograded / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    with open(huge, "r+b") as handle:
        handle.truncate(33 * 2**20)  # sparse: larger than MAX_NOTEBOOK_BYTES, never read
    write(autograded / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
          notebook({"square_grad": "    x = 1\n" * 25_000}))  # 250,000 characters of answer
    # Frank's notebook as raw JSON: junk cells, CRLF newlines and a lone surrogate in an answer.
    frank = autograded / "frank" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = json.loads(frank.read_text(encoding="utf-8"))
    nb["cells"][2]["source"] = "".join(nb["cells"][2]["source"]).replace("\n", "\r\n") + "\r\n    # \ud800"
    nb["cells"][:0] = [None, 3, {"cell_type": "code", "metadata": {"nbgrader": []}}]
    frank.write_text(json.dumps(nb), encoding="utf-8")
    result = compare_class(autograded, release, reference)
    assert result.notes == (f"skipped alice/{ASSIGNMENT}/{ASSIGNMENT}.ipynb: larger than 32 MiB",
                            f"skipped bob/{ASSIGNMENT}: answers longer than 200000 characters",
                            f"skipped erin/{ASSIGNMENT}/{ASSIGNMENT}.ipynb: not a JSON notebook (JSONDecodeError)")
    named = {name for p in result.pairs for name in (p.student_a, p.student_b)}
    assert "alice" not in named and "bob" not in named
    top = result.pairs[0]
    assert (top.student_a, top.student_b) == ("frank", "reference/public_2023") and top.similarity > THRESHOLD


def test_a_class_with_nothing_answered_has_no_pairs(tmp_path):
    release, autograded = tmp_path / "release", tmp_path / "autograded"
    write(release / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook(None))
    for student in ("dave", "gina"):
        write(autograded / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook(None))
    result = compare_class(autograded, release)
    assert result.pairs == () and result.notes == ()
    paths = write_similarity(result, tmp_path / "out")
    assert "No two answers" in paths[1].read_text()


def test_answer_sources_skips_malformed_cells():
    good = {"cell_type": "code", "source": ["x = 1\n", "y = 2"],
            "metadata": {"nbgrader": {"solution": True, "grade_id": "a"}}}
    odd = [
        None, 3, "cell", {"cell_type": "code"}, {"cell_type": "code", "metadata": []},
        {"cell_type": "code", "metadata": {"nbgrader": "yes"}},
        {"cell_type": "code", "source": "z", "metadata": {"nbgrader": {"solution": "true", "grade_id": "b"}}},
        {"cell_type": "code", "source": 7, "metadata": {"nbgrader": {"solution": True, "grade_id": "c"}}},
        {"cell_type": "code", "source": ["ok", 1], "metadata": {"nbgrader": {"solution": True, "grade_id": "d"}}},
        {"cell_type": "code", "source": "z", "metadata": {"nbgrader": {"solution": True, "grade_id": 5}}},
        {"cell_type": "markdown", "source": "z", "metadata": {"nbgrader": {"solution": True, "grade_id": "e"}}},
        {"cell_type": "code", "source": "again", "metadata": {"nbgrader": {"solution": True, "grade_id": "a"}}},
    ]
    assert answer_sources({"cells": [good, *odd]}) == {"a": "x = 1\ny = 2\nagain"}
    for notebook_json in (None, [], {"cells": None}, {"cells": {"a": 1}}, {}):
        assert answer_sources(notebook_json) == {}


# Answers moved out of the answer cells (tests the red team's route): each answer cell emptied
# (deleted text, the stub, or its last line only) and the whole function written in a new cell
# (no nbgrader metadata) under it.
EMPTIED = {"square_grad": "", "grads_xy": None, "sum_squares": "    raise NotImplementedError()"}  # None: stub
# Written independently of everyone above, correct, moved into new cells too.
QUINN = "quinn<i>\x1b[2J"  # a student id that HTML and a terminal would read
QUINN_ANSWERS = {
    "square_grad": """\
    w = tf.Variable(x, dtype=tf.float32)
    with tf.GradientTape() as rec:
        f = tf.math.pow(w, 2.0)
    return rec.gradient(f, w)""",
    "grads_xy": """\
    def both(v):
        return v * v, v * v * v
    v = tf.convert_to_tensor(float(x))
    with tf.GradientTape(persistent=True) as rec:
        rec.watch(v)
        y, z = both(v)
    grads = [rec.gradient(t, v) for t in (y, z)]
    return grads[0], grads[1]""",
    "sum_squares": """\
    k = tf.range(tf.convert_to_tensor(n))
    return tf.reduce_sum(k * k)""",
}
SCRATCH = "square_grad(3.0)"  # a new cell many write to try a function: shorter than one k-gram


def moved(answers: dict[str, str]) -> nbformat.NotebookNode:
    """notebook(None) with ``answers`` in new cells, each under its emptied answer cell
    (cells 4, 6, 8), then a scratch cell; its test cell passes (1 point)."""
    nb = notebook(None, passed=True)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = cell.source if EMPTIED[gid] is None else EMPTIED[gid]
            cells.append(new_code_cell(SIGNATURES[gid] + answers[gid]))
    cells.insert(-1, new_code_cell(SCRATCH))
    nb.cells = cells
    return nb


def release_copies() -> nbformat.NotebookNode:
    """An unanswered notebook with new cells that are the release's code: the given cell again,
    the given cell with one number changed, and two given cells run as one."""
    nb = notebook(None)
    nb.cells[6:6] = [new_code_cell(GIVEN), new_code_cell(GIVEN.replace("default_rng(0)", "default_rng(1)")),
                     new_code_cell("import tensorflow as tf\n" + GIVEN)]
    return nb


@pytest.fixture(scope="module")
def moved_class(tmp_path_factory):
    """The class of ``graded`` and: mallory (Carol's copy, moved into new cells), Quinn (own
    answers, moved), nina and omar (the release's code in new cells, nothing answered)."""
    autograded, release, reference = build_class(tmp_path_factory.mktemp("moved"))
    for student, nb in {"mallory": moved(CAROL), QUINN: moved(QUINN_ANSWERS),
                        "nina": release_copies(), "omar": release_copies()}.items():
        write(autograded / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", nb)
    return compare_class(autograded, release, reference)


def test_a_copy_moved_into_new_cells_scores_as_the_copy_in_the_answer_cells(graded, moved_class):
    _, _, result = graded
    in_answer_cells = by_pair(result)[frozenset(("alice", "carol"))]
    pairs = by_pair(moved_class)
    moved_copy = pairs[frozenset(("alice", "mallory"))]
    assert moved_copy.similarity == pytest.approx(in_answer_cells.similarity, abs=1e-9)
    assert moved_copy.similarity > THRESHOLD
    assert moved_copy.cells == ("square_grad", "grads_xy", "sum_squares",
                                "mallory: new cell 4", "mallory: new cell 6", "mallory: new cell 8")
    same = pairs[frozenset(("carol", "mallory"))]  # the same code, in answer cells and in new cells
    assert same.similarity == pytest.approx(1.0) and moved_class.pairs[0] == same
    assert "# ---- new cell 4 ----" in moved_class.html  # mallory's document, shown beside Carol's...
    assert "def square_grad(x):" not in moved_class.html  # ...without the stub's lines, as hers
    lines = summary_lines(moved_class.pairs, THRESHOLD, moved_class.notes)
    assert f"  {ASSIGNMENT}: carol ~ mallory 1.00 (cells square_grad, grads_xy, sum_squares, mallory: " \
           "new cell 4, mallory: new cell 6, mallory: new cell 8)" in lines


def test_new_cells_that_are_the_release_code_make_no_pair(moved_class):
    named = {name for p in moved_class.pairs for name in (p.student_a, p.student_b)}
    assert "nina" not in named and "omar" not in named  # identical copies, a changed number, a merge
    assert "<b>nina</b>" not in moved_class.html


def test_innocent_answers_in_new_cells_do_not_pair(moved_class):
    for pair in moved_class.pairs:
        if QUINN in (pair.student_a, pair.student_b):
            assert pair.similarity < THRESHOLD, pair  # with mallory too, who has the same scratch cell


def test_a_notebook_scoring_with_empty_answer_cells_is_noted(moved_class, tmp_path):
    new_cells = ("new cell 4", "new cell 6", "new cell 8")  # the scratch cell is too short to compare
    notebook_name = f"{ASSIGNMENT}.ipynb"
    assert moved_class.empty_answers == (  # not alice or carol (answered), nor dave, nina, omar (0 points)
        EmptyAnswers("mallory", ASSIGNMENT, notebook_name, 1.0, 1.0, new_cells),
        EmptyAnswers(QUINN, ASSIGNMENT, notebook_name, 1.0, 1.0, new_cells))
    line = (f"mallory / {ASSIGNMENT}: {notebook_name} scores 1/1 while its answer cells hold no code of "
            "their own (code in new cell 4, new cell 6, new cell 8)")
    assert moved_class.notes[-2] == line
    assert moved_class.notes[-1].startswith("quinn<i>\\x1b[2J / ")  # escaped
    summary = summary_lines(moved_class.pairs, THRESHOLD, moved_class.notes)
    assert f"  note: {line}" in summary
    assert class_summary([], analysis=summary).count("hold no code of their own") == 2  # summary.txt's text
    csv_path, html_path = write_similarity(moved_class, tmp_path, {"mallory": "Mallory M"})
    with open(csv_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[1:]
    assert rows[-2] == ["mallory", "", ASSIGNMENT, "", "new cell 4; new cell 6; new cell 8", "Mallory M", "",
                        line]
    assert rows[-1][0] == "quinn<i>\\x1b[2J" and len(rows) == len(moved_class.pairs) + 2
    html = html_path.read_text(encoding="utf-8")
    assert html.index("<body>") < html.index("Scored with no code in the answer cells") < html.index("Matched Code")
    assert html_lib.escape(line) in html
    assert "quinn&lt;i&gt;\\x1b[2J / " in html and "quinn<i>" not in html


def test_new_sources_are_the_cells_the_student_wrote_or_changed():
    release = notebook(None)
    locked_copy = new_code_cell("print('a hidden test, I hope')")
    locked_copy.metadata["nbgrader"] = {"grade": True, "grade_id": "test_square_grad", "locked": True}
    foreign = new_code_cell("y = tf.square(3.0)")
    foreign.metadata["nbgrader"] = {"grade_id": "my_own", "solution": True}
    odd = new_code_cell("z = 1")
    odd.metadata["nbgrader"] = ["not", "a", "dict"]
    nb = notebook(ALICE)
    nb.cells += [new_code_cell("import tensorflow as tf\r\n\n"), new_code_cell(GIVEN + "\nprint(1)"),
                 locked_copy, foreign, odd, new_markdown_cell("x = 2")]
    got = new_sources(nb, release)
    assert got == {"new cell 9": GIVEN + "\nprint(1)", "new cell 11": "y = tf.square(3.0)", "new cell 12": "z = 1"}
    for junk in (None, [], {"cells": None}, {"cells": [None, 3, {"cell_type": "code", "source": 7}]}):
        assert new_sources(junk, release) == {}


def test_autograded_score_is_what_nbgrader_records():
    assert autograded_score(notebook(ALICE)) == (1.0, 1.0)  # no error output: full points
    assert autograded_score(notebook(None)) == (0.0, 1.0)  # an error output: none
    nb = notebook(ALICE)
    nb.cells[-1].outputs = [new_output("stream", name="stderr", text="warning\n")]
    assert autograded_score(nb) == (0.0, 1.0)  # nbgrader's rule: stderr costs the points
    broken = json.loads(nbformat.writes(notebook(ALICE)))
    broken["cells"][-1]["metadata"]["nbgrader"]["points"] = "many"
    broken["cells"][2]["metadata"]["nbgrader"].update(grade=True, points=5)  # an answer cell with points
    assert autograded_score(broken) == (0.0, 0.0)
    assert autograded_score(None) == autograded_score({"cells": [None, {"cell_type": "code"}]}) == (0.0, 0.0)
