"""A warm-kernel template: runs inside a kernel sandbox (:mod:`.kernels.bwrap`) and forks grading
kernels that start with TensorFlow, NumPy, matplotlib, IPython and the checks already imported.

    python -c BOOT_SOURCE FOLDER   (kernels.warm: syscalls.py as kernel_syscalls, then this file)

The template imports what every notebook's set-up cell imports (running no TensorFlow op, so no
TensorFlow thread pool or device exists yet), then listens on ``FOLDER/control`` (a Unix socket;
the host's end is :mod:`.kernels.warm`). For each request it forks once; the template itself
never runs a student's code. The fork (the kernel's *keeper*) gives the kernel namespaces of its
own, nested in the sandbox's: user, mount, pid, network, IPC and UTS, with fresh size-limited
``/tmp``, working folder and ``/dev/shm``, and ``FOLDER`` hidden except the kernel's own
connection folder, in a session of its own (so a scheduler autogroup of its own). It forks an
init, pid 1 of the new pid namespace, which forks the kernel: the init, our code, dies with the
keeper, and everything in the namespace dies with it, whatever the kernel does; it also makes the
kernel's connection folder read-only once its sockets exist. The kernel drops every capability,
takes its address-space limit,
re-seeds NumPy's random generator from the OS (a fork would repeat the template's; Python's
re-seeds itself), starts TensorFlow's runtime and runs ipykernel with the request's connection
file. A kernel sees in ``/proc`` the sandbox's init, the template, its own keeper and init (no
fresh ``/proc`` can be mounted in a nested namespace), but can neither signal nor trace them:
they are outside its pid namespace or pid 1 of it, and not dumpable.

Limits of the kernel's own (see :mod:`.kernels.cgroups`): the keeper joins the kernel's cgroup
before anything else (the host made it and sends its ``cgroup.procs`` files, open for writing: no
cgroup file system is mounted here), so the keeper, its init, the kernel and all they start count
against the kernel's memory and task limits; the kernel loads the seccomp filter the host sends,
which refuses new user namespaces (the template's own unshare, above, comes before it).

Protocol (one connection per kernel): the host sends one JSON line ``{"kernel_dir",
"connection_file", "arguments", "memory_limit_bytes", "work_size_mb", "cgroup_fds",
"userns_filter"}`` (``arguments``: ipykernel's command-line options after the connection file;
``userns_filter``: a seccomp program in hex, "" for none) with 2 + ``cgroup_fds`` file descriptors
(the kernel's stdout and stderr, then its ``cgroup.procs`` files) attached; the template answers
``started`` once the keeper is in the cgroup (``refused REASON`` when it cannot be), then
``exited CODE`` when the kernel ends. The host may send ``kill`` or ``signal N``; closing the
connection kills the kernel.

Only the standard library is used before the fork, besides the imports that warm the kernel.
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import socket
import stat
import sys
import time
import traceback
from pathlib import Path

# Not a file here: the host's start line (kernels.warm.BOOT_SOURCE) makes this module from the
# text of kernel_side/syscalls.py before it runs this one.
from kernel_syscalls import (CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER,
                             CLONE_NEWUTS, MS_BIND, MS_NODEV, MS_NOSUID, MS_PRIVATE, MS_REC,
                             PR_SET_DUMPABLE, PR_SET_PDEATHSIG, check, drop_capabilities, libc,
                             make_read_only, mount, mounts_under, prctl, refuse_user_namespaces)

# Mirrors of the sandbox's settings (autograder.grading.defaults, not mounted in the sandbox;
# tests/test_grading_layers.py checks that they agree).
WORKDIR = "/home/student"
SHM_SIZE_MB = 64
MPL_CONFIG_DIR = f"{WORKDIR}/.config/matplotlib"
# The fresh tmpfs of each kernel (the sandbox mounts the same, kernels.bwrap.sandbox_argv).
FRESH_TMPFS = ("/tmp", WORKDIR, "/dev/shm")
# Most cgroup.procs files a request may carry (a v1 hierarchy per controller, memory and pids).
MAX_CGROUP_FDS = 4


def preload() -> None:
    """Import what the notebooks' set-up cells import, in their order, and the kernel's own code;
    run no TensorFlow op (a forked TensorFlow must start its runtime after the fork)."""
    os.environ["WORKBOOK_WARM_TEMPLATE"] = "1"  # utils imports TensorFlow without starting it
    import utils  # noqa: F401  first, as in the notebooks
    import numpy  # noqa: F401
    import tensorflow  # noqa: F401
    import matplotlib.pyplot  # noqa: F401
    import matplotlib_inline.backend_inline  # noqa: F401
    import tqdm.auto  # noqa: F401
    import utils.data, utils.devices, utils.plots, utils.timing  # noqa: F401, E401
    import autograder.checks.control_flow, autograder.checks.graphs  # noqa: F401, E401
    import autograder.checks.software, autograder.checks.tapes, autograder.checks.scale  # noqa: F401, E401
    import autograder.checks.pitfalls, autograder.checks.training, autograder.checks.harness  # noqa: F401, E401
    import ipykernel.ipkernel, ipykernel.kernelapp, ipykernel.zmqshell  # noqa: F401, E401


def _start_keeper(request: dict, out_fd: int, err_fd: int, cgroup_fds: list[int],
                  status_fd: int, template_fds: list[int]) -> None:
    """In the fork (the keeper): join the kernel's cgroup (and say so on ``status_fd``), isolate,
    fork the namespace's init, which forks the kernel; wait for the init and exit with the
    kernel's exit code."""
    try:
        for fd in template_fds:  # the template's sockets: never the kernel's
            os.close(fd)
        try:
            for fd in cgroup_fds:
                os.write(fd, b"0")  # this process, into the kernel's cgroup
        except OSError as error:
            os.write(status_fd, f"the kernel cannot join its cgroup: {error}".encode()[:500])
            os._exit(71)
        for fd in cgroup_fds:
            os.close(fd)
        os.write(status_fd, b"ok")
        os.close(status_fd)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.setsid()  # a session, so a scheduler autogroup, of its own: not the other kernels'
        kernel_dir = Path(request["kernel_dir"])
        _isolate(kernel_dir, int(request["work_size_mb"]))
        init = os.fork()
        if init == 0:
            _run_init(request, kernel_dir, out_fd, err_fd)
        _forward_signals_to(init)
        os._exit(_wait_for(init))
    except BaseException:
        traceback.print_exc()
        os._exit(70)


