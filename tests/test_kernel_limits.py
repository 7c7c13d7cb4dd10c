"""Limits per kernel (autograder.grading.kernels.cgroups): one kernel's tasks and memory are its own, counted
over all its threads and processes, and a failure of the grader's own machinery is never a grade.

Real kernels, started by the real kernel manager through nbclient, in the real sandbox; the
host reads the kernel's cgroup. (The sandbox tests add probes that run in every warm and cold
kernel: no user namespace, at most the kernel's own task limit of threads.)
"""
import csv
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from autograder.grading.defaults import MAX_TASKS_PER_KERNEL
from autograder.grading.failures import OUT_OF_MEMORY
from autograder.grading.kernels import warm as warm_kernels
from autograder.grading.kernels.cgroups import limit_problems
from autograder.grading.run.pipeline import ClassGrading, grade_class
from autograder.grading.kernels.managers import SandboxedKernelManager
from autograder.grading.kernels.bwrap import sandbox_problem
from tests.test_sandbox import ROOT, run_in_kernel

pytestmark = [
    pytest.mark.skipif(sandbox_problem() is not None,
                       reason=f"no sandbox on this host: {sandbox_problem()}"),
]
MISSING = limit_problems()
needs_cgroups = pytest.mark.skipif("memory" in MISSING or "tasks" in MISSING,
                                   reason=f"no per-kernel cgroup limits here: {MISSING}")

ROBUST = Path(__file__).resolve().parent / "robustness"
# Holds as many threads as the kernel may start (its cgroup's limit), for HOLD_S seconds.
HOLD_S = 15
THREAD_HOG = ("import threading, time\nhold = threading.Event(); started = 0\n"
              "try:\n    for _ in range(5000):\n"
              "        threading.Thread(target=hold.wait, daemon=True).start(); started += 1\n"
              f"except RuntimeError:\n    pass\ntime.sleep({HOLD_S}); hold.set(); print(started)")


def _client(cells: list[str], **traits):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            kernel_manager_class=SandboxedKernelManager, startup_timeout=300,
                            resources={"metadata": {"path": str(ROOT / "solutions")}})
    client.km = km = client.create_kernel_manager()
    for name, value in traits.items():
        setattr(km, name, value)
    return nb, client, km


def _tasks(km) -> int:
    """The tasks now in the kernel's pids cgroup (0 before it has one)."""
    cgroup = km.kernel_cgroup
    for folder in (cgroup.dirs if cgroup else []):
        if (folder / "pids.current").exists():
            return int((folder / "pids.current").read_text())
    return 0


@needs_cgroups
def test_a_kernel_holding_all_the_threads_it_may_start_does_not_stop_the_next_kernel():
    hog_nb, hog, hog_km = _client([THREAD_HOG])
    runner = threading.Thread(target=hog.execute, daemon=True)
    runner.start()
    deadline = time.monotonic() + 120
    while _tasks(hog_km) < 300 and runner.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _tasks(hog_km) >= 300, "the first kernel never started its threads"
    # While it holds them, the next student's kernel, forked by the same template, grades.
    outputs, km = run_in_kernel(["print(1 + 1)"])
    still_holding = _tasks(hog_km)
    runner.join(timeout=HOLD_S + 60)
    assert outputs == ["2\n"]
    assert km.warm_template is hog_km.warm_template and not km.provisioner.started_cold
    assert still_holding >= 300  # the first kernel still held its threads meanwhile
    started = int(hog_nb.cells[0].outputs[-1]["text"])
    assert 300 < started < MAX_TASKS_PER_KERNEL


