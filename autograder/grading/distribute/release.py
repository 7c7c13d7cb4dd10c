"""Release student notebooks from ``solutions/`` and execute the solution notebooks.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

import nbformat
from traitlets import Dict

from autograder.grading.course import REPO_ROOT, assignments
from autograder.grading.defaults import GRADEBOOK_FILE, KERNEL_ENV, KERNEL_NAME, RELEASE_DIR, SOURCE_DIR
from autograder.grading.kernels.managers import GradingKernelManager
from autograder.grading.nbgrader_api import nbgrader_api, nbgrader_config, stamp_new_gradebook


class ReleaseError(RuntimeError):
    """nbgrader could not generate an assignment; the message holds its log."""


class SavedWorkError(ReleaseError):
    """Releasing would overwrite files of ``notebooks/`` changed since the last release (a
    student's saved answers); ``changed`` lists them."""

    def __init__(self, changed: list[Path]):
        self.changed = changed
        super().__init__("these files changed since the last release, and releasing would "
                         "overwrite them:\n" + "\n".join(f"  {p}" for p in changed))


# What the last release wrote into notebooks/: sha256sum's format ("<sha256>  <id>/<file>").
RELEASE_RECORD = ".release.sha256"
# The same files' work digests (:func:`work_digest`), in the same format.
RELEASE_WORK_RECORD = ".release.work.sha256"

# What a front end writes into a notebook without the student changing it: opening it in
# JupyterLab writes its kernel's kernelspec (the course's kernel is "Python 3 (ipykernel)", the
# release says nbgrader's "Python 3"; VS Code, Colab or a conda kernel each write their own),
# running a cell writes language_info, outputs and counts, and folding a cell writes UI state.
FRONT_END_METADATA = ("kernelspec", "language_info", "widgets")
FRONT_END_CELL_KEYS = ("outputs", "execution_count")
FRONT_END_CELL_METADATA = ("collapsed", "scrolled", "jupyter", "execution", "ExecuteTime")


def work_digest(data: bytes, name: str) -> str:
    """sha256 of what a student changes in the file ``name`` holding ``data``: for a notebook,
    its JSON (key order and layout aside) less what a front end writes on its own
    (:data:`FRONT_END_METADATA`, :data:`FRONT_END_CELL_KEYS`, :data:`FRONT_END_CELL_METADATA`);
    for any other file, or a notebook that is not JSON, its bytes."""
    try:
        nb = json.loads(data) if name.endswith(".ipynb") else None
    except ValueError:
        nb = None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        return hashlib.sha256(data).hexdigest()
    if isinstance(nb.get("metadata"), dict):
        nb["metadata"] = {k: v for k, v in nb["metadata"].items() if k not in FRONT_END_METADATA}
    nb["cells"] = [{k: v for k, v in c.items() if k not in FRONT_END_CELL_KEYS} if isinstance(c, dict)
                   else c for c in nb.get("cells", [])]
    for cell in nb["cells"]:
        if isinstance(cell, dict) and isinstance(cell.get("metadata"), dict):
            cell["metadata"] = {k: v for k, v in cell["metadata"].items()
                                if k not in FRONT_END_CELL_METADATA}
    return hashlib.sha256(json.dumps(nb, sort_keys=True).encode()).hexdigest()


def parse_due_dates(specs: list[str]) -> dict[str, datetime]:
    """``["01_gradient_tape=2026-12-01T23:59:00+01:00", ...]`` -> assignment id -> due date.

    Each due date is ISO 8601 with its time zone (``+01:00``, ``Z``): a due date without one
    would be read differently by each machine. Raises ValueError naming the spec at fault."""
    due = {}
    for spec in specs:
        assignment_id, _, when = spec.partition("=")
        try:
            date = datetime.fromisoformat(when.strip())
        except ValueError:
            date = None
        if not assignment_id.strip() or date is None or date.tzinfo is None:
            raise ValueError(f"--due {spec!r}: expected ASSIGNMENT=DATE with DATE in ISO 8601 and "
                             "its time zone, e.g. 01_gradient_tape=2026-12-01T23:59:00+01:00")
        due[assignment_id.strip()] = date
    return due


def due_dates(db_url: str, course_id: str, assignment_ids: list[str]) -> dict[str, datetime | None]:
    """Each assignment's due date in the gradebook at ``db_url`` (UTC, as nbgrader keeps it), or
    None where it has none or the gradebook does not know the assignment."""
    from nbgrader.api import Gradebook, MissingEntry

    found: dict[str, datetime | None] = {}
    with Gradebook(db_url, course_id) as gb:
        for assignment_id in assignment_ids:
            try:
                found[assignment_id] = gb.find_assignment(assignment_id).duedate
            except MissingEntry:
                found[assignment_id] = None
    return found


def due_problem(due: dict[str, datetime] | None, assignment_ids: list[str]) -> str | None:
    """Why the due dates ``due`` cannot be given to ``assignment_ids`` (one names an assignment
    not among them), a sentence for the instructor; None where they can."""
    extra = sorted(set(due or {}) - set(assignment_ids))
    return (f"a due date for {', '.join(extra)}, which is not graded or released here "
            f"(assignments: {', '.join(assignment_ids)})") if extra else None


def release(assignment_ids: list[str] | None = None, *, root: Path = REPO_ROOT,
            release_dir: Path | None = None, db_path: Path | None = None,
            db_url: str | None = None, due: dict[str, datetime] | None = None) -> list[Path]:
    """Generate the student release of each assignment with ``nbgrader generate_assignment``.

    Solutions and hidden tests are removed, outputs cleared, graded cells locked and checksummed,
    and the grade cells recorded in the gradebook at ``db_path`` (a temporary one by default).

    Args:
        assignment_ids: assignments to release; default every folder of ``solutions/``.
        release_dir: output folder; default ``<root>/notebooks``.
        db_path, db_url: the gradebook that records the assignments' grade cells.
        due: assignment id -> due date (time-zone aware), written into that gradebook as the
            assignment's ``duedate`` (nbgrader's, as ``nbgrader db assignment add --duedate``
            sets it); an assignment not named keeps the due date the gradebook has.
    Returns:
        The paths of the released notebooks.
    Raises:
        ReleaseError: when nbgrader fails (its log is in the message).
        ValueError: ``due`` names an assignment not released here.
    """
    ids = assignment_ids or assignments(root)
    if problem := due_problem(due, ids):
        raise ValueError(problem)
    config = nbgrader_config(root, db_path=db_path, db_url=db_url, release_dir=release_dir)
    stamp_new_gradebook(config.CourseDirectory.db_url)
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
    if due:
        from nbgrader.api import Gradebook

        with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
            for assignment_id, date in due.items():
                gb.update_or_create_assignment(assignment_id, duedate=date)
    return released


def release_notebooks(assignment_ids: list[str] | None = None, *, root: Path = REPO_ROOT,
                      force: bool = False) -> list[Path]:
    """``course release``: :func:`release` into ``<root>/notebooks``, never over a student's work.

    The release is made in a temporary folder first. A file it would replace is left alone unless
    it holds what the last release wrote (its sha256 in ``notebooks/.release.sha256``) or what
    this release writes, byte for byte or but for what a front end writes on its own (its
    :func:`work_digest` in ``notebooks/.release.work.sha256``: opening a notebook in JupyterLab
    rewrites its kernelspec, running it adds outputs); otherwise (answers saved there) nothing is written and
    :class:`SavedWorkError` lists the files, unless ``force``. Files of ``notebooks/`` that the
    release does not write (a student's own) are never removed. Returns the released notebooks.

    Raises:
        SavedWorkError: files changed since the last release, and ``force`` is False.
        ReleaseError: when nbgrader fails.
    """
    ids = assignment_ids or assignments(root)
    target = Path(root) / RELEASE_DIR
    record_path = target / RELEASE_RECORD
    record, work_record = _read_record(record_path), _read_record(target / RELEASE_WORK_RECORD)
    fresh = release_to_temp(ids, root=root)
    try:
        new = {path.relative_to(fresh).as_posix(): path.read_bytes()
               for assignment_id in ids for path in sorted((fresh / assignment_id).rglob("*"))
               if path.is_file()}
        changed = []
        for name, data in new.items():
            dest = target / name
            if dest.is_file() and not force:
                saved = dest.read_bytes()
                digest = hashlib.sha256(saved).hexdigest()
                if digest not in (record.get(name), hashlib.sha256(data).hexdigest()) and \
                        work_digest(saved, name) not in (work_record.get(name), work_digest(data, name)):
                    changed.append(dest)
        if changed:
            raise SavedWorkError(changed)
        for name, data in new.items():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(data)
            record[name] = hashlib.sha256(data).hexdigest()
            work_record[name] = work_digest(data, name)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    for path, digests in ((record_path, record), (target / RELEASE_WORK_RECORD, work_record)):
        path.write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(digests.items())))
    return [target / name for name in new if name.endswith(".ipynb")]