def _run_init(request: dict, kernel_dir: Path, out_fd: int, err_fd: int) -> None:
    """pid 1 of the kernel's pid namespace: our code, which the kernel can neither trace nor
    kill. It dies with the keeper (so when the host kills the kernel), and when it dies every
    process of the namespace dies: nothing the kernel starts, or the kernel itself, outlives it.
    It makes the kernel's connection folder read-only once the kernel has made its sockets (the
    one folder of the host's disk it could otherwise fill), and reaps orphans."""
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        kernel = os.fork()
        if kernel == 0:
            _run_kernel(request, out_fd, err_fd)
        _forward_signals_to(kernel)
        ended = _freeze_when_bound(kernel, kernel_dir)
        os._exit(_wait_for(kernel) if ended is None else ended)
    except BaseException:
        traceback.print_exc()
        os._exit(70)


def _forward_signals_to(pid: int) -> None:
    for forwarded in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(forwarded, lambda signum, _frame: os.kill(pid, signum))


def _wait_for(pid: int) -> int:
    """Reap children until ``pid`` ends; its exit code as a byte (128 + n for signal n)."""
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if done == pid:
            return os.waitstatus_to_exitcode(status) % 256


def _freeze_when_bound(kernel: int, kernel_dir: Path, sockets: int = 5,
                       timeout_s: float = 600) -> int | None:
    """Wait until the kernel's ZMQ ``ipc`` sockets (shell, iopub, stdin, control, heartbeat)
    exist in ``kernel_dir``, then remount it read-only here: the host still connects to them, and
    the kernel can create no file there (it runs no student code before they exist). Returns the
    kernel's exit code if it ended first, else None."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            made = sum(stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
                       for entry in os.scandir(kernel_dir))
        except OSError:
            made = 0
        if made >= sockets:
            break
        done, status = os.waitpid(kernel, os.WNOHANG)
        if done:  # it ended before: nothing to freeze
            return os.waitstatus_to_exitcode(status) % 256
        time.sleep(0.01)
    make_read_only(str(kernel_dir), dict(mounts_under(str(kernel_dir.parent))).get(str(kernel_dir), 0))
    return None


def _isolate(kernel_dir: Path, work_size_mb: int) -> None:
    """New user, mount, pid, network, IPC and UTS namespaces for this process's children; fresh
    writable folders; the template's folder hidden but for ``kernel_dir``."""
    uid, gid = os.getuid(), os.getgid()
    prctl(PR_SET_DUMPABLE, 1)  # a non-dumpable process cannot write its own uid_map
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                         CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    # Non-dumpable again: the kernel runs as the same uid, and must not reach this process
    # (outside its pid namespace, holding capabilities in its user namespace) through /proc.
    prctl(PR_SET_DUMPABLE, 0)
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    keep = os.open(kernel_dir, os.O_PATH | os.O_DIRECTORY)  # the folder may lie under /tmp
    # What the sandbox mounted under /tmp (the environment and the course, in a fresh clone),
    # but the template's folder: mounted again, read-only, on the fresh /tmp.
    under_tmp = [(path, flags, os.open(path, os.O_PATH)) for path, flags in mounts_under("/tmp")
                 if not (path + "/").startswith(str(kernel_dir.parent) + "/")]
    size = f"size={work_size_mb * 2**20}"
    for target in FRESH_TMPFS:
        options = f"size={SHM_SIZE_MB * 2**20}" if target == "/dev/shm" else size
        mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"{options},mode=1777")
    for path, flags, fd in under_tmp:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND)
        make_read_only(path, flags)
        os.close(fd)
    os.makedirs(MPL_CONFIG_DIR, exist_ok=True)
    if kernel_dir.parent.exists():  # not under a fresh tmpfs: hide the template's folder
        mount("tmpfs", str(kernel_dir.parent), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    os.makedirs(kernel_dir, mode=0o700)
    # Its own connection folder, at the same path (ZMQ ipc sockets are paths).
    mount(f"/proc/self/fd/{keep}", str(kernel_dir), None, MS_BIND)
    os.close(keep)


def _run_kernel(request: dict, out_fd: int, err_fd: int) -> None:
    """In the kernel (pid 2 of its namespace, under the init): limits, no capabilities, fresh
    random state, then ipykernel; never returns."""
    code = 0
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.close(out_fd)
        os.close(err_fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.chdir(WORKDIR)
        limit = int(request.get("memory_limit_bytes") or 0)
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        drop_capabilities()
        if request.get("userns_filter"):
            refuse_user_namespaces(bytes.fromhex(request["userns_filter"]))
        # Python's random re-seeds itself in a fork (os.register_at_fork); NumPy's does not.
        import numpy
        numpy.random.seed()  # from the OS, as a cold interpreter seeds itself
        del os.environ["WORKBOOK_WARM_TEMPLATE"]
        from utils import import_tensorflow_quietly
        import_tensorflow_quietly()  # starts TensorFlow's runtime, as importing utils does
        from ipykernel.kernelapp import IPKernelApp
        from ipykernel.kernelbase import Kernel
        # At shutdown ipykernel signals its children, found through psutil in /proc; this /proc
        # is the sandbox's, whose pids are not this namespace's. The children die with the
        # namespace's init anyway, when the kernel has ended.
        Kernel._process_children = lambda self: []
        IPKernelApp.launch_instance(argv=["-f", request["connection_file"], *request["arguments"]])
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
    except BaseException:
        traceback.print_exc()
        code = 70
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _self_test(folder: Path) -> None:
    """Fork once as for a kernel, through the isolation step, so that a host where nested
    namespaces cannot be made fails here, at start, with the reason."""
    probe = folder / "self-test"
    probe.mkdir(mode=0o700)
    pid = os.fork()
    if pid == 0:
        try:
            _isolate(probe, 1)
            os._exit(0)
        except BaseException as error:
            print(f"warm kernels unavailable: {error}", file=sys.stderr, flush=True)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    probe.rmdir()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(3)


def serve(folder: Path) -> None:
    """Preload, test, then fork kernels on request until the host goes away."""
    preload()
    prctl(PR_SET_DUMPABLE, 0)  # no process of the same uid may read or write its memory
    _self_test(folder)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "control.tmp"))
    listener.listen(16)
    os.rename(folder / "control.tmp", folder / "control")  # ready
    keepers: dict[int, socket.socket] = {}  # keeper pid -> the host's connection
    while True:
        ready, _, _ = select.select([listener, *keepers.values()], [], [], 0.1)
        for sock in ready:
            if sock is listener:
                _accept(listener, keepers)
            else:
                _command(sock, keepers)
        _reap(keepers)


