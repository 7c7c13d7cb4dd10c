"""Open nbgrader's formgrader on a class graded by ``course grade --out DIR``.

The formgrader reads its course from ``nbgrader_config.py`` in the folder the Jupyter server
starts in, and refuses a course root outside the server's root. So the server starts in ``DIR``,
whose ``nbgrader_config.py`` (written here) makes ``DIR`` the course root: ``DIR/gradebook.db``,
``DIR/autograded/``, ``DIR/feedback/`` and ``DIR/release/`` (the assignments as graded) are
nbgrader's defaults there, and ``solutions/`` of the course is the source directory.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from autograder.grading.course import REPO_ROOT
from autograder.grading.defaults import GRADEBOOK_FILE, SOURCE_DIR

# The JupyterLab set-ups of the course: students' hides nbgrader's instructor tools.
JUPYTER_CONFIG = REPO_ROOT / "jupyter-config"

INSTRUCTOR_CONFIG = JUPYTER_CONFIG / "instructor.py"

STUDENT_CONFIG = JUPYTER_CONFIG / "student.py"

CONFIG_TEMPLATE = '''\
# Written by `course formgrader`: nbgrader's view of the class graded into this folder.
# Open it with: {command}
from autograder.grading.configure import configure

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
configure(c)
c.CourseDirectory.root = {root!r}
c.CourseDirectory.source_directory = {source!r}
c.CourseDirectory.release_directory = "release"
'''


def formgrader_command(out: Path) -> str:
    """The documented command that opens the formgrader on the class graded into ``out``."""
    course = "course"
    if Path(sys.argv[0]).name == "course":  # as it was typed: .venv/bin/course, or its full path
        relative = os.path.relpath(sys.argv[0])
        course = os.path.abspath(sys.argv[0]) if relative.startswith("..") else relative
    return f"{course} formgrader {out}"


def write_course_config(out: Path, root: Path = REPO_ROOT) -> Path:
    """Write ``out/nbgrader_config.py`` (see the module's docstring); returns its path.

    Raises:
        FileNotFoundError: ``out`` holds no ``gradebook.db`` (not graded by ``course grade``).
    """
    out = Path(out).resolve()
    if not (out / GRADEBOOK_FILE).is_file():
        raise FileNotFoundError(f"{out} holds no gradebook.db: grade a class into it first "
                                f"with 'course grade SUBMITTED --out {out}'")
    path = out / "nbgrader_config.py"
    path.write_text(CONFIG_TEMPLATE.format(
        command=formgrader_command(out), root=str(out), source=str(Path(root) / SOURCE_DIR)))
    return path


def lab_argv(out: Path, extra: list[str]) -> list[str]:
    """The JupyterLab command line (run in ``out``) of the instructor's set-up, opening the
    formgrader; ``extra`` are more ``jupyter lab`` options (``--port``, ``--no-browser``...)."""
    argv = [sys.executable, "-m", "jupyterlab", f"--config={INSTRUCTOR_CONFIG}",
            "--ServerApp.default_url=/formgrader"]
    if os.geteuid() == 0 and "--allow-root" not in extra:
        argv.append("--allow-root")
    return argv + list(extra)


def open_formgrader(out: Path, extra: list[str], root: Path = REPO_ROOT) -> None:
    """Write ``out``'s course config, then replace this process with JupyterLab in ``out``."""
    write_course_config(out, root)
    os.chdir(Path(out).resolve())
    argv = lab_argv(out, extra)
    os.execv(argv[0], argv)
