"""The kernels of grading and validation runs, and their environment.

Grading kernels run in "grading mode": :data:`~.defaults.KERNEL_ENV` (fast mode, TensorFlow's C++
log off, Python warnings ignored). That environment is given to each kernel at its start by
:class:`GradingKernelManager`, never written into the environment of the process that loads the
configuration: a Jupyter server loads this course's ``nbgrader_config.py`` too (nbgrader's server
extension), and the kernels a student starts from it must run exactly as anywhere else. The
kernels that autograde also get ``NBGRADER_EXECUTION=autograde``, as nbgrader's own do.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, DottedObjectName, Dict, Integer, Type, Unicode

from autograder.grading.defaults import (
    AUTOGRADE_ENV,
    KERNEL_DIR_MAX_BYTES,
    KERNEL_DIR_MAX_ENTRIES,
    KERNEL_ENV,
    MAX_TASKS_PER_KERNEL,
    NOBODY,
    WORK_SIZE_MB,
)
from autograder.grading.failures import OUT_OF_MEMORY, GraderFailure, machinery_failed
from autograder.grading.kernels.bwrap import sandbox_argv, sandbox_env
from autograder.grading.kernels.cgroups import limit_problems, missing_limits_lines
from autograder.grading.kernels.kernel_cgroup import KernelCgroup
from autograder.grading.kernels.launcher import launcher
from autograder.grading.kernels.warm import PROVISIONER_NAME, WarmKernelsUnavailable, template_for


def grading_env(base: Mapping[str, str] | None = None,
                kernel_env: Mapping[str, str] = KERNEL_ENV) -> dict[str, str]:
    """The environment of a grading kernel: ``base`` (default: this process's environment) with
    each variable of ``kernel_env`` added where ``base`` does not set it (so an instructor's
    ``WORKBOOK_FAST=0 course grade ...`` still grades at full size)."""
    env = dict(os.environ if base is None else base)
    for name, value in kernel_env.items():
        env.setdefault(name, value)
    return env


class GradingKernelManager(AsyncKernelManager):
    """A jupyter_client kernel manager whose kernels start in grading mode (:func:`grading_env`).

    Use it as nbclient's or nbgrader's ``kernel_manager_class``; this process's own environment
    is left as it is.
    """

    kernel_env = Dict(dict(KERNEL_ENV), help="variables every kernel it starts gets, unless "
                      "already set in the launch environment").tag(config=True)

    def launch_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment this manager's kernel starts with."""
        return grading_env(base, self.kernel_env)

    async def _async_pre_start_kernel(self, **kw):
        kw["env"] = self.launch_env(kw.get("env"))
        return await super()._async_pre_start_kernel(**kw)

    pre_start_kernel = _async_pre_start_kernel


class GradingKernelClient(AsyncKernelClient):
    """The client of a :class:`LimitedKernelManager`'s kernel (its ``client_class``): it tells its
    manager of the kernel's ``kernel_info`` reply and of every request to run code, so that the
    manager knows whether a kernel that died had run any cell of the student's."""

    def execute(self, code, silent=False, *args, **kwargs):
        if isinstance(self.parent, LimitedKernelManager):
            self.parent.note_request(bool(silent))
        return super().execute(code, silent, *args, **kwargs)

    def _handle_kernel_info_reply(self, msg) -> None:
        super()._handle_kernel_info_reply(msg)
        if isinstance(self.parent, LimitedKernelManager):
            self.parent.note_answered()


class LimitedKernelManager(GradingKernelManager):
    """A jupyter_client kernel manager whose kernel's address space is capped at
    ``memory_limit_bytes`` (a runaway allocation raises ``MemoryError`` in the student's cell),
    in grading mode (:class:`~.kernels.managers.GradingKernelManager`) with nbgrader's
    ``NBGRADER_EXECUTION=autograde`` (:data:`~.defaults.AUTOGRADE_ENV`), in a cgroup of its own
    (:class:`~.kernels.kernel_cgroup.KernelCgroup`) where it can be made: all the kernel's processes together
    have ``memory_limit_bytes`` (past it the kernel is killed) and at most ``max_tasks`` tasks.

    A kernel that cannot be started for the grader's own reasons (its cgroup, a failed start)
    raises :class:`~.failures.GraderFailure`, noted in :data:`~.failures.MACHINERY_FAILURES`; a
    kernel that dies before any cell of the student's can have run (:attr:`phase`) is noted there
    too (:meth:`_note_death`): the course's set-up under the run's limits killed it, not the
    student."""

    memory_limit_bytes = Integer(None, allow_none=True, help="memory limit of the kernel, bytes: "
                                 "its address space and, in its cgroup, all its processes "
                                 "together; None: none").tag(config=True)
    max_tasks = Integer(MAX_TASKS_PER_KERNEL, help="most processes and threads of the "
                        "kernel (its cgroup)").tag(config=True)
    output_log = Unicode("", help="file that gets what the kernel's process writes to its own "
                         "stdout and stderr (C libraries, subprocesses, the sandbox's errors); "
                         "empty: inherited").tag(config=True)

    # Its clients tell it how far the notebook got.
    client_class = DottedObjectName(f"{__name__}.GradingKernelClient")
    client_factory = Type(GradingKernelClient)

    kernel_cgroup: KernelCgroup | None = None
    _warned_missing = False
    # How far this start of the kernel got: "starting" (no kernel_info reply yet), "set-up" (only
    # the course's cells before the first the student can edit have been sent), "asked" (the
    # grader's first silent request sent: GradingExecute's integrity check, which it runs before
    # the first cell the student can edit), "student" (a cell sent after that one: the student's
    # code may run), "ended" (its death was noted).
    phase = "ended"

    kernel_env = Dict({**KERNEL_ENV, **AUTOGRADE_ENV}, help="variables every kernel it starts "
                      "gets, unless already set in the launch environment: grading mode and "
                      "NBGRADER_EXECUTION=autograde, as nbgrader's autograder sets it").tag(
                          config=True)

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        return launcher(self.memory_limit_bytes, drop_root=False) + \
            super().format_kernel_cmd(extra_arguments)

    async def _async_pre_start_kernel(self, **kw):
        self.phase = "starting"
        if self.kernel_cgroup is None or self.kernel_cgroup.removed:  # a fresh one per start
            self.kernel_cgroup = await asyncio.to_thread(self._make_cgroup)
        return await super()._async_pre_start_kernel(**kw)

    pre_start_kernel = _async_pre_start_kernel

    def _make_cgroup(self) -> KernelCgroup | None:
        """The kernel's cgroup (tried twice), None where this host has none to give."""
        missing = limit_problems()
        if missing and not LimitedKernelManager._warned_missing:
            LimitedKernelManager._warned_missing = True
            for line in missing_limits_lines(missing):
                self.log.warning(line)
        if "memory" in missing and "tasks" in missing:
            return None
        try:
            return KernelCgroup(self.memory_limit_bytes, self.max_tasks)
        except GraderFailure:
            try:
                return KernelCgroup(self.memory_limit_bytes, self.max_tasks)
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

    def note_request(self, silent: bool) -> None:
        """Its client sends a request to run code (``silent``: the grader's own, out of the
        kernel's history): advance :attr:`phase`."""
        if silent and self.phase in ("starting", "set-up"):
            self.phase = "asked"
        elif not silent and self.phase == "asked":
            self.phase = "student"

    def note_answered(self) -> None:
        """Its client got the kernel's ``kernel_info`` reply: the kernel has started."""
        if self.phase == "starting":
            self.phase = "set-up"

    async def _async_is_alive(self) -> bool:
        alive = await super()._async_is_alive()
        if not alive and self.has_kernel and not self.shutting_down:
            self._note_death()
        return alive

    is_alive = _async_is_alive

    def _note_death(self) -> None:
        """The kernel ended by itself: before any cell of the student's ran (:attr:`phase`), the
        grader's failure, noted in :data:`~.failures.MACHINERY_FAILURES` with the memory limit
        to raise (the worker grades it again cold, then gives no grade); later, the student's."""
        if self.phase not in ("starting", "set-up", "asked"):
            return
        when = "before it answered" if self.phase == "starting" else \
            "while the course's set-up ran"
        self.phase = "ended"
        limit = f": under --memory-limit-mb {self.memory_limit_bytes // 2**20}, raise it if the " \
            "set-up needs more memory" if self.memory_limit_bytes else " (no memory limit)"
        machinery_failed(f"the kernel died {when}, before any cell of the student's{limit}")

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
            OUT_OF_MEMORY.append(why)
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

    nbgrader and nbclient are otherwise unchanged (see
    :class:`~.preprocessors.execute.SandboxedExecute`).
    """

    work_size_mb = Integer(WORK_SIZE_MB, help="size of the kernel's writable folders, MiB").tag(
        config=True)
    warm = Bool(True, help="fork kernels from a template that has imported TensorFlow "
                "(autograder.grading.kernels.warm); where no template can start, kernels start "
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
                spec.metadata["kernel_provisioner"] = {"provisioner_name": PROVISIONER_NAME}
        return spec

    async def _async_pre_start_kernel(self, **kw):
        if self.warm and self.warm_template is None:
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
