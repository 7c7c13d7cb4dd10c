"""Any student folder name is graded, cells graded by hand are shown as such, and the reports add
up (issue 21): the id mapping (autograder/grading/intake/student_ids.py) on its own, then a tiny
course (tests/robustness's, with a markdown answer cell and a task cell graded by hand) graded
three times by the real `course grade` command (autograder.cli.main, in the test's interpreter;
real kernels, real nbgrader): a first run; a second, `--force`, after a person gave manual scores
through nbgrader's Gradebook as the formgrader does; a third with nothing changed."""
import csv
import hashlib
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.grading.defaults import COURSE_ID, STUDENT_ID
from autograder.grading.distribute.release import release
from autograder.grading.intake.student_ids import StudentIdsError, assign_ids, read_ids
from autograder.grading.intake.submissions import student_id_problem
from tests.conftest import grading_workers, shared_scheduler
from tests.instructor_course import run_command

ROBUST = Path(__file__).resolve().parent / "robustness"
ASSIGNMENT = "robust"
AUTOMATIC = {"test_square": "1", "test_sign": "1", "test_noisy_double": "1"}
AWKWARD = ["jane doe", "o'neil", "lee (2)", "kim[2]"]


def _hash_id(slug: str, name: str) -> str:
    return f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


# --- the mapping on its own ---------------------------------------------------------------------

def test_names_nbgrader_cannot_use_get_distinct_safe_ids_kept_in_the_file(tmp_path):
    path = tmp_path / "student_ids.csv"
    ids = assign_ids(AWKWARD + ["ada", "-jo"], path)
    assert ids == {"jane doe": _hash_id("jane_doe", "jane doe"), "o'neil": _hash_id("o_neil", "o'neil"),
                   "lee (2)": _hash_id("lee_2", "lee (2)"), "kim[2]": _hash_id("kim_2", "kim[2]"),
                   "ada": "ada", "-jo": "-jo"}
    assert read_ids(path) == ids  # "-jo" is written '-jo (no formula) and read back as -jo
    # A later folder named as an id the file holds gets another; the first keep theirs.
    again = assign_ids([ids["jane doe"], "jane doe", "ada"], path)
    assert again["jane doe"] == ids["jane doe"] and again["ada"] == "ada"
    assert again[ids["jane doe"]] == _hash_id(ids["jane doe"], ids["jane doe"])
    assert all(STUDENT_ID.fullmatch(i) for i in read_ids(path).values())
    assert len(set(read_ids(path).values())) == 7


def test_ids_of_two_names_that_would_collide_differ(tmp_path):
    # "a_b-<8 hex digits of 'a b'>" has the shape of a safe id, so it never keeps its name (no
    # folder can be named after a classmate's id and take it): it gets one of its own.
    taken_by = _hash_id("a_b", "a b")
    ids = assign_ids(["a b", taken_by], tmp_path / "ids.csv")
    assert ids == {"a b": taken_by, taken_by: _hash_id(taken_by, taken_by)}
    # The file, not the order of a later run, decides: the same ids come back.
    assert assign_ids([taken_by, "a b"], tmp_path / "ids.csv") == ids


@pytest.mark.parametrize("name", ["..", ".x", "a/b", "tab\tname", "bell\x07", "evil\u202egnp.exe"])
def test_dangerous_folder_names_stay_refused_with_a_reason(name):
    assert "not graded" in student_id_problem(name)


@pytest.mark.parametrize("name", AWKWARD + ["maría lópez", "=cmd()", "'=x"])
def test_awkward_folder_names_are_not_refused(name):
    assert student_id_problem(name) is None


