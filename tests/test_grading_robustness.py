"""The grading pipeline survives what a class submits (G01-G10 of STUDENT_MISTAKES.md), resumes
an interrupted run, never grades twice into two grades, and keeps one gradebook consistent when
two runs write at once. Uses the tiny course in tests/robustness (three one-point exercises)."""
import csv
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from autograder.grading.run.pipeline import grade_class
from autograder.grading.defaults import MAX_OUTPUT_LINES
from tests.conftest import grading_workers, hashes as _hashes, shared_scheduler

HERE = Path(__file__).resolve().parent / "robustness"
COURSE, SUBMITTED = HERE / "course", HERE / "submitted"
CELL_TIMEOUT_S = 20
FULL = {"test_square": 1.0, "test_sign": 1.0, "test_noisy_double": 1.0}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    before = _hashes(SUBMITTED)
    out = tmp_path_factory.mktemp("robust")
    run = grade_class(SUBMITTED, out, root=COURSE, workers=grading_workers(), progress=False,
                      cell_timeout_s=CELL_TIMEOUT_S, memory_limit_mb=4096,
                      scheduler=shared_scheduler())
    return run, before, {g.student_id: g for g in run.grades}


def _points(grade):
    return {cell: score for cell, (score, _) in grade.scores.items()}


def test_full_solution_gets_full_marks_with_stderr_in_test_cells_g08_g10(graded):
    # test_noisy_double triggers a TensorFlow warning and tf.print on stderr (G08); sign is a
    # tf.function whose `if` AutoGraph converts, which needs the source of a real kernel (G10).
    _, _, by = graded
    assert _points(by["full"]) == FULL and by["full"].messages == {}


def test_infinite_loop_scores_zero_for_that_exercise_only_g01(graded):
    _, _, by = graded
    assert _points(by["g01_infinite_loop"]) == {**FULL, "test_square": 0.0}
    assert by["g01_infinite_loop"].messages["test_square"] == \
        f"CellTimeoutError: timed out after {CELL_TIMEOUT_S} s (an infinite loop?)"


def test_kernel_that_exits_counts_no_test_as_passed_and_says_so_g02(graded):
    _, _, by = graded
    grade = by["g02_kernel_exit"]
    assert grade.score == 0 and "kernel died" in grade.problem
    assert all("kernel died" in m for m in grade.messages.values())


def test_memory_blowup_stops_at_the_limit_and_the_rest_is_graded_g02(graded):
    _, _, by = graded
    grade = by["g02_memory_blowup"]
    assert _points(grade) == {**FULL, "test_square": 0.0}
    assert grade.messages["test_square"].startswith("MemoryError")


def test_deleted_test_cell_is_restored_and_graded_g03(graded):
    _, _, by = graded
    grade = by["g03_deleted_test"]
    assert _points(grade) == FULL and grade.max_score == 3
    assert grade.restored == ["test_sign (deleted)"]


def test_edited_and_retyped_test_cells_are_restored_and_reported_g04(graded):
    _, _, by = graded
    grade = by["g04_edited_locked"]
    # The student replaced test_square with `pass` to hide a wrong square(): restored, it fails.
    assert _points(grade) == {**FULL, "test_square": 0.0}
    assert grade.restored == ["test_square (edited)", "test_noisy_double (changed to markdown)"]


@pytest.mark.parametrize("student_id,reason", [
    ("g05_truncated", "not JSON (truncated or corrupted?)"),
])
def test_invalid_notebook_gets_a_reason_and_zero_g05(graded, student_id, reason):
    _, _, by = graded
    assert reason in by[student_id].problem and by[student_id].score == 0
    assert not by[student_id].executed


def test_stripped_nbgrader_metadata_is_recovered_from_the_release_and_graded_g05(graded):
    # Every cell lost its metadata (issue 21; refusals of what cannot be aligned:
    # tests/test_intake_frontends.py).
    _, _, by = graded
    grade = by["g05_stripped_metadata"]
    assert _points(grade) == FULL and grade.problem is None and grade.restored == []
    assert "nbgrader metadata of 10 cells recovered from the release" in grade.notes[0]


def test_unknown_kernelspec_is_graded_with_the_course_kernel_g06(graded):
    _, _, by = graded
    assert _points(by["g06_unknown_kernel"]) == FULL


