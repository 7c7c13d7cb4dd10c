"""Routes a student found to hurt classmates or dodge a rule, each closed by a design change
(found by trying the grader as an attacker; the closing note lists them):

- the formgrader's view of the class (``OUT/submitted``) is the staged copies, under the ids they
  were graded as: a folder named after a classmate's safe id cannot take their place there, and
  no link a student put in their folder is ever followed by the formgrader's own autograde;
- a folder named in the shape of a safe id never keeps its name as its id, so no one can take a
  classmate's id, even where ``student_ids.csv`` was lost;
- a ``timestamp.txt`` that cannot be read (garbage, huge, a folder) is flagged for review, never
  silently "on time";
- a submission's HTML is made inert before the formgrader or feedback shows it.
"""
import os
import re

import nbformat
import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from autograder.grading.defaults import MAX_TIMESTAMP_BYTES
from autograder.grading.demo.samples import solution_answers
from autograder.grading.distribute.formgrader import CONFIG_TEMPLATE
from autograder.grading.intake.student_ids import _assign
from autograder.grading.kernels.bwrap import sandbox_problem
from autograder.grading.preprocessors.autograde import SanitizeHTML, clean_html
from autograder.grading.run.pipeline import grade_class
from tests.test_sandbox import ROOT
from tests.conftest import grading_workers, shared_scheduler

A = "01_gradient_tape"
RELEASE = ROOT / "notebooks" / A / f"{A}.ipynb"
FULL = {"test_square_grad": 2.0, "test_sum_squared_grad": 2.0, "test_train_step": 3.0, "test_fit_line": 3.0}


