"""The first code of a kernel's process: its per-process limits, nobody, the seccomp filter.
"""
from __future__ import annotations

import sys

from autograder.grading.defaults import MAX_FILE_MB, MAX_TASKS, NOBODY
from autograder.grading.kernels.cgroups import limit_problems
from autograder.grading.kernels.seccomp import LOAD_FILTER_SOURCE, user_namespace_filter

# Runs first in a kernel's process: caps its address space (bytes; 0: no cap), the size of any
# file it writes and, when asked (no cgroup limits the kernel's tasks), the number of processes
# and threads of its user (a fork bomb); becomes nobody when asked (which drops every capability
# too: the grader is root); loads the seccomp filter of user_namespace_filter when given
# (hex; "-": none), then runs the kernel.
# Usage: python -c LAUNCHER AS_BYTES DROP_ROOT(0|1) MAX_TASKS(0: none) FILTER KERNEL_COMMAND...
LAUNCHER = ("import os, resource, sys\n" + LOAD_FILTER_SOURCE +
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
    """:func:`.user_namespace_filter` in hex, "" where this machine has none."""
    program = user_namespace_filter()
    return program.hex() if program else ""


def launcher(memory_limit_bytes: int | None, drop_root: bool, max_tasks: int | None = None,
             refuse_userns: bool = False) -> list[str]:
    """The command prefix that starts a kernel through :data:`LAUNCHER`: ``max_tasks`` per uid
    (default :func:`uid_task_limit`; 0: none), no new user namespaces when ``refuse_userns``."""
    tasks = uid_task_limit() if max_tasks is None else max_tasks
    program = (userns_filter_hex() if refuse_userns else "") or "-"
    return [sys.executable, "-c", LAUNCHER, str(memory_limit_bytes or 0), str(int(drop_root)),
            str(tasks), program]
