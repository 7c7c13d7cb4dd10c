"""nbgrader for one run: its configuration with the run's folders, its API, and why it failed.
"""
from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
from pathlib import Path

from traitlets.config import Config

from autograder.grading.configure import configure
from autograder.grading.course import REPO_ROOT
from autograder.grading.defaults import CELL_TIMEOUT_S, GRADEBOOK_FILE
from autograder.grading.failures import Outcome


def nbgrader_config(root: Path = REPO_ROOT, *, db_path: Path | None = None,
                    db_url: str | None = None, release_dir: Path | None = None,
                    submitted_dir: Path | None = None, workdir: Path | None = None,
                    cell_timeout_s: int = CELL_TIMEOUT_S, sandbox: bool | None = None,
                    memory_limit_bytes: int | None = None,
                    demo_sha256: list[str] | None = None) -> Config:
    """The course's nbgrader ``Config`` with its directories resolved for one run.

    Args:
        root: the course root holding ``solutions/`` (nbgrader's source directory).
        db_path: SQLite gradebook file; default ``<workdir>/gradebook.db`` or a temporary file.
        db_url: any SQLAlchemy URL of the gradebook (PostgreSQL, say); overrides ``db_path``.
        release_dir: where released notebooks go; default ``<root>/notebooks``.
        submitted_dir: folder in nbgrader's ``<student>/<assignment>/<notebook>.ipynb`` layout.
        workdir: where ``autograded/`` and ``feedback/`` go.
        cell_timeout_s: per-cell time limit of graded runs, seconds.
        sandbox: run graded kernels in the bubblewrap sandbox; None: where available.
        memory_limit_bytes: memory limit of each graded kernel, bytes (its address space, and all
            its processes together in its cgroup); None for none.
        demo_sha256: the demonstration cells grading skips (settings.demo_cell_hashes; []: none);
            None: those of this course's ``solutions/``.
    """
    put_scripts_on_path()  # a grading process: nbgrader runs alembic to make a gradebook
    c = Config()
    configure(c, cell_timeout_s, sandbox, demo_sha256)
    c.LimitedKernelManager.memory_limit_bytes = memory_limit_bytes
    c.CourseDirectory.root = str(root)
    if release_dir is not None:
        c.CourseDirectory.release_directory = str(Path(release_dir).resolve())
    if submitted_dir is not None:
        c.CourseDirectory.submitted_directory = str(Path(submitted_dir).resolve())
    if workdir is not None:
        workdir = Path(workdir).resolve()
        c.CourseDirectory.autograded_directory = str(workdir / "autograded")
        c.CourseDirectory.feedback_directory = str(workdir / "feedback")
        db_path = db_path or workdir / GRADEBOOK_FILE
    if db_url is None and db_path is None:
        db_path = Path(tempfile.mkdtemp(prefix="gradebook-")) / GRADEBOOK_FILE
    if db_url is None:
        Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    c.CourseDirectory.db_url = db_url or sqlite_url(db_path)
    return c


def sqlite_url(db_path: Path) -> str:
    """SQLAlchemy URL of a SQLite gradebook that waits up to 120 s for a lock held by another
    grading process instead of failing at once."""
    return f"sqlite:///{Path(db_path).resolve()}?timeout=120"


def stamp_new_gradebook(db_url: str) -> None:
    """Give a gradebook that has no tables yet its ``alembic_version`` (nbgrader's migrations'
    head, :func:`alembic_head`), so that nbgrader's ``Gradebook`` takes it as an existing database,
    creates its tables and skips running ``alembic heads`` in a subprocess, 1 to 2 s per new
    gradebook (issue 30). The result is the database nbgrader makes. A gradebook with tables is
    left alone."""
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(db_url)
    try:
        if inspect(engine).get_table_names():
            return
        with engine.begin() as con:
            con.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            con.execute(text("INSERT INTO alembic_version (version_num) VALUES (:head)"),
                        {"head": alembic_head()})
    finally:
        engine.dispose()


@functools.cache
def alembic_head() -> str:
    """The head revision of nbgrader's gradebook migrations, read in this process from the
    migration scripts nbgrader ships (what ``nbgrader.api.get_alembic_version`` gets from the
    ``alembic heads`` command)."""
    from alembic.config import Config as AlembicConfig
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = AlembicConfig()
    config.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(config).get_current_head()


def nbgrader_api(config: Config):
    """An ``NbGraderAPI`` over ``config`` (paths resolved against its ``CourseDirectory.root``)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)


def put_scripts_on_path() -> None:
    """Put this Python's scripts folder on this process's ``PATH``: nbgrader runs ``alembic`` from
    there to make a gradebook, and ``.venv/bin/course`` or ``.venv/bin/pytest`` run without an
    activated environment. Only grading processes call this (the ``course`` command, the grading
    API, ``nbgrader`` commands): never :func:`configure`, which a Jupyter server runs too."""
    scripts = os.path.dirname(sys.executable)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")


def read_failure(error: str, log: str = "") -> tuple[Outcome, str]:
    """Why nbgrader failed, from the error text and log its API returns (it catches every
    exception and keeps only their text): the :class:`~.failures.Outcome` and the problem, a
    sentence for the report (G02 and friends). nbclient's ``DeadKernelError`` is a kernel that
    died; a ``MemoryError`` of nbgrader's own process is out of memory; anything else is
    :data:`~.failures.Outcome.FAILED` with the last exception line of the text."""
    text = error + "\n" + log
    if "DeadKernelError" in text or "Kernel died" in text:
        return Outcome.KERNEL_DIED, "the kernel died before all cells ran (out of memory, or os._exit?)"
    if "MemoryError" in text:
        return Outcome.OUT_OF_MEMORY, "the notebook ran out of memory"
    if "longer than" in error:  # a time limit's own sentence
        return Outcome.FAILED, error
    causes = [line.strip() for line in text.splitlines()
              if re.match(r"\s*[\w.]+(Error|Exception): ", line) and "NbGraderException" not in line]
    return Outcome.FAILED, "grading failed: " + (causes[-1][:300] if causes else
                                                 "unknown error (see the log)")