def test_huge_output_is_graded_and_truncated_g07(graded):
    run, _, by = graded
    assert _points(by["g07_huge_output"]) == FULL
    nb = nbformat.read(run.out / "autograded" / "g07_huge_output" / "robust" / "robust.ipynb", 4)
    for cell in nb.cells:
        lines = sum(o.get("text", "").count("\n") for o in cell.get("outputs", []))
        assert lines <= MAX_OUTPUT_LINES + 2
    feedback = run.out / "feedback" / "g07_huge_output" / "robust" / "robust.html"
    assert feedback.stat().st_size < 1_000_000


def test_values_that_vary_run_to_run_are_compared_with_tolerance_g09(graded):
    _, _, by = graded
    assert _points(by["g09_noisy_values"]) == FULL


def test_submitted_files_are_byte_identical_after_grading(graded):
    _, before, _ = graded
    assert _hashes(SUBMITTED) == before


def _subset(tmp_path: Path, students: list[str]) -> Path:
    folder = tmp_path / "submitted"
    for student in students:
        shutil.copytree(SUBMITTED / student, folder / student)
    return folder


def _course_grade(submitted: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "autograder.cli", "grade", str(submitted), "--out", str(out),
         "--course-root", str(COURSE), "--no-feedback", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _submission_rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return con.execute(
            "SELECT student.id, COUNT(grade.id), SUM(COALESCE(grade.auto_score, 0)) "
            "FROM submitted_assignment JOIN student ON student.id = submitted_assignment.student_id "
            "JOIN submitted_notebook ON submitted_notebook.assignment_id = submitted_assignment.id "
            "JOIN grade ON grade.notebook_id = submitted_notebook.id "
            "GROUP BY submitted_assignment.id ORDER BY student.id").fetchall()


def test_interrupted_run_started_again_grades_only_the_rest(tmp_path):
    students = ["full", "g06_unknown_kernel", "g09_noisy_values"]
    submitted, out = _subset(tmp_path, students), tmp_path / "out"
    proc = _course_grade(submitted, out, "--workers", "1")
    deadline = time.monotonic() + 300
    while not list((out / "records").glob("*/robust.json")) and time.monotonic() < deadline:
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # the instructor's laptop lid closes
    proc.wait()
    done_before = {p.parent.name for p in (out / "records").glob("*/robust.json")}
    assert 1 <= len(done_before) < len(students)

    run = grade_class(submitted, out, root=COURSE, workers=grading_workers(), progress=False,
                      feedback=False, scheduler=shared_scheduler())
    assert run.reused == len(done_before) and run.graded_now == len(students) - len(done_before)
    assert all(_points(g) == FULL for g in run.grades)
    assert _submission_rows(out / "gradebook.db") == [(s, 3, 3.0) for s in students]


def test_grading_twice_leaves_one_grade_per_cell(tmp_path):
    submitted, out = _subset(tmp_path, ["full", "g04_edited_locked"]), tmp_path / "out"
    for _ in range(2):
        run = grade_class(submitted, out, root=COURSE, workers=grading_workers(), progress=False,
                          feedback=False, force=True, cell_timeout_s=CELL_TIMEOUT_S,
                          scheduler=shared_scheduler())
    assert run.graded_now == 2
    assert _submission_rows(out / "gradebook.db") == [("full", 3, 3.0), ("g04_edited_locked", 3, 2.0)]


def test_two_grade_commands_at_once_keep_the_gradebook_consistent(tmp_path):
    students = ["full", "g03_deleted_test", "g06_unknown_kernel"]
    submitted, out = _subset(tmp_path, students), tmp_path / "out"
    # Two clients, one cluster: what is shared is the gradebook, not the workers.
    procs = [_course_grade(submitted, out, "--scheduler", shared_scheduler(), "--force")
             for _ in range(2)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert _submission_rows(out / "gradebook.db") == [(s, 3, 3.0) for s in students]


def _start_postgres():
    """Start a throwaway PostgreSQL server on a Unix socket; returns (url, stop command, folder)."""
    initdb = shutil.which("initdb") or next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))), None)
    if not initdb:
        pytest.skip("no PostgreSQL server on this machine (initdb not found)")
    pytest.importorskip("psycopg")
    bindir = Path(initdb).parent
    # PostgreSQL refuses to run as root: as root, run it as the postgres user, in a folder that
    # user can reach (pytest's tmp_path is private to root).
    folder = Path(tempfile.mkdtemp(prefix="pg-"))
    os.chmod(folder, 0o755)
    as_user = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data, sock = folder / "data", folder
    subprocess.run(as_user + [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "grader"],
                   check=True, capture_output=True)
    subprocess.run(as_user + [str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(folder / "pg.log"),
                    "-o", f"-k {sock} -c listen_addresses=''", "start"], check=True, capture_output=True)
    stop = as_user + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
    return f"postgresql://grader@/postgres?host={sock}", stop, folder


