"""Limits per kernel: a cgroup of its own (memory and tasks), and no new user namespaces.

The address-space limit (``RLIMIT_AS``) counts one process, and the task limit (``RLIMIT_NPROC``)
counts every process of one uid, which every kernel shares. So each kernel also gets a cgroup of
its own, made here, on the grader's side, below this process's own cgroup:

- memory: everything the kernel's processes use together, tmpfs pages they write included, is at
  most the run's memory limit (``memory.limit_in_bytes``, and ``memory.memsw.limit_in_bytes``
  where swap is accounted, in cgroup v1; ``memory.max``, ``memory.swap.max`` 0 in v2). When the
  kernel's processes together reach it, the kernel is killed (:meth:`KernelCgroup.oom_kills`);
- tasks: at most :data:`MAX_TASKS_PER_KERNEL` processes and threads (``pids.max``), so one
  kernel's threads cannot keep another kernel from starting.

A kernel's first process joins its cgroup before any of its code runs (a cold kernel's ``bwrap`` in
:func:`preexec_join`'s ``preexec_fn``; a warm kernel's keeper through the ``cgroup.procs`` files
this process opens and hands to the template, see :mod:`.kernel_side.warm_template`); whatever it
starts is in it too. The cgroup is emptied (every process left in it killed) and removed when the
kernel ends. Inside the sandbox no cgroup file system is mounted.

Both hierarchies are supported: cgroup v1 with the ``memory`` and ``pids`` controllers (this
course's test machine), and v2 where those controllers are enabled below the grader's cgroup
(a cgroup delegated to it). Where a controller cannot be used, :func:`limit_problems` says which
limit is missing and why; kernels then keep the per-process and per-uid limits only.

:func:`user_namespace_filter` is a seccomp filter that a kernel loads before its code runs: no
new user namespace (``unshare``/``clone`` with ``CLONE_NEWUSER``; ``clone3``, whose flags a filter
cannot read, answers ``ENOSYS`` and the C library falls back to ``clone``), so a kernel cannot
gain the capabilities that mounting a tmpfs of any size needs.
"""
from __future__ import annotations

import errno
import os
import platform
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.defaults import MAX_TASKS_PER_KERNEL
from autograder.grading.kernels.seccomp import user_namespace_filter

# Name of a kernel's cgroup: PREFIX<pid of the grading process>-<n>.
CGROUP_PREFIX = "course-kernel-"

# Longest wait for a kernel's processes to leave its cgroup when it ends, seconds.
REMOVE_TIMEOUT_S = 10

# In cgroup v2, the leaf the grader's own processes move to, so that its cgroup, then holding no
# process, may enable controllers for its kernels' cgroups.
GRADER_LEAF = "course-grader"


@dataclass(frozen=True)
class Hierarchy:
    """Where this process's kernels' cgroups go for some controllers: below ``parent`` (this
    process's own cgroup), in a v1 or v2 hierarchy."""
    parent: Path
    controllers: frozenset[str]
    v2: bool


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n") \
        .replace("\\134", "\\")


def _find_hierarchies() -> tuple[dict[str, Hierarchy], dict[str, str]]:
    """controller ("memory", "pids") -> its :class:`Hierarchy`, and controller -> why it cannot
    be used, from ``/proc/self/mountinfo`` and ``/proc/self/cgroup``. A controller mounted in a
    v1 hierarchy is used there; else in the v2 hierarchy if it is available to this cgroup."""
    wanted = ("memory", "pids")
    try:
        own_lines = Path("/proc/self/cgroup").read_text().splitlines()
        mount_lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError as error:
        return {}, {c: f"cannot read this process's cgroups ({error})" for c in wanted}
    own_v1: dict[str, str] = {}
    own_v2 = None
    for line in own_lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            own_v2 = path
        for controller in controllers.split(","):
            own_v1[controller] = path
    found: dict[str, Hierarchy] = {}
    v2_mount = None
    for line in mount_lines:
        fields = line.split()
        dash = fields.index("-")
        root, point, fstype = _unescape(fields[3]), _unescape(fields[4]), fields[dash + 1]
        if fstype == "cgroup2":
            v2_mount = v2_mount or (root, point)
        elif fstype == "cgroup":
            options = fields[dash + 3].split(",")
            for controller in wanted:
                if controller in options and controller not in found and controller in own_v1:
                    parent = _below(point, root, own_v1[controller])
                    if parent is not None:
                        found[controller] = Hierarchy(parent, frozenset(
                            c for c in wanted if c in options), v2=False)
    problems: dict[str, str] = {}
    missing = [c for c in wanted if c not in found]
    if missing and v2_mount and own_v2 is not None:
        if own_v2.rsplit("/", 1)[-1] == GRADER_LEAF:  # kernels go beside the grader's leaf
            own_v2 = own_v2.rsplit("/", 1)[0] or "/"
        parent = _below(v2_mount[1], v2_mount[0], own_v2)
        try:
            available = (parent / "cgroup.controllers").read_text().split() if parent else []
        except OSError:
            available = []
        for controller in missing:
            if controller in available:
                found[controller] = Hierarchy(parent, frozenset(
                    c for c in missing if c in available), v2=True)
    for controller in wanted:
        if controller not in found:
            problems[controller] = (f"no cgroup hierarchy with the {controller} controller is "
                                    "mounted for this process (cgroup v1 or v2)")
    return found, problems


