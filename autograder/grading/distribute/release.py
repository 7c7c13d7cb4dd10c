"""Release student notebooks from ``solutions/`` and execute the solution notebooks.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat

from autograder.grading.course import REPO_ROOT, assignments
from autograder.grading.defaults import GRADEBOOK_FILE, KERNEL_NAME, SOURCE_DIR
from autograder.grading.kernels.managers import GradingKernelManager
from autograder.grading.nbgrader_api import nbgrader_api, nbgrader_config


class ReleaseError(RuntimeError):
    """nbgrader could not generate an assignment; the message holds its log."""


def release(assignment_ids: list[str] | None = None, *, root: Path = REPO_ROOT,
            release_dir: Path | None = None, db_path: Path | None = None,
            db_url: str | None = None) -> list[Path]:
    """Generate the student release of each assignment with ``nbgrader generate_assignment``.

    Solutions and hidden tests are removed, outputs cleared, graded cells locked and checksummed,
    and the grade cells recorded in the gradebook at ``db_path`` (a temporary one by default).

    Args:
        assignment_ids: assignments to release; default every folder of ``solutions/``.
        release_dir: output folder; default ``<root>/notebooks``.
        db_path, db_url: the gradebook that records the assignments' grade cells.
    Returns:
        The paths of the released notebooks.
    Raises:
        ReleaseError: when nbgrader fails (its log is in the message).
    """
    ids = assignment_ids or assignments(root)
    config = nbgrader_config(root, db_path=db_path, db_url=db_url, release_dir=release_dir)
    api = nbgrader_api(config)
    released = []
    for assignment_id in ids:
        result = api.generate_assignment(assignment_id, force=True, create=True)
        if not result["success"]:
            raise ReleaseError(f"release of {assignment_id} failed:\n{result.get('error', '')}\n"
                               f"{result.get('log', '')}")
        out = Path(config.CourseDirectory.release_directory)
        out = out if out.is_absolute() else root / out
        released += sorted((out / assignment_id).glob("*.ipynb"))
    return released


def execute_notebook(path: Path, *, timeout: int = 600) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel in grading mode (working directory: its
    folder) and return it with outputs, TensorFlow's stderr log lines removed. Raises nbclient's
    CellExecutionError on the first failing cell."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # Widget state (tqdm's bars) would carry the solution's numbers into the release's metadata;
    # timing metadata would change the release at every execution.
    NotebookClient(nb, timeout=timeout, kernel_name=KERNEL_NAME, store_widget_state=False,
                   kernel_manager_class=GradingKernelManager,
                   record_timing=False,
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    strip_stderr(nb)
    return nb


def strip_stderr(nb: nbformat.NotebookNode) -> None:
    """Remove every stderr stream from a notebook's outputs (solutions are stored without them)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if not (o.output_type == "stream" and o.name == "stderr")]


def execute_solutions(assignment_ids: list[str] | None = None, *,
                      root: Path = REPO_ROOT) -> list[Path]:
    """Execute every solution notebook of the given assignments in place, storing outputs."""
    done = []
    for assignment_id in assignment_ids or assignments(root):
        for path in sorted((root / SOURCE_DIR / assignment_id).glob("*.ipynb")):
            nb = execute_notebook(path)
            nbformat.write(nb, path)
            done.append(path)
    return done


def release_to_temp(assignment_ids: list[str] | None = None, *, root: Path = REPO_ROOT) -> Path:
    """Release into a new temporary folder (for comparing with the committed ``notebooks/``)."""
    out = Path(tempfile.mkdtemp(prefix="release-"))
    release(assignment_ids, root=root, release_dir=out, db_path=out / GRADEBOOK_FILE)
    return out