@pytest.mark.parametrize("tamper,why", [
    (lambda rows: rows[1].__setitem__(1, "../../etc"), "not an id nbgrader can use"),
    (lambda rows: rows[2].__setitem__(1, rows[1][1]), "listed twice"),
    (lambda rows: rows[1].__setitem__(0, "someone else"), "folder_hex is not the hex"),
    (lambda rows: rows[1].__setitem__(2, "zz"), "folder_hex is not the hex"),
    (lambda rows: rows[0].reverse(), "the header is not"),
    (lambda rows: rows[1].pop(), "2 cells, not 3"),
])
def test_a_tampered_mapping_is_a_clear_error_and_is_left_as_it_is(tmp_path, tamper, why):
    path = tmp_path / "student_ids.csv"
    assign_ids(["jane doe", "ada"], path)
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    tamper(rows)
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    before = path.read_bytes()
    with pytest.raises(StudentIdsError, match=re.escape(why)) as error:
        assign_ids(["jane doe", "ada", "new one"], path)
    assert str(path) in str(error.value) and "delete the file" in str(error.value)
    assert path.read_bytes() == before


def test_a_mapping_that_is_not_text_is_a_clear_error(tmp_path):
    path = tmp_path / "student_ids.csv"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(StudentIdsError, match="cannot be read"):
        assign_ids(["ada"], path)


def test_course_grade_stops_with_the_line_to_repair_on_a_tampered_mapping(tmp_path, capsys):
    from autograder.cli import main

    submitted = tmp_path / "class"
    (submitted / "jane doe" / ASSIGNMENT).mkdir(parents=True)
    out = tmp_path / "out"
    out.mkdir()
    (out / "student_ids.csv").write_text("folder,student_id,folder_hex\njane doe,*,6a\n")
    code = main(["grade", str(submitted), "--out", str(out), "--course-root",
                 str(ROBUST / "course"), "--no-feedback"])
    err = capsys.readouterr().err
    assert code == 2 and "student_ids.csv: line 2: folder_hex is not the hex" in err, err


# --- a class graded by hand and by the autograder ------------------------------------------------

