"""Warm grading kernels: forked from a template that has already imported TensorFlow.

A cold grading kernel spends about 3 s starting Python and importing TensorFlow before its first
cell. Here a *template* (:mod:`.kernel_side.warm_template`) does that once, inside the same
bubblewrap sandbox a cold kernel gets (:func:`.kernels.bwrap.sandbox_argv`), and forks one kernel
per notebook, each in namespaces and writable folders of its own (see
:mod:`.kernel_side.warm_template`). The template never runs a student's code, so every kernel starts
from the same pristine state.

:class:`WarmKernelProvisioner` hands these kernels to jupyter_client (and so to nbclient and
nbgrader, unchanged) through the kernel provisioner interface; it is registered as the
``course-warm-kernel`` entry point and chosen by :class:`.kernels.managers.SandboxedKernelManager`.
One template runs per grading process and kernel environment, started at its first kernel and killed
when the process ends.
"""
from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from jupyter_client.provisioning import LocalProvisioner

from autograder.grading.defaults import NOBODY
from autograder.grading.failures import machinery_failed
from autograder.grading.kernels.bwrap import sandbox_argv
from autograder.grading.kernels.launcher import launcher, userns_filter_hex

PROVISIONER_NAME = "course-warm-kernel"

KERNEL_SIDE = Path(__file__).parents[1] / "kernel_side"
# What ``python -c`` runs in the sandbox: kernel_side/syscalls.py made into the module
# ``kernel_syscalls`` from its text, then kernel_side/warm_template.py as ``__main__``.
BOOT_SOURCE = (
    "import sys, types\n"
    "syscalls = types.ModuleType('kernel_syscalls')\n"
    f"exec(compile({(KERNEL_SIDE / 'syscalls.py').read_text()!r}, 'kernel_side/syscalls.py', "
    "'exec'), syscalls.__dict__)\n"
    "sys.modules['kernel_syscalls'] = syscalls\n"
    "del sys, types, syscalls\n"
    f"exec(compile({(KERNEL_SIDE / 'warm_template.py').read_text()!r}, "
    "'kernel_side/warm_template.py', 'exec'))\n")


class WarmKernelsUnavailable(RuntimeError):
    """A template could not start; the message says why (cold kernels still work)."""


class KernelHandle:
    """The host's end of one forked kernel: a connection to its template."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.exit_code: int | None = None
        self._buffer = b""

    def poll(self) -> int | None:
        """The kernel's exit code once it has ended, else None; never blocks."""
        if self.exit_code is None:
            self.sock.setblocking(False)
            gone = False
            try:
                data = self.sock.recv(1024)
                self._buffer += data
                gone = not data
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                gone = True
            for line in self._buffer.splitlines():
                if line.startswith(b"exited "):
                    self.exit_code = int(line.split()[1])
            if gone and self.exit_code is None:  # the template died: not the kernel's doing
                self.exit_code = -9
                machinery_failed("the warm-kernel template died while its kernel ran")
        return self.exit_code

    def send(self, command: str) -> None:
        """``kill`` or ``signal N``; a kernel that has ended ignores it."""
        try:
            self.sock.setblocking(True)
            self.sock.sendall(command.encode() + b"\n")
        except OSError:
            pass

    def close(self) -> None:
        """Hang up, which kills the kernel if it still runs."""
        self.sock.close()


class Template:
    """One template process in its sandbox, with its folder (control socket and the kernels'
    connection folders). ``env`` is the environment that reaches the sandbox."""

    def __init__(self, env: dict[str, str], startup_timeout_s: float = 300):
        self.env = env
        self.folder = Path(tempfile.mkdtemp(prefix="warm-kernels-")).resolve()
        os.chmod(self.folder, 0o700)
        if os.geteuid() == 0:
            os.chown(self.folder, NOBODY, NOBODY)
        self.log = self.folder.with_name(self.folder.name + ".log")
        self.process: subprocess.Popen | None = None
        self._start(startup_timeout_s)

    def _start(self, timeout_s: float) -> None:
        argv = sandbox_argv(self.folder, env=self.env) + launcher(None, os.geteuid() == 0) + \
            [sys.executable, "-c", BOOT_SOURCE, str(self.folder)]
        started = threading.Event()
        failed: list[str] = []

        def keep():  # bwrap --die-with-parent follows the thread that started it: keep it alive
            try:
                with open(self.log, "ab") as log:
                    self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                                    stderr=log, cwd=self.folder, env=self.env)
            except OSError as error:  # no bwrap, no process left, ...
                failed.append(f"{type(error).__name__}: {error}")
                return
            finally:
                started.set()
            self.process.wait()

        threading.Thread(target=keep, daemon=True, name="warm-kernel-template").start()
        started.wait()
        if failed:
            self.stop()
            raise WarmKernelsUnavailable(f"the warm-kernel template did not start: {failed[0]}")
        deadline = time.monotonic() + timeout_s
        while not (self.folder / "control").exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace").strip().splitlines()[-3:]
                self.stop()
                raise WarmKernelsUnavailable(
                    "the warm-kernel template did not start: " + (" / ".join(tail) or
                                                                  "no message"))
            time.sleep(0.05)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def new_kernel_dir(self) -> Path:
        """A fresh connection folder for one kernel, inside the template's folder."""
        path = Path(tempfile.mkdtemp(prefix="kernel-", dir=self.folder))
        if os.geteuid() == 0:
            os.chown(path, NOBODY, NOBODY)
        return path

    def launch(self, kernel_dir: Path, connection_file: str, arguments: list[str],
               memory_limit_bytes: int | None, work_size_mb: int, stdout_fd: int,
               stderr_fd: int, cgroup_fds: list[int] = ()) -> KernelHandle:
        """Ask the template for a kernel, with ipykernel's options ``arguments`` after the
        connection file; returns its handle once it has forked. ``cgroup_fds``: the
        ``cgroup.procs`` files of the kernel's cgroup, open for writing (the kernel's keeper
        joins it before anything else); the kernel refuses new user namespaces.

        Raises:
            WarmKernelsUnavailable: the template is gone or refused the request.
        """
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        request = {"kernel_dir": str(kernel_dir), "connection_file": connection_file,
                   "arguments": arguments, "memory_limit_bytes": memory_limit_bytes,
                   "work_size_mb": work_size_mb, "cgroup_fds": len(cgroup_fds),
                   "userns_filter": userns_filter_hex()}
        try:
            sock.connect(str(self.folder / "control"))
            socket.send_fds(sock, [json.dumps(request).encode() + b"\n"],
                            [stdout_fd, stderr_fd, *cgroup_fds])
            answer = sock.recv(1024)
        except OSError as error:
            sock.close()
            raise WarmKernelsUnavailable(f"the warm-kernel template did not answer: {error}")
        if not answer.startswith(b"started"):
            sock.close()
            why = answer.decode("utf-8", "replace").strip().removeprefix("refused").strip()
            raise WarmKernelsUnavailable("the warm-kernel template refused the kernel" +
                                         (f": {why}" if why else ""))
        return KernelHandle(sock)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.log.unlink(missing_ok=True)