def _notebook(answers: dict[str, str] | None = None):
    nb = nbformat.read(RELEASE, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if answers and grade_id in answers:
            cell.source = answers[grade_id]
    return nb


def _write(root, student, nb, **files):
    folder = root / student / A
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{A}.ipynb")
    for name, data in files.items():
        (folder / name).write_text(data)
    return folder


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if sandbox_problem() is not None:
        pytest.skip("no kernel sandbox on this host")
    root = tmp_path_factory.mktemp("routes")
    submitted, out = root / "submitted", root / "out"
    answers = solution_answers(ROOT, A)
    _write(submitted, "jane doe", _notebook(answers))
    alice = _write(submitted, "alice", _notebook(answers))
    # mallory: named after jane's safe id, the release unanswered, and links to alice's answers and
    # to the course's solutions (hidden tests) beside it.
    [jane_id] = {v for k, v in _assign(["jane doe"], {}).items()}
    mallory = _write(submitted, jane_id, _notebook(), **{"timestamp.txt": "2026-01-01 00:00:00 UTC"})
    os.symlink(alice / f"{A}.ipynb", mallory / "answers.ipynb")
    os.symlink(ROOT / "solutions" / A / f"{A}.ipynb", mallory / "notes.txt")
    _write(submitted, "ted", _notebook(answers), **{"timestamp.txt": "1 " * MAX_TIMESTAMP_BYTES})
    (_write(submitted, "tia", _notebook(answers)) / "timestamp.txt").mkdir()
    run = grade_class(submitted, out, assignment_ids=[A], workers=grading_workers(), progress=False, feedback=False,
                      scheduler=shared_scheduler())
    return run, out, jane_id


def _by_folder(run):
    return {g.folder: g for g in run.grades}


def test_a_folder_named_after_a_classmates_id_gets_an_id_of_its_own(graded):
    run, _, jane_id = graded
    by = _by_folder(run)
    assert by["jane doe"].student_id == jane_id
    assert by[jane_id].student_id not in (jane_id, "jane doe") and by[jane_id].student_id.startswith(jane_id + "-")
    assert {c: s for c, (s, _) in by["jane doe"].scores.items()} == FULL
    assert by[jane_id].score == 0
    # The same without the mapping file: the ids come from the names, and the shape rule holds.
    assert _assign([jane_id, "jane doe"], {}) == {"jane doe": jane_id, jane_id: by[jane_id].student_id}


def test_the_formgrader_sees_the_staged_copies_under_the_graded_ids_and_no_link(graded):
    run, out, jane_id = graded
    view = out / "submitted"
    links = [p for p in view.rglob("*") if p.is_symlink()]
    assert links == []
    assert sorted(p.name for p in view.iterdir() if p.is_dir()) == sorted(g.student_id for g in run.grades)
    # jane's place holds jane's answers; mallory's holds her own notebook only (no links, no solutions).
    jane = nbformat.read(view / jane_id / A / f"{A}.ipynb", as_version=4)
    answers = solution_answers(ROOT, A)
    assert any(c.source == answers["square_grad"] for c in jane.cells)
    mallory = view / _by_folder(run)[jane_id].student_id / A
    assert sorted(p.name for p in mallory.iterdir()) == [f"{A}.ipynb", "timestamp.txt"]


def test_a_timestamp_that_cannot_be_read_is_flagged_not_taken_as_on_time(graded):
    run, out, _ = graded
    by = _by_folder(run)
    for folder in ("ted", "tia"):
        assert any("timestamp.txt left out" in flag and "no late penalty was applied" in flag
                   for flag in by[folder].review), by[folder].review
        assert not (out / "submitted" / by[folder].student_id / A / "timestamp.txt").exists()
    assert not any("timestamp" in flag for flag in by["alice"].review)
    assert "ted" in (out / "summary.txt").read_text().split("Needs review")[1]


def test_markdown_links_a_student_writes_lead_nowhere_unsafe():
    written = ["[x](javascript:alert(1))", "[y][r]\n\n[r]: javascript:alert(2)",
               "![i](javascript:alert(4))", "[z](JaVaScRiPt:alert(5))", "[w](java&#115;cript:alert(6))",
               "[v](vbscript:msgbox(7))", "[t](\tjavascript:alert(8))"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"My answer. {link}")
                                         for link in written])
    benign = "# Answer\n\n- [docs](https://www.tensorflow.org) and [below](#answer), $x^2$, `code`"
    nb.cells.append(nbformat.v4.new_markdown_cell(benign))
    nb, _ = SanitizeHTML().preprocess(nb, {})
    for written_link, cell in zip(written, nb.cells):
        rendered = markdown2html_mistune(cell.source)
        assert "My answer." in rendered, written_link
        assert not re.search(r"(?i)(href|src)=\"\s*(java|vb)", rendered), (written_link, rendered)
    assert nb.cells[-1].source == benign  # safe markdown stays markdown, as written


def test_html_a_student_writes_or_displays_is_made_inert():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell('<img src=x onerror="fetch(\'/api/terminals\')"> **ok** <b>b</b>'),
        nbformat.v4.new_code_cell("display(HTML(...))", outputs=[
            nbformat.v4.new_output("display_data", data={
                "text/html": "<script>alert(1)</script><table><thead><tr><th>a</th></tr></thead>"
                             "<tbody><tr><td>1</td></tr></tbody></table>"}),
            nbformat.v4.new_output("display_data", data={"application/javascript": "alert(2)"})])])
    nb, _ = SanitizeHTML().preprocess(nb, {})
    markdown, code = nb.cells
    assert "onerror" not in markdown.source and "<b>b</b>" in markdown.source
    html = code.outputs[0]["data"]["text/html"]
    assert "<script>" not in html and "&lt;script&gt;" in html and "<tbody><tr><td>1</td></tr></tbody>" in html
    assert code.outputs[1]["output_type"] == "stream" and "JavaScript output removed" in code.outputs[1]["text"]
    assert clean_html(html) == html  # the record pass cleans again: nothing changes
    assert "c.HTMLExporter.sanitize_html = True" in CONFIG_TEMPLATE
