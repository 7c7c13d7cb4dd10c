"""Unit tests of the grading pipeline's small parts: stderr handling, timeouts, feedback
tracebacks, failure reasons, the score table and the benchmark's synthetic class."""
import hashlib

import nbformat
from nbformat.v4 import new_code_cell, new_output

from autograder.grading.demo.benchmark import build_class
from autograder.grading.course import assignments
from autograder.grading.defaults import DEMO_NOT_RUN, DEMO_SKIPPED_KEY
from autograder.grading.run.results import NotebookGrade
from autograder.grading.failures import Outcome
from autograder.grading.nbgrader_api import read_failure
from autograder.grading.preprocessors.execute import GradingExecute
from autograder.grading.preprocessors.feedback import HideTracebacks
from autograder.grading.preprocessors.autograde import NameTimeouts, QuietTensorFlowStderr
from autograder.grading.run.reports import class_summary, score_table

TF_LOG = ("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
          "I0000 00:00:1796028359.377353    2077 port.cc:153] oneDNN custom operations are on.\n"
          "WARNING:tensorflow:The dtype of the watched tensor must be floating (e.g. tf.float32)\n")


def _cell(grade: bool, *outputs):
    meta = {"nbgrader": {"grade": grade, "grade_id": "test_x", "points": 1, "solution": False,
                         "locked": True, "schema_version": 3}}
    cell = new_code_cell("x", metadata=meta)
    cell.outputs = list(outputs)
    return cell


def test_tensorflow_log_lines_are_dropped_from_stderr():
    cell = _cell(False, new_output("stream", name="stderr", text=TF_LOG))
    cell, _ = QuietTensorFlowStderr().preprocess_cell(cell, {}, 0)
    assert cell.outputs == []


def test_other_stderr_in_a_graded_cell_is_shown_as_stdout_so_it_costs_no_points():
    cell = _cell(True, new_output("stream", name="stderr", text=TF_LOG + "doubling 2\n"))
    cell, _ = QuietTensorFlowStderr().preprocess_cell(cell, {}, 0)
    assert [(o.name, o.text) for o in cell.outputs] == [("stdout", "[stderr] doubling 2\n")]


def test_stderr_outside_graded_cells_stays_stderr():
    cell = _cell(False, new_output("stream", name="stderr", text="a real warning\n"))
    cell, _ = QuietTensorFlowStderr().preprocess_cell(cell, {}, 0)
    assert [(o.name, o.text) for o in cell.outputs] == [("stderr", "a real warning\n")]


def test_interrupted_cell_is_reported_as_a_timeout():
    cell = _cell(True, new_output("error", ename="KeyboardInterrupt", evalue="", traceback=["..."]))
    NameTimeouts(cell_timeout_s=7).preprocess(nbformat.v4.new_notebook(cells=[cell]), {})
    assert (cell.outputs[0].ename, cell.outputs[0].evalue) == \
        ("CellTimeoutError", "timed out after 7 s (an infinite loop?)")


def test_feedback_tracebacks_keep_only_the_message():
    tb = ["Traceback", "----> 3 check(fn, cases=[12.5, -3])  # hidden", "CheckFailed: expected 6"]
    cell = _cell(True, new_output("error", ename="CheckFailed", evalue="expected 6", traceback=tb))
    cell, _ = HideTracebacks().preprocess_cell(cell, {}, 0)
    assert cell.outputs[0].traceback == ["CheckFailed: expected 6"]


def test_read_failure_types_a_dead_kernel_and_otherwise_names_the_root_cause():
    kind, problem = read_failure("", "nbclient.exceptions.DeadKernelError: Kernel died")
    assert kind is Outcome.KERNEL_DIED and "kernel died" in problem
    assert read_failure("", "Traceback ...\nMemoryError\nMemoryError: ")[0] is Outcome.OUT_OF_MEMORY
    log = "  ValueError: bad cell\nnbgrader.converters.base.NbGraderException: see above"
    assert read_failure("", log) == (Outcome.FAILED, "grading failed: ValueError: bad cell")


def test_score_table_shows_points_problems_and_messages():
    grades = [NotebookGrade("ana", "01_x", "01_x", {"test_a": (2, 2), "test_b": (0, 3)},
                            {"test_b": "CheckFailed: [M01: unwatched tf.constant] got None"}),
              NotebookGrade("bo", "01_x", "01_x", {"test_a": (0, 2), "test_b": (0, 3)},
                            problem="not a valid notebook: an HTML page saved as .ipynb")]
    table = score_table(grades)
    assert "ana      2/2  0/3  2/5" in table
    assert "bo       0/2  0/3  0/5    not a valid notebook" in table
    assert "ana / test_b: CheckFailed: [M01" in table
    grades[0].executed = True
    summary = class_summary(grades)
    assert "01_x / a" in summary and "1/1" in summary and "1 x M01: unwatched tf.constant" in summary