@needs_cgroups
def test_a_kernels_processes_together_are_killed_at_its_memory_limit():
    limit = 3 * 2**30  # a warm kernel maps 2.6 GiB of address space: less would not start
    # Five children of 700 MiB each: each under the address-space limit, 3.4 GiB together.
    hog = ("import subprocess, sys, time\n"
           "code = 'b = bytearray(700 * 2**20); b[::4096] = bytes(len(b[::4096])); "
           "import time; time.sleep(60)'\n"
           "children = [subprocess.Popen([sys.executable, '-c', code]) for _ in range(5)]\n"
           "time.sleep(30)\nprint('survived', [c.poll() for c in children])")
    OUT_OF_MEMORY.clear()
    nb, client, km = _client(["print('before')", hog, "print('after')"], memory_limit_bytes=limit)
    started = time.monotonic()
    with pytest.raises(DeadKernelError):
        client.execute()
    assert time.monotonic() - started < 25  # killed at the limit, not after the cell's sleep
    assert "".join(o["text"] for o in nb.cells[0].outputs) == "before\n"  # one print, 1 or 2 messages
    assert nb.cells[2].outputs == []
    assert km.kernel_cgroup.peak_bytes <= limit
    assert OUT_OF_MEMORY == ["the kernel was killed: its processes together went past "
                                    "the memory limit (3072 MiB)"]
    assert not km.kernel_cgroup.dirs  # removed when the kernel ended


def test_a_kernel_whose_template_does_not_answer_starts_cold_and_grades():
    outputs, km = run_in_kernel(["print(1 + 1)"])  # a template is running
    template = km.warm_template
    (template.folder / "control").unlink()  # it can take no request now
    try:
        outputs, km = run_in_kernel(["print(2 + 2)"])
    finally:
        warm_kernels.stop_templates()
    assert outputs == ["4\n"]
    assert km.warm_template is template and km.provisioner.started_cold


def test_a_grader_failure_is_no_grade_and_the_next_run_grades_it(tmp_path, monkeypatch):
    submitted = tmp_path / "submitted"
    shutil.copytree(ROBUST / "submitted" / "full", submitted / "full")
    out = tmp_path / "out"
    run = ClassGrading(submitted, out, root=ROBUST / "course")
    run.stage()
    # The workers' bwrap is gone (a node of the cluster without it): no kernel can start, warm
    # or cold. The check at the start of the run passed; the workers start after it.
    with monkeypatch.context() as patch:
        patch.setenv("COURSE_BWRAP", str(tmp_path / "no-bwrap"))
        run.execute(1, progress=False)
    grade, = run.report(feedback=False).grades
    assert "the grader failed twice" in grade.problem and "run again" in grade.problem
    record = (out / "records" / "full" / "robust.json").read_text()
    assert '"sha256": null' in record
    rerun = grade_class(submitted, out, root=ROBUST / "course", workers=1, progress=False,
                        feedback=False)
    grade, = rerun.grades
    assert rerun.graded_now == 1 and grade.problem is None and grade.score == 3


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="needs root to make the cgroup file system read-only for one run")
def test_where_no_cgroup_can_be_made_the_run_says_which_limits_are_missing(tmp_path):
    submitted, out = tmp_path / "submitted", tmp_path / "out"
    shutil.copytree(ROBUST / "submitted" / "full", submitted / "full")
    # As in a container whose cgroup file system is read-only: in a mount namespace of its own.
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if line.split(" - ")[1].startswith(("cgroup ", "cgroup2 "))]
    remount = "".join(f"mount -o remount,bind,ro {p} && " for p in points)
    grade = shlex.join([sys.executable, "-m", "autograder.cli", "grade", str(submitted), "--out",
                        str(out), "--course-root", str(ROBUST / "course"), "--no-feedback",
                        "--workers", "1"])
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           remount + "exec " + grade], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text()
    for text in (proc.stdout, summary):
        assert "MISSING LIMIT: memory per kernel (cgroup)" in text
        assert "MISSING LIMIT: tasks per kernel (cgroup)" in text
    # Graded all the same, with the per-process and per-uid limits.
    with open(out / "scores_by_exercise.csv") as handle:
        assert sum(float(row["score"]) for row in csv.DictReader(handle)) == 3
