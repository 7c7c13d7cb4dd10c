"""A kernel's own cgroup: made before it starts, emptied and removed when it ends.
"""
from __future__ import annotations

import atexit
import itertools
import os
from pathlib import Path

from autograder.grading.defaults import MAX_TASKS_PER_KERNEL
from autograder.grading.failures import GraderFailure
from autograder.grading.kernels.cgroups import (
    CGROUP_PREFIX,
    REMOVE_TIMEOUT_S,
    Hierarchy,
    _hierarchies,
    _kill_tasks,
    _limit_files,
    _rmdir_when_empty,
    _write,
)

_counter = itertools.count()

_live: set["KernelCgroup"] = set()


class KernelCgroup:
    """The cgroup(s) of one kernel: one folder per hierarchy in use (v1: the memory and the pids
    hierarchies; v2: one), with the memory limit ``memory_limit_bytes`` (None: no memory
    cgroup) and at most ``max_tasks`` tasks.

    Raises:
        GraderFailure: the cgroup could not be made, though the probe of
            :func:`limit_problems` could make one.
    """

    def __init__(self, memory_limit_bytes: int | None, max_tasks: int = MAX_TASKS_PER_KERNEL):
        self.memory_limit_bytes = memory_limit_bytes
        self.name = f"{CGROUP_PREFIX}{os.getpid()}-{next(_counter)}"
        self.dirs: dict[Path, Hierarchy] = {}
        self.memory_dir: Path | None = None
        self.peak_bytes: int | None = None  # read when the cgroup is removed
        self.removed = False
        usable = _hierarchies()
        try:
            for controller in ("memory", "pids"):
                hierarchy = usable.get(controller)
                if hierarchy is None or (controller == "memory" and memory_limit_bytes is None):
                    continue
                folder = hierarchy.parent / self.name
                if folder not in self.dirs:
                    folder.mkdir()
                    self.dirs[folder] = hierarchy
                for name, value in _limit_files(hierarchy, controller, memory_limit_bytes,
                                                max_tasks):
                    _write(folder / name, value)
                if controller == "memory":
                    self.memory_dir = folder
        except OSError as error:
            self.remove()
            raise GraderFailure(f"the kernel's cgroup could not be made: {error}") from error
        _live.add(self)

    def __bool__(self) -> bool:
        return bool(self.dirs)

    @property
    def procs_files(self) -> list[Path]:
        return [folder / "cgroup.procs" for folder in self.dirs]

    def open_procs(self) -> list[int]:
        """File descriptors, open for writing, of its ``cgroup.procs`` files: a process that
        writes ``0`` into each (a warm kernel's keeper, in the sandbox) joins the cgroup."""
        return [os.open(path, os.O_WRONLY | os.O_CLOEXEC) for path in self.procs_files]

    def preexec_join(self):
        """A ``preexec_fn`` for :class:`subprocess.Popen`: the child joins this cgroup before it
        runs the kernel's command (a failure raises in the parent, as Popen's errors do)."""
        paths = [os.fsencode(p) for p in self.procs_files]

        def join():
            for path in paths:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
        return join

    def oom_kills(self) -> int:
        """How many of its processes the kernel's out-of-memory killer has killed: its processes
        together reached the memory limit."""
        if self.memory_dir is None:
            return 0
        hierarchy = self.dirs[self.memory_dir]
        name = "memory.events" if hierarchy.v2 else "memory.oom_control"
        try:
            for line in (self.memory_dir / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def memory_peak(self) -> int | None:
        """The most memory its processes used together, bytes (None where not known)."""
        if self.memory_dir is None:
            return self.peak_bytes
        hierarchy = self.dirs[self.memory_dir]
        try:
            return int((self.memory_dir / ("memory.peak" if hierarchy.v2 else
                                           "memory.max_usage_in_bytes")).read_text())
        except (OSError, ValueError):
            return self.peak_bytes

    def kill(self) -> None:
        """SIGKILL every process in it."""
        for folder in self.dirs:
            _kill_tasks(folder)

    def remove(self) -> None:
        """Kill what is left in it and remove it (a folder that cannot be removed yet is tried
        again when this process ends)."""
        self.removed = True
        if self.memory_dir is not None:
            self.peak_bytes = self.memory_peak()
            self.memory_dir = None
        for folder in list(self.dirs):
            if _rmdir_when_empty(folder, REMOVE_TIMEOUT_S):
                del self.dirs[folder]
        if not self.dirs:
            _live.discard(self)


@atexit.register
def remove_all() -> None:
    """Remove every kernel cgroup this process made (its kernels have ended with it)."""
    for cgroup in list(_live):
        cgroup.remove()