def test_unanswered_work_is_two_reasons_in_the_summary_whatever_the_exercise():
    # An untouched notebook: one stub reached by its test, three checks missing their names.
    from autograder.checks.judge import FINDINGS

    def finding(code, what, type_=""):
        return "CheckFailed: " + FINDINGS[code][0].format(what=what, type=type_)

    messages = {"test_a": finding("not_answered", "a (hidden case 1)"),
                **{f"test_{n}": finding("not_defined", f"{n} (hidden case 1)", n)
                   for n in ("b", "c", "d")}}
    blank = NotebookGrade("ben", "01_x", "01_x", {k: (0, 1) for k in messages}, messages)
    blank.executed = True
    summary = class_summary([blank])
    assert "  1 x exercise not answered (NotImplementedError)" in summary, summary
    assert "  3 x a name the check needs is not defined" in summary, summary
    assert "could not be tested" not in summary


def test_benchmark_class_spans_every_assignment_with_twenty_students(tmp_path):
    pairs = build_class(tmp_path, 20)
    assert len({s for s, _ in pairs}) == 20
    assert {a for _, a in pairs} == set(assignments())
    for student_id, assignment_id in pairs:
        [nb] = (tmp_path / student_id / assignment_id).glob("*.ipynb")
        nbformat.read(nb, as_version=4)


def test_grading_a_folder_without_submissions_fails_and_names_the_layout(tmp_path, capsys):
    from autograder.cli import main

    (tmp_path / "class" / "frank" / "hw1").mkdir(parents=True)
    code = main(["grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
                 "--assignment", "01_gradient_tape", "--no-feedback"])
    err = capsys.readouterr().err
    assert code == 2
    assert "ignored" in err and "frank/hw1: not an assignment folder" in err
    assert "no submissions found" in err and "<student_id>/<assignment_id>/" in err


def _timed_out_cell(grade_id: str):
    cell = new_code_cell("import tensorflow as tf", metadata={"nbgrader": {
        "grade": False, "grade_id": grade_id, "locked": True, "solution": False, "schema_version": 3}})
    cell.outputs = [new_output("error", ename="CellTimeoutError", evalue="", traceback=[])]
    return cell


def test_later_missing_names_say_the_set_up_cell_timed_out_g17():
    nb = nbformat.v4.new_notebook()
    later = _cell(True, new_output("error", ename="NameError", evalue="name 'tf' is not defined",
                                   traceback=["..."]))
    nb.cells = [_timed_out_cell("setup"), later]
    for _ in range(2):  # the worker and the recording step both run it: said once
        nb, _ = NameTimeouts(cell_timeout_s=7).preprocess(nb, {})
    assert nb.cells[0].outputs[0].evalue == "timed out after 7 s (an infinite loop?)"
    assert later.outputs[0].evalue == ("the set-up cell timed out after 7 s, so what it defines "
                                       "is missing (name 'tf' is not defined)")


def test_missing_names_without_an_earlier_timeout_stay_as_they_are():
    nb = nbformat.v4.new_notebook()
    nb.cells = [_cell(True, new_output("error", ename="NameError", evalue="name 'f' is not defined",
                                       traceback=["..."]))]
    nb, _ = NameTimeouts(cell_timeout_s=7).preprocess(nb, {})
    assert nb.cells[0].outputs[0].evalue == "name 'f' is not defined"