def _below(mount_point: str, mount_root: str, own: str) -> Path | None:
    """The folder of cgroup ``own`` in a hierarchy mounted at ``mount_point`` from
    ``mount_root``; None when it is not under that mount."""
    root = mount_root.rstrip("/")
    if own != root and not own.startswith(root + "/"):
        return None
    return Path(mount_point + own[len(root):]).resolve()


_state_lock = threading.Lock()

_state: dict[str, object] = {}


def _hierarchies() -> dict[str, Hierarchy]:
    """The usable hierarchies per controller (those :func:`limit_problems` found working)."""
    limit_problems()
    return _state["usable"]  # type: ignore[return-value]


def limit_problems() -> dict[str, str]:
    """The per-kernel limits that cannot be set in this process, each with why: keys "memory"
    (the memory limit of a kernel and all its processes), "tasks" (its processes and threads)
    and "userns" (no new user namespaces); {} when all can. Found once per process, by making
    a cgroup, setting its limits, moving a short-lived process into it and removing it."""
    with _state_lock:
        if "problems" not in _state:
            found, problems = _find_hierarchies()
            usable = {}
            for controller, hierarchy in found.items():
                why = _try_hierarchy(hierarchy, controller)
                if why:
                    problems[controller] = why
                else:
                    usable[controller] = hierarchy
            _sweep_stale(set(usable.values()))
            _state["usable"] = usable
            named = {("tasks" if c == "pids" else c): why for c, why in problems.items()}
            if user_namespace_filter() is None:
                named["userns"] = f"no seccomp filter for this machine ({platform.machine()})"
            _state["problems"] = named
        return dict(_state["problems"])  # type: ignore[arg-type]


def missing_limits_lines(problems: dict[str, str] | None = None) -> list[str]:
    """One warning line per limit :func:`limit_problems` says is missing (what it means for the
    run included)."""
    problems = limit_problems() if problems is None else problems
    lines = []
    if "memory" in problems:
        lines.append("MISSING LIMIT: memory per kernel (cgroup): " + problems["memory"] +
                     "; each process of a kernel has its own address-space limit only, so a "
                     "kernel's processes and tmpfs together may use more")
    if "tasks" in problems:
        lines.append("MISSING LIMIT: tasks per kernel (cgroup): " + problems["tasks"] +
                     "; kernels share one limit per user (RLIMIT_NPROC), so one kernel's "
                     "threads can keep others from starting")
    if "userns" in problems:
        lines.append("MISSING LIMIT: no new user namespaces in kernels: " + problems["userns"])
    return lines


