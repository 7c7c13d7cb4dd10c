"""A seccomp filter that refuses new user namespaces, and the kernel-side code that loads it.
"""
from __future__ import annotations

import errno
import platform
import struct

CLONE_NEWUSER = 0x10000000

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

# (unshare, clone, clone3) system call numbers.
_SYSCALLS = {"x86_64": (272, 56, 435), "aarch64": (97, 220, 435)}

_X32_SYSCALL_BIT = 0x40000000

_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000


def user_namespace_filter(machine: str | None = None) -> bytes | None:
    """A seccomp BPF program (``struct sock_filter`` entries) that refuses a new user namespace
    (``unshare`` or ``clone`` with ``CLONE_NEWUSER``: EPERM; ``clone3``: ENOSYS, so the C library
    falls back to ``clone``; any other system call ABI than the native one: EPERM) and allows
    everything else; None on a machine it does not know (then
    :func:`limit_problems`-style callers say the limit is missing)."""
    machine = machine or platform.machine()
    if machine not in _AUDIT_ARCH:
        return None
    unshare, clone, clone3 = _SYSCALLS[machine]
    program: list[tuple] = [
        ("ld", 4),                                     # 0: arch
        ("jeq", _AUDIT_ARCH[machine], 0, "deny"),      # 1
        ("ld", 0),                                     # 2: syscall number
        ("jge", _X32_SYSCALL_BIT if machine == "x86_64" else 0xFFFFFFFF, "deny", 0),
        ("jeq", unshare, "flags", 0),
        ("jeq", clone, "flags", 0),
        ("jeq", clone3, "enosys", 0),
        ("ret", _RET_ALLOW),
        ("label", "flags"),
        ("ld", 16),                                    # args[0], low 32 bits (little-endian)
        ("jset", CLONE_NEWUSER, "deny", 0),
        ("ret", _RET_ALLOW),
        ("label", "deny"),
        ("ret", _RET_ERRNO | errno.EPERM),
        ("label", "enosys"),
        ("ret", _RET_ERRNO | errno.ENOSYS),
    ]
    labels, position = {}, 0
    for op in program:
        if op[0] == "label":
            labels[op[1]] = position
        else:
            position += 1
    code, position = b"", 0
    for op in program:
        if op[0] == "label":
            continue

        def target(where):
            return where if isinstance(where, int) else labels[where] - position - 1
        if op[0] == "ld":
            code += struct.pack("<HBBI", _BPF_LD_W_ABS, 0, 0, op[1])
        elif op[0] == "ret":
            code += struct.pack("<HBBI", _BPF_RET_K, 0, 0, op[1])
        else:
            opcode = {"jeq": _BPF_JEQ_K, "jge": _BPF_JGE_K, "jset": _BPF_JSET_K}[op[0]]
            code += struct.pack("<HBBI", opcode, target(op[2]), target(op[3]), op[1])
        position += 1
    return code


# Loads a program of user_namespace_filter (hex in USERNS_FILTER) into this thread and its
# future children, for good; the mirror in warm_template.py is _refuse_user_namespaces.
LOAD_FILTER_SOURCE = (
    "def _load_filter(program):\n"
    "    import ctypes\n"
    "    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    class Prog(ctypes.Structure):\n"
    "        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]\n"
    "    buf = ctypes.create_string_buffer(program, len(program))\n"
    "    prog = Prog(len(program) // 8, ctypes.addressof(buf))\n"
    "    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(prog), 0, 0):\n"
    "        raise OSError(ctypes.get_errno(), 'seccomp: ' + os.strerror(ctypes.get_errno()))\n")
