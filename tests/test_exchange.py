"""nbgrader's exchange, end to end, with the commands of the README's JupyterHub section.

An instructor releases 01 into a temporary exchange; two students fetch it, answer (ada: every
answer of the solution; ben: the first two only) and submit; the instructor collects, grades the
collected submissions with ``course grade`` and releases the feedback; each student fetches their
own feedback, which holds their score and no hidden test. The students run ``nbgrader`` with the
configuration ``python -m autograder.grading.distribute.exchange`` prints, as ``~/.jupyter/nbgrader_config.py``
in a home of their own, and JupyterLab's Assignment List (nbgrader's server-side class) finds the
course there. When the tests run as root, each student runs as an unprivileged user of their own,
so the exchange's file permissions are tested as on a shared server (where that user cannot run
this Python, e.g. an interpreter under /root, the students run as the test's user and only the
modes are checked).
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.grading.defaults import COURSE_ID
from autograder.grading.distribute.exchange import student_config
from autograder.grading.run.pipeline import grade_class
from autograder.grading.run.reports import attention_lines
from autograder.grading.demo.samples import solution_answers
from tests.conftest import shared_scheduler
from tests.test_release import _hidden_test_lines

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "01_gradient_tape"
STUDENTS = {"ada": 61001, "ben": 61002}  # student id -> uid (when the tests run as root)
BEN_ANSWERS = ("square_grad", "sum_squared_grad")


def _nbgrader(*args, cwd, env, user=None):
    """Run ``nbgrader ARGS`` (as ``user``, a uid, when given); return its log."""
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300,
                            **({"user": user, "group": user, "extra_groups": []} if user else {}))
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{log}"
    return log


def _can_run_as(uid: int) -> bool:
    try:
        return subprocess.run([sys.executable, "-c", "import nbgrader"], user=uid, group=uid,
                              extra_groups=[], cwd="/", capture_output=True,
                              timeout=120).returncode == 0
    except PermissionError:
        return False


@pytest.fixture(scope="module")
def round_trip():
    as_root = os.geteuid() == 0 and all(_can_run_as(uid) for uid in STUDENTS.values())
    # Not pytest's tmp_path: its folders are private to root, and students must reach the exchange.
    base = Path(tempfile.mkdtemp(prefix="exchange-test-"))
    base.chmod(0o755)
    exchange, klass = base / "exchange", base / "class"
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("JUPYTER_", "COURSE_")) and k != "PYTHONPATH"}
    instructor = clean | {"COURSE_EXCHANGE": str(exchange), "COURSE_CLASS_DIR": str(klass)}
    log = {}

    # Instructor: release (nbgrader creates the exchange with the modes it needs).
    log["release"] = _nbgrader("release_assignment", ASSIGNMENT, cwd=ROOT, env=instructor)

    homes, envs = {}, {}
    for student, uid in STUDENTS.items():
        home = homes[student] = base / student
        (home / ".jupyter").mkdir(parents=True)
        (home / ".jupyter" / "nbgrader_config.py").write_text(student_config(str(exchange)))
        if as_root:
            for path in [home, *home.rglob("*")]:
                os.chown(path, uid, uid)
        envs[student] = clean | {"HOME": str(home), "USER": student, "LOGNAME": student,
                                 "PYTHONDONTWRITEBYTECODE": "1"}
    user = {s: (uid if as_root else None) for s, uid in STUDENTS.items()}

    solution = solution_answers(ROOT, ASSIGNMENT)
    for student, home in homes.items():
        _nbgrader("fetch_assignment", ASSIGNMENT, f"--student={student}", cwd=home,
                  env=envs[student], user=user[student])
        path = home / COURSE_ID / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in solution and (student == "ada" or grade_id in BEN_ANSWERS):
                cell.source = solution[grade_id]
        nbformat.write(nb, path)
        _nbgrader("submit", ASSIGNMENT, f"--student={student}", cwd=home, env=envs[student],
                  user=user[student])

    # Instructor: collect, grade, release feedback.
    log["collect"] = _nbgrader("collect", ASSIGNMENT, cwd=ROOT, env=instructor)
    run = grade_class(klass / "submitted", klass / "grading", assignment_ids=[ASSIGNMENT],
                      workers=1, progress=False, scheduler=shared_scheduler())
    log["release_feedback"] = _nbgrader("release_feedback", ASSIGNMENT, cwd=ROOT, env=instructor)

    fetched = {}
    for student, home in homes.items():
        _nbgrader("fetch_feedback", ASSIGNMENT, f"--student={student}", cwd=home,
                  env=envs[student], user=user[student])
        fetched[student] = sorted((home / COURSE_ID / ASSIGNMENT / "feedback").glob("*/*.html"))
    courses = {s: _assignment_list_courses(homes[s], envs[s], user[s]) for s in STUDENTS}
    yield {"run": run, "fetched": fetched, "exchange": exchange, "class": klass, "log": log,
           "courses": courses, "homes": homes}
    shutil.rmtree(base, ignore_errors=True)


def _assignment_list_courses(home: Path, env: dict, user):
    """What JupyterLab's Assignment List asks its server for (``list_courses``), answered by
    nbgrader's server-side class with the server's root in the student's home."""
    script = textwrap.dedent("""
        import json, os
        from nbgrader.server_extensions.assignment_list.handlers import AssignmentList
        lister = AssignmentList()
        lister.root_dir = os.getcwd()
        print(json.dumps([lister.list_courses(), lister.list_assignments()]))
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=home, env=env, text=True,
                            capture_output=True, timeout=300,
                            **({"user": user, "group": user, "extra_groups": []} if user else {}))
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _grade(run, student):
    [grade] = [g for g in run.grades if g.student_id == student]
    return grade


def _visible_text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_collect_gets_both_submissions_with_nbgraders_files(round_trip):
    for student in STUDENTS:
        folder = round_trip["class"] / "submitted" / student / ASSIGNMENT
        assert sorted(p.name for p in folder.iterdir()) == [
            f"{ASSIGNMENT}.ipynb", "submission_secret.txt", "timestamp.txt"]


def test_course_grade_scores_the_collected_submissions(round_trip):
    run = round_trip["run"]
    ada, ben = _grade(run, "ada"), _grade(run, "ben")
    assert attention_lines(run.grades) == []
    assert ada.score == ada.max_score > 0
    assert {k for k, (s, m) in ben.scores.items() if s == m} == {f"test_{a}" for a in BEN_ANSWERS}


def test_each_student_fetches_only_their_feedback_without_hidden_tests(round_trip):
    hidden = _hidden_test_lines(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    run = round_trip["run"]
    for student in STUDENTS:
        [page] = round_trip["fetched"][student]
        assert page.name == f"{ASSIGNMENT}.html"
        text = _visible_text(page)
        grade = _grade(run, student)
        assert re.search(rf"Score:\s*{grade.score:g}(\.0)?\s*/\s*{grade.max_score:g}", text), student
        assert [line for line in hidden if line in text] == []
        assert page.read_bytes() == (round_trip["class"] / "grading" / "feedback" / student
                                     / ASSIGNMENT / f"{ASSIGNMENT}.html").read_bytes()


def test_assignment_list_finds_the_course_with_the_students_config(round_trip):
    for student, (courses, assignments) in round_trip["courses"].items():
        assert courses == {"success": True, "value": [COURSE_ID]}
        assert assignments["success"]
        statuses = {(a["assignment_id"], a["status"]) for a in assignments["value"]}
        assert (ASSIGNMENT, "fetched") in statuses and (ASSIGNMENT, "submitted") in statuses


def test_exchange_modes_let_students_in_and_keep_submissions_private(round_trip):
    course = round_trip["exchange"] / COURSE_ID
    assert (round_trip["exchange"].stat().st_mode & 0o777) == 0o777
    assert (course / "inbound").stat().st_mode & 0o7777 == 0o2733  # write-only for students
    assert (course / "feedback").stat().st_mode & 0o777 == 0o711   # no listing
    for page in (course / "feedback").iterdir():
        assert page.stat().st_mode & 0o004, f"{page} is not readable by students"


def test_exchange_course_id_is_the_gradebooks():
    from traitlets.config import Config

    from autograder.grading.configure import configure

    c = Config()
    configure(c, sandbox=False)
    assert c.CourseDirectory.course_id == COURSE_ID