def _try_hierarchy(hierarchy: Hierarchy, controller: str) -> str:
    """Why kernels' cgroups cannot be made in ``hierarchy`` for ``controller``; "" when they can."""
    probe = hierarchy.parent / f"{CGROUP_PREFIX}{os.getpid()}-probe"
    try:
        if hierarchy.v2:
            _enable_v2(hierarchy)
        probe.mkdir(exist_ok=True)
    except OSError as error:
        return f"cannot make a cgroup in {hierarchy.parent} ({error.strerror})"
    sleeper = None
    try:
        for name, value in _limit_files(hierarchy, controller, 2**30, MAX_TASKS_PER_KERNEL):
            _write(probe / name, value)
        sleeper = subprocess.Popen(["sleep", "10"], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _write(probe / "cgroup.procs", str(sleeper.pid))
    except OSError as error:
        return f"cannot set a cgroup's limits or move a process into it in {hierarchy.parent} " \
               f"({error.strerror or error})"
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        _rmdir_when_empty(probe, 2)
    return ""


def _enable_v2(hierarchy: Hierarchy) -> None:
    """Enable the hierarchy's controllers for the children of the grader's cgroup. A v2 cgroup
    that holds processes cannot: when it holds only this process and its descendants (the
    grader's own cgroup, e.g. ``systemd-run --user --scope -p Delegate=yes course grade ...``),
    they move into a leaf of it, :data:`GRADER_LEAF`, first; never a process of anyone else."""
    control = hierarchy.parent / "cgroup.subtree_control"
    enabled = control.read_text().split()
    todo = [c for c in sorted(hierarchy.controllers) if c not in enabled]
    if not todo:
        return
    try:
        procs = [int(p) for p in (hierarchy.parent / "cgroup.procs").read_text().split()]
        if procs and all(_descends_from(pid, os.getpid()) for pid in procs):
            leaf = hierarchy.parent / GRADER_LEAF
            leaf.mkdir(exist_ok=True)
            for pid in procs:
                try:
                    _write(leaf / "cgroup.procs", str(pid))
                except ProcessLookupError:
                    pass
        _write(control, " ".join(f"+{c}" for c in todo))
    except OSError as error:
        raise OSError(error.errno, f"cgroup v2: cannot enable {', '.join(todo)} below "
                      f"{hierarchy.parent} ({error.strerror}; the grader needs a cgroup of its "
                      "own, delegated to it: 'systemd-run --user --scope -p Delegate=yes course "
                      "grade ...')")


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether process ``pid`` is ``ancestor`` or one of its descendants."""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def _limit_files(hierarchy: Hierarchy, controller: str, memory_bytes: int | None,
                 max_tasks: int) -> list[tuple[str, str]]:
    if controller == "pids":
        return [("pids.max", str(max_tasks))]
    if memory_bytes is None:
        return []
    if hierarchy.v2:
        return [("memory.max", str(memory_bytes)), ("memory.swap.max", "0"),
                ("memory.oom.group", "1")]
    return [("memory.limit_in_bytes", str(memory_bytes)),
            ("memory.memsw.limit_in_bytes", str(memory_bytes))]


def _write(path: Path, value: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY)
    except FileNotFoundError:
        if path.name in ("memory.memsw.limit_in_bytes", "memory.swap.max", "memory.oom.group"):
            return  # no swap accounting, or an older kernel: nothing to set
        raise
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _rmdir_when_empty(path: Path, timeout_s: float) -> bool:
    """Kill what is left in cgroup ``path`` and remove it; False when it could not be removed in
    ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
        _kill_tasks(path)
        time.sleep(0.02)


def _kill_tasks(path: Path) -> None:
    """SIGKILL every process of cgroup ``path`` (``cgroup.kill`` where v2 has it)."""
    if (path / "cgroup.kill").exists():
        try:
            _write(path / "cgroup.kill", "1")
            return
        except OSError:
            pass
    try:
        pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        try:  # a pidfd, then a check that it is still this cgroup's: never a reused pid
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            if _in_cgroup(pid, path.name):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(pidfd)


def _in_cgroup(pid: int, name: str) -> bool:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        path = line.split(":", 2)[-1]
        if path.endswith("/" + name) or f"/{name}/" in path:
            return True
    return False


def _sweep_stale(hierarchies: set[Hierarchy]) -> None:
    """Remove kernels' cgroups left by grading processes that have died (a killed worker)."""
    for hierarchy in hierarchies:
        try:
            entries = list(hierarchy.parent.glob(f"{CGROUP_PREFIX}*"))
        except OSError:
            continue
        for entry in entries:
            try:
                pid = int(entry.name[len(CGROUP_PREFIX):].split("-")[0])
            except ValueError:
                continue
            if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
                _rmdir_when_empty(entry, 1)