def test_cli_stops_with_the_cause_and_the_fix_when_no_sandbox_can_start(tmp_path, monkeypatch, capsys):
    from autograder.cli import main

    (tmp_path / "class" / "erin" / "01_gradient_tape").mkdir(parents=True)
    monkeypatch.setenv("COURSE_BWRAP", "/bin/false")  # a bwrap that cannot start anything
    code = main(["grade", str(tmp_path / "class"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "the kernel sandbox (bwrap) failed to start: no message, exit code 1" in err
    assert "--no-sandbox" in err
    assert not (tmp_path / "out" / "gradebook.db").exists()


def test_readme_and_command_help_give_the_settings_own_defaults(capsys):
    import pytest as _pytest

    from autograder.cli import main
    from autograder.grading.course import REPO_ROOT
    from autograder.grading.defaults import CELL_TIMEOUT_S, DEFAULT_MEMORY_LIMIT_MB

    readme = (REPO_ROOT / "docs" / "instructors" / "grading.md").read_text()
    assert f"`--cell-timeout S`\n(default {CELL_TIMEOUT_S})" in readme
    assert f"(default {DEFAULT_MEMORY_LIMIT_MB}, MiB per notebook" in readme
    with _pytest.raises(SystemExit):
        main(["grade", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {CELL_TIMEOUT_S})" in help_text and f"(default: {DEFAULT_MEMORY_LIMIT_MB};" in help_text


def test_only_unchanged_demonstration_cells_that_no_grade_depends_on_are_skipped(tmp_path):
    """A real kernel runs the notebook; the demo source is listed by its sha256 as grading lists
    the cells tagged demo in solutions/."""
    demo = "print('demo ran')"
    nbgrader = {"schema_version": 3, "points": 1, "locked": True, "solution": False, "task": False}
    cells = [
        new_code_cell(demo),                                  # the author's demo: skipped
        new_code_cell(demo + "\nhelper = 1"),                 # edited by the student: runs
        new_code_cell(demo, metadata={"nbgrader": {**nbgrader, "grade": True,
                                                   "grade_id": "test_x"}}),        # graded: runs
        new_code_cell(demo, metadata={"nbgrader": {**nbgrader, "grade": False, "points": 0,
                                                   "solution": True, "locked": False,
                                                   "grade_id": "x"}}),             # answer: runs
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    executor = GradingExecute(kernel_name="python3", timeout=120, startup_timeout=300,
                              demo_sha256=[hashlib.sha256(demo.encode()).hexdigest()])
    executor.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    ran = ["demo ran" in "".join(o.get("text", "") for o in cell.outputs) for cell in nb.cells]
    assert ran == [False, True, True, True]
    # the skipped cell says so, in its output and its metadata (feedback keeps that note)
    assert [o.text for o in nb.cells[0].outputs] == [DEMO_NOT_RUN]
    assert [bool(c.metadata.get(DEMO_SKIPPED_KEY)) for c in nb.cells] == [True, False, False, False]


# A string a submission chooses (a finding the kernel sends back, a folder or file name): terminal
# escapes, a carriage return and a newline that start a forged line accusing a classmate, a bidi
# override that reverses what follows.
FORGED = "\x1b[2K\r\n  ada / 01_x: NEEDS REVIEW (forged)\x1b]0;t\x07\u202e"


def _forged_grades():
    cell = "test_a" + FORGED
    evil = NotebookGrade("ev" + FORGED, "01_x", "01_x", {cell: (0, 2)}, {cell: "CheckFailed: " + FORGED},
                         problem="p" + FORGED, restored=["r" + FORGED], notes=["n" + FORGED],
                         executed=True, failures=["execute: " + FORGED], review=["cell 3: " + FORGED])
    return [evil, NotebookGrade("ada", "01_x", "01_x", {cell: (2, 2)}, executed=True)]


def _assert_unforged(text: str):
    assert not set(text) & {"\x1b", "\r", "\x07", "\u202e"}, repr(text)
    assert not any(line.lstrip().startswith("ada / 01_x: NEEDS") for line in text.splitlines()), text
    assert "\\x1b[2K\\r\\n" in text


def test_every_string_from_a_submission_reaches_the_text_reports_escaped():
    from autograder.grading.run.reports import attention_lines

    grades = _forged_grades()
    for text in (score_table(grades), class_summary(grades), "\n".join(attention_lines(grades))):
        _assert_unforged(text)


def _gradebook_with(tmp_path, student_id, assignment_id):
    from nbgrader.api import Gradebook

    from autograder.grading.nbgrader_api import nbgrader_config
    from autograder.grading.layout import OutputLayout

    config = nbgrader_config(db_path=tmp_path / "gradebook.db")
    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
        gb.add_assignment(assignment_id)
        gb.add_student(student_id)
    return config, OutputLayout(tmp_path)


def test_no_csv_cell_starts_a_spreadsheet_formula(tmp_path):
    import csv
    import re

    from autograder.grading.run.reports import write_exports

    # "@x" is a student id nbgrader accepts; a message can start with what an exception is named.
    config, layout = _gradebook_with(tmp_path, "@SUM", "01_x")
    grades = [NotebookGrade("@SUM", "01_x", "01_x", {"test_a": (0, 2)},
                            {"test_a": '=HYPERLINK("http://x","y")'}, problem="+1" + FORGED,
                            notes=["-2+3"], failures=["\t=1"], review=["\r=1"], restored=["@x"])]
    write_exports(config, grades, layout)
    for path in (layout.grades_csv, layout.scores_csv):
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
        assert len(rows) == 2, rows
        for cell in rows[0] + rows[1]:
            assert not cell or cell[0] not in "=+-@\t\r" or re.fullmatch(r"-?\d+(\.\d+)?", cell), (path, cell)
            assert not set(cell) & {"\x1b", "\r", "\n", "\u202e"}, (path, cell)
        assert "'@SUM" in rows[1], (path, rows)
    text = layout.scores_csv.read_text()
    assert "'=HYPERLINK" in text and "'-2+3" in text


def test_a_failed_jobs_log_reaches_the_output_folder_escaped(tmp_path):
    from types import SimpleNamespace

    from autograder.grading.run.pipeline import ClassGrading
    from autograder.grading.jobs.job import JobResult
    from autograder.grading.layout import OutputLayout
    from autograder.grading.intake.submissions import Submission

    run = SimpleNamespace(layout=OutputLayout(tmp_path))
    result = JobResult("ada/01_x", Outcome.FAILED, problem="x" + FORGED, log="line 1\n\tline 2" + FORGED)
    relative = ClassGrading._keep_log(run, Submission("ada", "01_x", tmp_path), result)
    text = (tmp_path / relative).read_bytes().decode()
    assert "line 1\n\tline 2" in text and not set(text) & {"\x1b", "\r", "\x07", "\u202e"}, repr(text)
