"""System calls the warm-kernel template needs that Python's standard library lacks: mount,
unshare, capabilities, prctl and seccomp, through ctypes.

Kernel-side source, never imported by the grader: :mod:`autograder.grading.kernels.warm` runs its
text as the module ``kernel_syscalls`` in the template's sandbox, before the template's
(:mod:`.warm_template`), which imports it from there. Standard library only.
"""
from __future__ import annotations

import ctypes
import os
import re
from pathlib import Path

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
CAP_LAST = 63
LINUX_CAPABILITY_VERSION_3 = 0x20080522

libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def prctl(option: int, value: int) -> None:
    check(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl({option})")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None):
    check(libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                       ctypes.c_ulong(flags), data.encode() if data else None),
           f"mount {target}")


def drop_capabilities() -> None:
    """Drop every capability (bounding set, effective, permitted, inheritable) for good: the
    kernel gets a user namespace of its own, in which it would otherwise hold them all."""
    for cap in range(CAP_LAST + 1):
        libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)  # EINVAL past the last: fine
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def refuse_user_namespaces(program: bytes) -> None:
    """Load the seccomp filter ``program`` (:func:`.kernels.seccomp.user_namespace_filter`, mirrored by
    its LOAD_FILTER_SOURCE) into this process, for good: no new user namespace, in this process
    or anything it starts."""
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    check(libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog),
                       0, 0), "seccomp")


# Per-mount options of /proc/self/mountinfo that a remount must keep (they are locked).
MOUNT_FLAGS = {"nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048,
                "relatime": 1 << 21, "strictatime": 1 << 24}


def make_read_only(path: str, locked: int) -> None:
    """Remount the bind mount at ``path`` read-only, keeping its ``locked`` flags (a remount in a
    user namespace may not drop them)."""
    mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | locked)


def mounts_under(prefix: str) -> list[tuple[str, int]]:
    """Mount points below ``prefix``, in mount order, with their locked flags."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        if point.startswith(prefix + "/"):
            flags = 0
            for option in fields[5].split(","):
                flags |= MOUNT_FLAGS.get(option, 0)
            found.append((point, flags))
    return found
