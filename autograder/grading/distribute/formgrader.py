"""Open nbgrader's formgrader on a class graded by ``course grade --out DIR``.

The formgrader reads its course from ``nbgrader_config.py`` in the folder the Jupyter server
starts in, and refuses a course root outside the server's root. So the server starts in ``DIR``,
whose ``nbgrader_config.py`` (written here) makes ``DIR`` the course root: ``DIR/gradebook.db``,
``DIR/autograded/``, ``DIR/feedback/`` and ``DIR/release/`` (the assignments as graded) are
nbgrader's defaults there, and ``solutions/`` of the course is the source directory.
``DIR/submitted`` is a view of the submissions last graded into ``DIR`` (symbolic links, made by
``course grade``: :func:`link_submitted`), so the formgrader counts them; nothing of them is
copied or written.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from nbgrader.utils import parse_utc

from autograder.grading.course import REPO_ROOT
from autograder.grading.defaults import GRADEBOOK_FILE, SOURCE_DIR, STUDENT_ID

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
c.CourseDirectory.submitted_directory = "submitted"  # a view of the class's submissions
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


VIEW_MARK = ".submitted-view"  # in a submitted/ made by link_submitted (so it may be replaced)


def link_submitted(out: Path, submitted: Path) -> Path | None:
    """Make ``out/submitted`` nbgrader's view of ``submitted``, the class just graded into ``out``,
    and return it: each ``<student>/<assignment>`` folder as a symbolic link to the submitted one,
    or, where its ``timestamp.txt`` is not a time nbgrader reads (the formgrader's pages would
    fail on it; grading leaves it out too), as a folder of links to its other files. Folders that
    are symbolic links, or whose name cannot be a student id, are left out, as grading leaves
    them. A view made before is replaced; a real folder there (``course demo`` builds its class
    in ``out/submitted``) is left as it is, and None returned."""
    view, source = Path(out) / "submitted", Path(submitted).resolve()
    if view.resolve() == source:
        return view
    if view.exists() or view.is_symlink():
        if not (view / VIEW_MARK).is_file():
            return None
        shutil.rmtree(view)  # its links and folders: rmtree never follows a link
    view.mkdir(parents=True)
    (view / VIEW_MARK).write_text(f"Made by `course grade`: links to {source}\n")
    for folder in sorted(source.glob("*/*")):
        if folder.is_symlink() or folder.parent.is_symlink() or not folder.is_dir() or \
                not STUDENT_ID.fullmatch(folder.parent.name):
            continue
        dest = view / folder.parent.name / folder.name
        dest.parent.mkdir(exist_ok=True)
        if _readable_timestamp(folder / "timestamp.txt"):
            dest.symlink_to(folder, target_is_directory=True)
            continue
        dest.mkdir()
        for entry in folder.iterdir():
            if entry.name != "timestamp.txt":
                (dest / entry.name).symlink_to(entry)
    return view


def _readable_timestamp(path: Path) -> bool:
    """Whether ``path`` is absent or a ``timestamp.txt`` nbgrader's formgrader reads."""
    if not path.exists() and not path.is_symlink():
        return True
    try:
        return path.is_file() and not path.is_symlink() and path.stat().st_size < 200 and \
            parse_utc(path.read_text().strip()) is not None
    except Exception:  # ValueError, UnicodeDecodeError, OSError, OverflowError...
        return False


def lab_argv(out: Path, extra: list[str]) -> list[str]:
    """The JupyterLab command line (run in ``out``) of the instructor's set-up, opening the
    formgrader; ``extra`` are more ``jupyter lab`` options (``--port``, ``--no-browser``...).

    The page opened (and printed) is JupyterLab's ``LabApp.default_url``, which replaces the
    server's own: ``/formgrader`` (nbgrader's Manage Assignments, the page JupyterLab's Formgrader
    tab shows; JupyterLab itself stays at ``/lab``)."""
    argv = [sys.executable, "-m", "jupyterlab", f"--config={INSTRUCTOR_CONFIG}",
            "--LabApp.default_url=/formgrader"]
    if os.geteuid() == 0 and "--allow-root" not in extra:
        argv.append("--allow-root")
    return argv + list(extra)


def open_formgrader(out: Path, extra: list[str], root: Path = REPO_ROOT) -> None:
    """Write ``out``'s course config, then replace this process with JupyterLab in ``out``."""
    write_course_config(out, root)
    os.chdir(Path(out).resolve())
    argv = lab_argv(out, extra)
    os.execv(argv[0], argv)