def _course(root: Path) -> Path:
    """tests/robustness's course with a markdown answer cell (2 points) after test_square and a
    task cell (1 point) at the end: both graded by hand in nbgrader."""
    nb = nbformat.read(ROBUST / "course" / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    meta = {"schema_version": 3, "locked": False, "grade": True, "solution": True, "task": False}
    explain = nbformat.v4.new_markdown_cell("`square` needs no tape: it returns a value.")
    explain.metadata["nbgrader"] = {**meta, "grade_id": "explain", "points": 2}
    task = nbformat.v4.new_markdown_cell("Task: say which test you would add, and why.")
    task.metadata["nbgrader"] = {**meta, "grade_id": "reflect", "points": 1, "grade": False,
                                 "solution": False, "task": True, "locked": True}
    index = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells].index("test_square")
    nb.cells[index + 1:index + 1] = [explain]
    nb.cells.append(task)
    (root / "solutions" / ASSIGNMENT).mkdir(parents=True)
    nbformat.write(nb, root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    return root


def _submission(released: Path, explain: str | None) -> nbformat.NotebookNode:
    """The release with the answers of tests/robustness/submitted/full; ``explain`` answers the
    markdown cell (None: left as released)."""
    full = nbformat.read(ROBUST / "submitted" / "full" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in full.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    if explain is not None:
        answers["explain"] = explain
    nb = nbformat.read(released, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return nb


def _course_grade(submitted: Path, out: Path, course: Path, *extra: str, workers: int = 2):
    """`course grade` (autograder.cli.main, in this interpreter: tests/instructor_course.py's
    run_command, on the session's shared cluster): its exit code, what it printed, and the files
    it wrote."""
    proc = run_command(["grade", str(submitted), "--out", str(out), "--course-root", str(course),
                        "--workers", str(grading_workers(workers)), "--no-feedback",
                        "--scheduler", shared_scheduler(), *extra])
    with open(out / "scores_by_exercise.csv", newline="") as handle:
        cells = {(r["folder"], r["grade_id"]): r for r in csv.DictReader(handle)}
    with open(out / "grades.csv", newline="") as handle:
        rows = {r["folder"]: r for r in csv.DictReader(handle)}
    return proc, cells, rows, (out / "summary.txt").read_text(), (out / "student_ids.csv").read_text()


def _last_line(proc) -> str:
    [line] = [line for line in proc.stdout.splitlines() if " s; outputs in " in line]
    return line.split(" in ")[0]


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    course = _course(tmp_path_factory.mktemp("course"))
    released = tmp_path_factory.mktemp("release")
    [notebook] = release([ASSIGNMENT], root=course, release_dir=released,
                         db_path=released / "gradebook.db")
    submitted = tmp_path_factory.mktemp("class")
    for folder in AWKWARD + [".hidden"]:
        (submitted / folder / ASSIGNMENT).mkdir(parents=True)
        nbformat.write(_submission(notebook, "A value, no derivative."),
                       submitted / folder / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    (submitted / "ada" / ASSIGNMENT).mkdir(parents=True)
    nbformat.write(_submission(notebook, None), submitted / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    (submitted / "bob" / ASSIGNMENT).mkdir(parents=True)
    (submitted / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text("my homework, as text")
    (submitted / "cy" / ASSIGNMENT).mkdir(parents=True)  # an empty folder: nothing submitted
    out = tmp_path_factory.mktemp("out")
    return course, notebook, submitted, out, _course_grade(submitted, out, course)


def test_folders_nbgrader_cannot_name_get_full_marks_under_their_safe_ids(first):
    _, _, _, out, (proc, cells, rows, summary, _) = first
    assert proc.returncode == 1, proc.stdout + proc.stderr  # bob, cy and .hidden need attention
    for folder in AWKWARD + ["ada"]:
        student_id = cells[folder, "test_square"]["student_id"]
        assert {g: cells[folder, g]["score"] for g in AUTOMATIC} == AUTOMATIC, folder
        assert (out / "autograded" / student_id / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
        assert rows[folder]["student_id"] == student_id and rows[folder]["raw_score"] == "3.0"
    assert cells["jane doe", "test_square"]["student_id"] == _hash_id("jane_doe", "jane doe")
    assert cells["ada", "test_square"]["student_id"] == "ada"
    # The table and summary.txt show the folder beside the id.
    jane = _hash_id("jane_doe", "jane doe")
    assert re.search(rf"^{jane} +jane doe +1/1 +\?/2 +1/1 +1/1 +\?/1 +3/6 +needs manual grading",
                     proc.stdout, re.M), proc.stdout
    assert "kim[2]" not in summary.split("Needs attention")[1]  # graded, nothing to attend to
    hidden = cells[".hidden", "test_square"]
    assert hidden["status"] == "unreadable" and "not graded: a hidden folder" in hidden["problem"]
    assert not (out / "autograded" / ".hidden").exists()


def test_cells_graded_by_hand_show_as_needing_manual_grading(first):
    _, _, _, _, (_, cells, rows, summary, _) = first
    for folder in AWKWARD:
        for grade_id in ("explain", "reflect"):
            assert (cells[folder, grade_id]["score"], cells[folder, grade_id]["status"]) == \
                ("", "needs manual grading"), (folder, grade_id)
        assert rows[folder]["status"] == "needs manual grading"
    # An answer left as released is nbgrader's 0 at once ("No response"); the task still waits.
    assert (cells["ada", "explain"]["score"], cells["ada", "explain"]["status"]) == ("0", "graded")
    assert cells["ada", "reflect"]["status"] == "needs manual grading"
    rates = summary.split("Pass rate per exercise")[1].split("Graded by hand")[0]
    assert "explain" not in rates and "reflect" not in rates
    # Notebook order (square, sign, noisy_double), not alphabetical; each over the 5 graded.
    assert re.findall(r"robust / (\w+) +(\d+/\d+)", rates) == \
        [("square", "5/5"), ("sign", "5/5"), ("noisy_double", "5/5")], rates
    by_hand = summary.split("Graded by hand")[1].split("\n\n")[0]
    assert re.search(r"robust / explain +1 graded \(0 with full points\), 4 need manual grading",
                     by_hand), by_hand
    assert re.search(r"robust / reflect +0 graded \(0 with full points\), 5 need manual grading",
                     by_hand), by_hand


def test_counts_add_up_and_statuses_tell_the_zeros_apart(first):
    _, _, _, _, (proc, cells, rows, summary, _) = first
    counts = "8 notebooks (5 graded now, 0 unchanged since the last run, 1 not submitted, " \
             "2 unreadable); 5 of the graded need manual grading"
    assert _last_line(proc) == counts, proc.stdout
    assert summary.splitlines()[0] == counts.replace("5 graded now, 0 unchanged since the last run",
                                                     "5 graded")
    assert (rows["bob"]["score"], rows["bob"]["status"]) == ("0.0", "unreadable")
    assert (rows["cy"]["score"], rows["cy"]["status"]) == ("0.0", "not submitted")
    assert cells["cy", "test_square"]["status"] == "not submitted"
    assert re.search(r"^Submitted nothing:\n  robust \(1\): cy$", summary, re.M), summary
    with open(first[3] / "grades.csv", newline="") as handle:
        header = next(csv.reader(handle))
    assert header == ["assignment", "duedate", "timestamp", "student_id", "last_name",
                      "first_name", "email", "raw_score", "late_submission_penalty", "score",
                      "max_score", "folder", "status"]


LOOKALIKE = "\u0430da"  # a Cyrillic a, then "da": it reads as "ada"


def test_the_lms_files_score_each_submission_as_grades_csv_does(first):
    out = first[3]
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        theirs = {r["student_id"]: r for r in csv.DictReader(handle)}
    with open(out / "canvas_grades.csv", newline="", encoding="utf-8") as handle:
        canvas = {row[3]: row[5] for row in list(csv.reader(handle))[2:]}
    with open(out / "moodle_grades.csv", newline="", encoding="utf-8") as handle:
        moodle = {row[0]: row[3] for row in list(csv.reader(handle))[1:]}
    assert canvas == moodle and set(canvas) == set(theirs)
    for student, row in theirs.items():
        expected = "" if row["status"] == "not submitted" else \
            f"{float(row['score']):.2f}".rstrip("0").rstrip(".")
        assert canvas[student] == expected, (student, row["status"], row["score"])
    assert {r["status"] for r in theirs.values()} == {"needs manual grading", "unreadable", "not submitted"}
    assert (theirs["bob"]["status"], canvas["bob"]) == ("unreadable", "0")
    assert (theirs["cy"]["status"], canvas["cy"]) == ("not submitted", "")


@pytest.fixture(scope="module")
def second(first):
    """A person grades jane's two cells in the formgrader's way; a new folder is named as jane's
    id, another reads like ada's (LOOKALIKE, ada's notebook); the class is graded again with
    --force."""
    from nbgrader.api import Gradebook

    course, notebook, submitted, out, (_, cells, _, _, ids_before) = first
    jane = cells["jane doe", "explain"]["student_id"]
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", COURSE_ID) as gb:
        for grade_id, score in (("explain", 1.5), ("reflect", 1.0)):
            grade = gb.find_grade(grade_id, ASSIGNMENT, ASSIGNMENT, jane)
            grade.manual_score, grade.needs_manual_grade = score, False
        gb.db.commit()
    (submitted / jane / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(submitted / "jane doe" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", submitted / jane / ASSIGNMENT)
    shutil.copytree(submitted / "ada", submitted / LOOKALIKE)
    return jane, ids_before, _course_grade(submitted, out, course, "--force")


def test_manual_scores_survive_a_forced_regrade_and_reach_the_exports(first, second):
    from nbgrader.api import Gradebook

    jane, _, (proc, cells, rows, summary, _) = second
    assert (cells["jane doe", "explain"]["score"], cells["jane doe", "explain"]["status"]) == \
        ("1.5", "graded")
    assert (cells["jane doe", "reflect"]["score"], cells["jane doe", "reflect"]["status"]) == \
        ("1", "graded")
    assert (rows["jane doe"]["raw_score"], rows["jane doe"]["status"]) == ("5.5", "graded")
    with Gradebook(f"sqlite:///{first[3] / 'gradebook.db'}", COURSE_ID) as gb:
        assert gb.find_grade("explain", ASSIGNMENT, ASSIGNMENT, jane).manual_score == 1.5
    assert re.search(rf"^{jane} +jane doe +1/1 +1.5/2 +1/1 +1/1 +1/1 +5.5/6\b", proc.stdout, re.M)
    assert re.search(r"robust / explain +3 graded \(0 with full points\), 4 need manual grading",
                     summary), summary


def test_ids_stay_and_a_folder_named_as_a_taken_id_gets_another(second):
    jane, ids_before, (proc, cells, rows, _, ids_after) = second
    newcomer = cells[jane, "test_square"]["student_id"]  # the folder named as jane's id
    assert newcomer != jane and newcomer == _hash_id(jane, jane)
    assert {g: cells[jane, g]["score"] for g in AUTOMATIC} == AUTOMATIC
    assert set(ids_before.splitlines()) < set(ids_after.splitlines())
    assert _last_line(proc) == "10 notebooks (7 graded now, 0 unchanged since the last run, " \
        "1 not submitted, 2 unreadable); 6 of the graded need manual grading", proc.stdout


def test_a_folder_that_reads_like_a_classmates_shows_its_safe_id_everywhere(first, second):
    # ada was graded before and keeps her id; LOOKALIKE gets a safe id (its slug in ASCII), and a
    # note naming both folders, in the table and summary.txt; grades.csv and the LMS files give
    # it under that id, never as a second "ada".
    out = first[3]
    _, _, (proc, cells, rows, summary, _) = second
    safe = _hash_id("ada", LOOKALIKE)
    assert read_ids(out / "student_ids.csv")[LOOKALIKE] == safe
    assert (rows[LOOKALIKE]["student_id"], rows[LOOKALIKE]["raw_score"]) == (safe, "3.0")
    assert rows["ada"]["student_id"] == "ada" and cells[LOOKALIKE, "test_square"]["student_id"] == safe
    assert re.search(rf"^{safe} +{LOOKALIKE} +1/1 ", proc.stdout, re.M), proc.stdout
    with open(out / "canvas_grades.csv", newline="") as handle:
        canvas = [(r["Student"], r["SIS Login ID"]) for r in csv.DictReader(handle)]
    with open(out / "moodle_grades.csv", newline="") as handle:
        moodle = [r["Username"] for r in csv.DictReader(handle)]
    assert (safe, safe) in canvas and ("ada", "ada") in canvas and safe in moodle and "ada" in moodle
    assert not any(LOOKALIKE in cell for row in canvas for cell in row) and LOOKALIKE not in moodle
    note = (f"folder '{LOOKALIKE}' ('\\u0430da') reads like folder 'ada' (the same Unicode "
            f"confusable skeleton): graded as {safe} and ada")
    assert f"  {safe} (folder '{LOOKALIKE}') / {ASSIGNMENT}: {note}" in summary, summary
    assert f"  ada / {ASSIGNMENT}: folder 'ada' reads like folder '{LOOKALIKE}'" in summary
    assert "mixes scripts in one name (Cyrillic, Latin)" in summary


def test_a_run_with_nothing_changed_keeps_ids_and_manual_scores_and_counts_unchanged(first, second):
    course, _, submitted, out, _ = first
    # Nothing to grade: one worker is enough (a second would start for nothing).
    proc, cells, rows, _, ids = _course_grade(submitted, out, course, workers=1)
    assert _last_line(proc) == "10 notebooks (0 graded now, 7 unchanged since the last run, " \
        "1 not submitted, 2 unreadable); 6 of the graded need manual grading", proc.stdout
    assert ids == second[2][4]
    assert cells["jane doe", "explain"]["score"] == "1.5" and rows["jane doe"]["raw_score"] == "5.5"
