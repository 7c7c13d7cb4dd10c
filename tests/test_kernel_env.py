"""Grading mode reaches grading kernels only: loading the course's configuration (as a Jupyter
server does through nbgrader's server extension) changes no environment variable."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from traitlets.config import Config

from autograder.grading.course import REPO_ROOT
from autograder.grading.kernels.managers import GradingKernelManager, grading_env
from autograder.grading.kernels.bwrap import SandboxUnavailable, sandbox_argv
from autograder.grading.kernels.managers import SandboxedKernelManager
from autograder.grading.defaults import KERNEL_ENV
from autograder.grading.configure import configure

STUDENT_ENV = {k: v for k, v in os.environ.items() if k not in KERNEL_ENV}


def test_loading_nbgrader_config_leaves_the_environment_alone():
    # A fresh interpreter without grading mode (pytest's conftest sets it for nbval), as a
    # Jupyter server started from the course folder loads nbgrader_config.py.
    code = ("import os, json; from traitlets.config import Config\n"
            "before = dict(os.environ)\n"
            "ns = {'get_config': Config}\n"
            "exec(open('nbgrader_config.py').read(), ns)\n"
            "print(json.dumps([k for k in set(before) | set(os.environ)"
            " if before.get(k) != os.environ.get(k)]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=STUDENT_ENV,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_configure_changes_no_environment_variable(monkeypatch):
    for name in KERNEL_ENV:
        monkeypatch.delenv(name, raising=False)
    before = dict(os.environ)
    configure(Config())
    assert dict(os.environ) == before


def test_grading_env_adds_grading_mode_without_overriding_the_instructor():
    env = grading_env({"PATH": "/bin", "WORKBOOK_FAST": "0"})
    assert env["WORKBOOK_FAST"] == "0"
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "3" and env["PYTHONWARNINGS"] == "ignore"
    assert env["PATH"] == "/bin"


def test_grading_kernel_starts_in_grading_mode(monkeypatch):
    for name in KERNEL_ENV:
        monkeypatch.delenv(name, raising=False)

    async def kernel_env() -> dict:
        manager = GradingKernelManager(kernel_name="python3")
        await manager.start_kernel(env=dict(os.environ))
        try:
            client = manager.client()
            client.start_channels()
            await client.wait_for_ready(timeout=120)
            expression = f"{{k: __import__('os').environ.get(k) for k in {sorted(KERNEL_ENV)!r}}}"
            reply = await client.execute_interactive(
                "", user_expressions={"env": expression}, timeout=120)
            client.stop_channels()
        finally:
            await manager.shutdown_kernel(now=True)
        return eval(reply["content"]["user_expressions"]["env"]["data"]["text/plain"])

    assert asyncio.run(kernel_env()) == KERNEL_ENV
    assert "WORKBOOK_FAST" not in os.environ


def test_sandboxed_kernel_gets_grading_mode_by_name(tmp_path, monkeypatch):
    for name in KERNEL_ENV:
        monkeypatch.delenv(name, raising=False)
    env = GradingKernelManager().launch_env()
    try:
        argv = sandbox_argv(Path(tmp_path), env=env)
    except SandboxUnavailable as error:
        pytest.skip(str(error))
    pairs = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "--setenv"}
    for name, value in KERNEL_ENV.items():
        assert pairs[name] == value
    assert issubclass(SandboxedKernelManager, GradingKernelManager)


def _kernel_sees(km_class, cells: list[str], **traits) -> tuple[list[str], object]:
    """Run ``cells`` in a kernel of ``km_class`` (nbclient, as nbgrader starts it) with its
    manager's ``traits`` set; returns each cell's printed text and the kernel manager."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            kernel_manager_class=km_class, startup_timeout=300)
    client.km = km = client.create_kernel_manager()
    for name, value in traits.items():
        setattr(km, name, value)
    client.execute()
    return ["".join(o.get("text", "") or f"{o.get('ename')}: {o.get('evalue')}"
                    for o in cell.outputs) for cell in nb.cells], km


# What an instructor's notebook runs during autograding (nbgrader's FAQ).
READ_EXECUTION = "import os; print(os.environ.get('NBGRADER_EXECUTION'))"
ASSERT_AUTOGRADE = "assert os.environ.get('NBGRADER_EXECUTION') == 'autograde'; print('ok')"


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_sandboxed_grading_kernel_gets_nbgrader_execution_autograde(monkeypatch, warm):
    from autograder.grading.kernels.bwrap import sandbox_problem

    if sandbox_problem():
        pytest.skip(sandbox_problem())
    # Not even from this process: the kernel manager gives it (nbgrader's Autograde sets it in
    # the grading process too, and the sandbox clears what it does not pass by name).
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    outputs, km = _kernel_sees(SandboxedKernelManager, [READ_EXECUTION, ASSERT_AUTOGRADE],
                               warm=warm)
    assert outputs == ["autograde\n", "ok\n"]
    assert (km.warm_template is not None) == warm  # no silent fall back to cold
    assert "NBGRADER_EXECUTION" not in os.environ


def test_unsandboxed_grading_kernel_gets_nbgrader_execution_autograde(monkeypatch):
    from autograder.grading.kernels.managers import LimitedKernelManager

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    outputs, _ = _kernel_sees(LimitedKernelManager, [READ_EXECUTION])
    assert outputs == ["autograde\n"]


def test_solutions_run_for_a_release_are_not_autograded(monkeypatch):
    # course release runs the solutions in grading mode (GradingKernelManager): no autograde.
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    outputs, _ = _kernel_sees(GradingKernelManager, [READ_EXECUTION])
    assert outputs == ["None\n"]


def test_nbgrader_execution_set_by_the_grading_process_reaches_the_sandbox(tmp_path):
    # nbgrader's Validate sets NBGRADER_EXECUTION=validate in its process: kept, and passed in.
    from autograder.grading.kernels.managers import LimitedKernelManager

    env = LimitedKernelManager().launch_env({"PATH": "/bin", "NBGRADER_EXECUTION": "validate"})
    assert env["NBGRADER_EXECUTION"] == "validate"
    assert LimitedKernelManager().launch_env({"PATH": "/bin"})["NBGRADER_EXECUTION"] == "autograde"
    try:
        argv = sandbox_argv(Path(tmp_path), env=env)
    except SandboxUnavailable as error:
        pytest.skip(str(error))
    pairs = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "--setenv"}
    assert pairs["NBGRADER_EXECUTION"] == "validate"