def _read_record(path: Path) -> dict[str, str]:
    """A record in sha256sum's format: file name -> digest; {} when there is none."""
    record = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        digest, _, name = line.partition("  ")
        record[name] = digest
    return record


class SolutionKernelManager(GradingKernelManager):
    """Grading mode without the CPU split: a student's kernel sees one CPU device unless its
    notebook asks for more (08's set-up cell does), so the stored outputs show what a student sees."""

    kernel_env = Dict({k: v for k, v in KERNEL_ENV.items() if k != "WORKBOOK_LOGICAL_CPUS"},
                      help="grading mode's variables less utils.notebook.LOGICAL_CPUS_ENV").tag(config=True)


def execute_notebook(path: Path, *, timeout: int = 600) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel in grading mode, less the CPU split that
    grading kernels get (:class:`SolutionKernelManager`; working directory: its folder), and
    return it with outputs, TensorFlow's stderr log lines removed. Raises nbclient's
    CellExecutionError on the first failing cell."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # Widget state (tqdm's bars) would carry the solution's numbers into the release's metadata;
    # timing metadata would change the release at every execution.
    NotebookClient(nb, timeout=timeout, kernel_name=KERNEL_NAME, store_widget_state=False,
                   kernel_manager_class=SolutionKernelManager,
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
