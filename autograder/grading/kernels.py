"""The kernels of grading and validation runs, and their environment.

Grading kernels run in "grading mode": :data:`~.settings.KERNEL_ENV` (fast mode, TensorFlow's C++
log off, Python warnings ignored). That environment is given to each kernel at its start by
:class:`GradingKernelManager`, never written into the environment of the process that loads the
configuration: a Jupyter server loads this course's ``nbgrader_config.py`` too (nbgrader's server
extension), and the kernels a student starts from it must run exactly as anywhere else.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from jupyter_client.manager import AsyncKernelManager
from traitlets import Dict

from .settings import KERNEL_ENV


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