def test_postgresql_gradebook_gives_the_same_scores_as_sqlite(tmp_path, graded):
    _, _, by = graded
    url, stop, folder = _start_postgres()
    try:
        students = ["full", "g04_edited_locked", "g05_truncated"]
        submitted = _subset(tmp_path, students)
        run = grade_class(submitted, tmp_path / "out", root=COURSE, workers=grading_workers(), progress=False,
                          feedback=False, db_url=url, scheduler=shared_scheduler())
        assert {g.student_id: _points(g) for g in run.grades} == \
            {s: _points(by[s]) for s in students}
        assert "full" in (tmp_path / "out" / "grades.csv").read_text()
    finally:
        subprocess.run(stop, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def test_run_without_the_sandbox_says_so_in_the_table_and_the_summary(tmp_path):
    submitted, out = _subset(tmp_path, ["full"]), tmp_path / "out"
    proc = _course_grade(submitted, out, "--no-sandbox", "--scheduler", shared_scheduler())
    stdout = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, stdout
    assert "NOT SANDBOXED" in stdout and "NOT SANDBOXED" in (out / "summary.txt").read_text()
    with open(out / "scores_by_exercise.csv") as handle:
        assert sum(float(r["score"]) for r in csv.DictReader(handle)) == 3
    # The next run, sandboxed, grades it again rather than keeping an unsandboxed grade unsaid.
    again = _course_grade(submitted, out, "--scheduler", shared_scheduler())
    stdout = again.communicate(timeout=600)[0]
    assert again.returncode == 0 and "(1 graded now, 0 unchanged" in stdout, stdout
    assert "NOT SANDBOXED" not in stdout + (out / "summary.txt").read_text()


def test_worker_lost_mid_job_has_its_job_rescheduled_and_grades_stay_the_same(tmp_path):
    import psutil

    students = ["full", "g04_edited_locked", "g06_unknown_kernel", "g09_noisy_values"]
    submitted, out = _subset(tmp_path, students), tmp_path / "out"
    proc = _course_grade(submitted, out, "--workers", "2", "--force")
    cli = psutil.Process(proc.pid)
    killed, deadline = None, time.monotonic() + 600
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        # a Dask worker process that is grading: it has a kernel (its child) running
        for worker in cli.children():
            if worker.children(recursive=True):
                worker.kill()
                killed = worker.pid
                break
        time.sleep(0.2)
    stdout = proc.communicate(timeout=900)[0]
    assert killed is not None, stdout
    assert proc.returncode == 0, stdout
    assert _submission_rows(out / "gradebook.db") == [
        ("full", 3, 3.0), ("g04_edited_locked", 3, 2.0), ("g06_unknown_kernel", 3, 3.0),
        ("g09_noisy_values", 3, 3.0)]


def test_grading_on_separately_started_dask_workers_gives_the_same_scores(tmp_path):
    # A real `dask scheduler` and two `dask worker` processes, each in a folder of its own: the
    # jobs carry their data, so the workers read nothing of the course or of the output folder.
    dask = str(Path(sys.executable).parent / "dask")
    port = _free_port()
    started = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                 "--no-dashboard"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)]
    try:
        for name in ("w1", "w2"):
            (tmp_path / name).mkdir()
            started.append(subprocess.Popen(
                [dask, "worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--no-dashboard",
                 "--local-directory", str(tmp_path / name)], cwd=tmp_path / name,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        students = ["full", "g04_edited_locked", "g06_unknown_kernel"]
        submitted, out = _subset(tmp_path, students), tmp_path / "out"
        proc = _course_grade(submitted, out, "--scheduler", f"tcp://127.0.0.1:{port}")
        stdout = proc.communicate(timeout=900)[0]
        assert proc.returncode == 0, stdout
        assert _submission_rows(out / "gradebook.db") == [
            ("full", 3, 3.0), ("g04_edited_locked", 3, 2.0), ("g06_unknown_kernel", 3, 3.0)]
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