_templates: dict[tuple, Template] = {}

_templates_lock = threading.Lock()


def template_for(env: dict[str, str]) -> Template:
    """The running template for kernels with environment ``env`` (what :func:`.sandbox_env`
    lets into the sandbox), started (seconds: it imports TensorFlow) if there is none yet or the
    last one died.

    Raises:
        WarmKernelsUnavailable: it could not start (the log's last lines say why).
    """
    key = tuple(sorted(env.items()))
    with _templates_lock:
        template = _templates.get(key)
        if template is None or not template.alive():
            if template is not None:
                template.stop()
            template = _templates[key] = Template(env)
        return template


@atexit.register
def stop_templates() -> None:
    """Stop every template of this process (and so their kernels)."""
    with _templates_lock:
        for template in _templates.values():
            template.stop()
        _templates.clear()


class WarmKernelProvisioner(LocalProvisioner):
    """A kernel provisioner whose kernels are forked by a warm template (see the module's
    docstring). Its parent must be a :class:`~.kernels.managers.SandboxedKernelManager` that has chosen a
    template (``warm_template``) and a connection folder inside it (``kernel_dir``).

    Where the template refuses the kernel (it could not fork, the kernel could not join its
    cgroup, the template is gone), the kernel starts cold instead, as :class:`LocalProvisioner`
    starts it, with the sandbox's command: the grader's failure is never the student's."""

    handle: KernelHandle | None = None
    started_cold = False  # the template refused: this kernel was started cold

    @property
    def has_process(self) -> bool:
        return self.handle is not None or super().has_process

    async def launch_kernel(self, cmd, **kwargs):
        km = self.parent
        opened: list[int] = []
        fds = [_fileno(kwargs.get(name), default, opened)
               for name, default in (("stdout", 1), ("stderr", 2))]
        # The kernel command's options after its connection file (nbgrader's keep the history
        # in memory); the template's own Python runs the kernel.
        arguments = cmd[cmd.index(km.connection_file) + 1:] if km.connection_file in cmd else []
        cgroup_fds: list[int] = []
        try:
            if km.kernel_cgroup:
                cgroup_fds = km.kernel_cgroup.open_procs()
            self.handle = await asyncio.to_thread(
                km.warm_template.launch, km.kernel_dir, km.connection_file, arguments,
                km.memory_limit_bytes, km.work_size_mb, *fds, cgroup_fds)
        except (WarmKernelsUnavailable, OSError) as error:
            km.log.warning("%s; this kernel starts cold", error)
            self.handle, self.started_cold = None, True
            return await super().launch_kernel(cmd, **kwargs)
        finally:
            for fd in opened + cgroup_fds:
                os.close(fd)
        self.pid = self.pgid = None
        return self.connection_info

    async def poll(self) -> int | None:
        return await super().poll() if self.handle is None else self.handle.poll()

    async def wait(self) -> int | None:
        if self.handle is None:
            return await super().wait()
        while self.handle.poll() is None:
            await asyncio.sleep(0.05)
        code = self.handle.exit_code
        self.handle.close()
        self.handle = None
        return code

    async def send_signal(self, signum: int) -> None:
        if self.handle is not None:
            self.handle.send(f"signal {int(signum)}")
        else:
            await super().send_signal(signum)

    async def kill(self, restart: bool = False) -> None:
        if self.handle is not None:
            self.kill_now()
        else:
            await super().kill(restart)

    async def terminate(self, restart: bool = False) -> None:
        if self.handle is not None:
            await self.send_signal(15)
        else:
            await super().terminate(restart)

    def kill_now(self) -> None:
        """:meth:`kill`, callable from any thread."""
        if self.handle is not None:
            self.handle.send("kill")
        elif self.process is not None:
            try:
                self.process.kill()
            except OSError:
                pass

    async def cleanup(self, restart: bool = False) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        else:
            await super().cleanup(restart)


def _fileno(stream, default: int, opened: list[int]) -> int:
    """The file descriptor a kernel's stdout or stderr goes to: ``stream``'s (a file or an fd),
    else this process's own (as a cold kernel inherits it); one it opens goes to ``opened``."""
    if stream is None or stream == subprocess.PIPE:
        return default
    if stream == subprocess.DEVNULL:
        opened.append(os.open(os.devnull, os.O_WRONLY))
        return opened[-1]
    return stream if isinstance(stream, int) else stream.fileno()