def _accept(listener: socket.socket, keepers: dict[int, socket.socket]) -> None:
    conn, _ = listener.accept()
    conn.settimeout(10)
    try:
        fds: list[int] = []
        data, fds, _, _ = socket.recv_fds(conn, 65536, 2 + MAX_CGROUP_FDS)
        while not data.endswith(b"\n"):
            more = conn.recv(65536)
            if not more:
                raise ConnectionError("request cut short")
            data += more
        request = json.loads(data)
        kernel_dir = Path(request["kernel_dir"])
        if len(fds) != 2 + int(request.get("cgroup_fds", 0)) or kernel_dir.parent != FOLDER or \
                not kernel_dir.is_dir() or \
                Path(request["connection_file"]).parent != kernel_dir or \
                not all(isinstance(a, str) for a in request["arguments"]):
            raise ValueError("malformed request")
    except Exception as error:
        print(f"warm template: request refused: {error}", file=sys.stderr, flush=True)
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    status_r, status_w = os.pipe()
    try:
        pid = os.fork()
    except OSError as error:  # no process left for this uid, say: this kernel fails, not all
        pid, refusal = None, f"cannot fork: {error}"
    if pid == 0:
        os.close(status_r)
        _start_keeper(request, fds[0], fds[1], fds[2:], status_w,
                      [listener.fileno(), conn.fileno()] + [s.fileno() for s in keepers.values()])
    os.close(status_w)
    for fd in fds:
        os.close(fd)
    if pid is not None:  # the keeper says whether it joined the kernel's cgroup
        ready, _, _ = select.select([status_r], [], [], 10)
        status = os.read(status_r, 512) if ready else b"the kernel's keeper did not answer"
        refusal = "" if status == b"ok" else \
            status.decode("utf-8", "replace") or "the kernel's keeper died at its start"
        if refusal:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    os.close(status_r)
    if refusal:
        print(f"warm template: kernel refused: {refusal}", file=sys.stderr, flush=True)
        try:
            conn.sendall(f"refused {refusal}\n".encode())
        except OSError:
            pass
        conn.close()
        return
    conn.settimeout(None)
    keepers[pid] = conn
    conn.sendall(b"started\n")


def _command(sock: socket.socket, keepers: dict[int, socket.socket]) -> None:
    pid = next(p for p, s in keepers.items() if s is sock)
    try:
        words = sock.recv(1024).split()
    except OSError:
        words = []
    try:
        if not words or words[0] == b"kill":  # the host hung up, or asked
            os.kill(pid, signal.SIGKILL)
        elif words[0] == b"signal" and len(words) == 2:
            os.kill(pid, int(words[1]))
    except (ProcessLookupError, ValueError):
        pass
    if not words:
        keepers.pop(pid).close()  # reaped below without a listener


def _reap(keepers: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = keepers.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(f"exited {os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass
            conn.close()


FOLDER = Path(sys.argv[1]).resolve() if __name__ == "__main__" else Path("/nonexistent")

if __name__ == "__main__":
    serve(FOLDER)
