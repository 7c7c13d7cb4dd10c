"""The grading kernel's sandbox (bubblewrap): what a submission's code can and cannot reach.

A real kernel is started by the real kernel manager (:class:`SandboxedKernelManager`) through
nbclient, as nbgrader starts it, and runs probe cells; the host side checks the effects. Every
probe runs in a warm kernel (forked from a template) and in a cold one (the fallback).
"""
import errno
import hashlib
import os
import socket
import subprocess
import uuid
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.grading.defaults import MAX_TASKS_PER_KERNEL
from autograder.grading.kernels.cgroups import limit_problems
from autograder.grading.kernels.managers import SandboxedKernelManager
from autograder.grading.kernels.bwrap import sandbox_argv, sandbox_problem

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "autograder" / "checks" / "tapes.py"

pytestmark = pytest.mark.skipif(sandbox_problem() is not None,
                                reason=f"no sandbox on this host: {sandbox_problem()}")


def run_in_kernel(cells: list[str], warm: bool = True, timeout: int = 120, **traits):
    """Execute ``cells`` in one sandboxed kernel, warm or cold (a warm one falls back to cold only
    where no template starts), its kernel manager's ``traits`` set (``memory_limit_bytes=...``);
    returns (each cell's text output or error, the kernel manager)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            kernel_manager_class=SandboxedKernelManager, startup_timeout=300,
                            resources={"metadata": {"path": str(ROOT / "solutions")}})
    client.km = km = client.create_kernel_manager()
    km.warm = warm
    for name, value in traits.items():
        setattr(km, name, value)
    client.execute()
    return ["".join(o.get("text", "") or f"{o.get('ename')}: {o.get('evalue')}"
                    for o in cell.outputs) for cell in nb.cells], km


def _run(cells: list[str], warm: bool) -> list[str]:
    outputs, km = run_in_kernel(cells, warm)
    assert (km.warm_template is not None) == warm  # no silent fall back to cold
    return outputs


@pytest.fixture(scope="module", params=["warm", "cold"])
def probed(tmp_path_factory, request):
    secrets = tmp_path_factory.mktemp("secrets")
    gradebook = secrets / "gradebook.db"
    gradebook.write_text("hidden tests live here")
    other = secrets / "other_student.ipynb"
    other.write_text("{}")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    marker = f"sleep-{uuid.uuid4().hex}"
    checks_hash = hashlib.sha256(CHECKS.read_bytes()).hexdigest()
    os.environ["GRADER_SECRET_TOKEN"] = "do-not-leak"
    try:
        outputs = _run([
            "import os; print(os.getuid(), os.getcwd())",
            f"print(os.path.exists({str(ROOT / 'solutions')!r}), os.path.exists({str(ROOT / 'tests')!r}))",
            f"print(open({str(gradebook)!r}).read())",
            f"print(open({str(other)!r}).read())",
            f"import socket; socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), timeout=3)",
            f"open({str(CHECKS)!r}, 'a').write('# pwned')",
            "import subprocess\n"
            f"subprocess.Popen(['bash', '-c', 'exec -a {marker} sleep 600'], start_new_session=True)\n"
            "print('started')",
            "print(sorted(p for p in os.listdir('/proc') if p.isdigit()))",
            "print(os.environ.get('GRADER_SECRET_TOKEN'))",
            "import autograder.checks.tapes, utils; print('imports ok', os.listdir('.'))",
            "open('big', 'wb').write(b'0' * (512 * 2**20))",
            # A user namespace of its own would give it the capabilities to mount a tmpfs of any
            # size (memory the sandbox's tmpfs limits do not count).
            "import ctypes, subprocess\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "code = libc.unshare(0x10000000); error = ctypes.get_errno()\n"
            "r = subprocess.run(['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c',\n"
            "                    'mount -t tmpfs -o size=64g none /tmp && echo mounted'],\n"
            "                   capture_output=True, text=True)\n"
            "print(code, error, r.returncode, r.stdout.strip() or 'refused')",
            # As many threads as it may: its cgroup's task limit, not its user's.
            "import threading\nhold = threading.Event(); started = 0\n"
            "try:\n    for _ in range(5000):\n"
            "        threading.Thread(target=hold.wait, daemon=True).start(); started += 1\n"
            "except RuntimeError:\n    pass\nhold.set(); print(started)",
        ], warm=request.param == "warm")
        try:
            server.accept()
            connected = True
        except OSError:
            connected = False
    finally:
        os.environ.pop("GRADER_SECRET_TOKEN")
        server.close()
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return outputs, connected, left, checks_hash


def test_kernel_runs_unprivileged_in_a_private_working_folder(probed):
    outputs, *_ = probed
    uid, cwd = outputs[0].split()
    assert int(uid) != 0 and cwd == "/home/student"


def test_kernel_cannot_see_the_course_or_other_files(probed):
    outputs, *_ = probed
    assert outputs[1].strip() == "False False"
    assert outputs[2].startswith("FileNotFoundError") and outputs[3].startswith("FileNotFoundError")


def test_kernel_cannot_reach_the_hosts_loopback(probed):
    outputs, connected, *_ = probed
    assert outputs[4].startswith(("ConnectionRefusedError", "OSError", "TimeoutError")) and not connected


def test_kernel_cannot_write_the_checks(probed):
    outputs, *_, checks_hash = probed
    assert outputs[5].startswith(("PermissionError", "OSError"))
    assert hashlib.sha256(CHECKS.read_bytes()).hexdigest() == checks_hash


def test_nothing_the_kernel_starts_outlives_it(probed):
    outputs, _, left, _ = probed
    assert outputs[6].strip() == "started" and left == ""


def test_kernel_sees_only_its_own_processes_and_no_host_environment(probed):
    outputs, *_ = probed
    assert len(eval(outputs[7])) <= 6  # init, the kernel and its children
    assert outputs[8].strip() == "None"


def test_kernel_imports_the_checks_and_its_folder_is_size_limited(probed):
    outputs, *_ = probed
    assert "imports ok" in outputs[9]
    assert outputs[10].startswith("OSError") and ("No space left" in outputs[10] or "File too large" in outputs[10])


def test_kernel_cannot_make_a_user_namespace_so_cannot_mount_a_tmpfs(probed):
    outputs, *_ = probed
    code, error, unshare_status, mounted = outputs[11].split()
    assert (code, error) == ("-1", str(errno.EPERM)) and unshare_status != "0"
    assert mounted == "refused"


def test_kernel_starts_at_most_its_own_task_limit_of_threads(probed):
    outputs, *_ = probed
    if "tasks" in limit_problems():
        pytest.skip(f"no per-kernel task limit here: {limit_problems()['tasks']}")
    assert 100 < int(outputs[12]) < MAX_TASKS_PER_KERNEL


def test_sandbox_command_mounts_nothing_of_the_course_but_checks_and_utils(tmp_path):
    argv = sandbox_argv(tmp_path)
    sources = [argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")]
    course = [s for s in sources if s.startswith(str(ROOT)) and not s.startswith(str(ROOT / ".venv"))]
    assert sorted(course) == sorted([str(ROOT / "autograder" / "__init__.py"),
                                     str(ROOT / "autograder" / "checks"), str(ROOT / "utils")])
    assert str(tmp_path) in sources  # the kernel's own connection folder, read-write
