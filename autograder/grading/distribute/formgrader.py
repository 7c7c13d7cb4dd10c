"""Open nbgrader's formgrader on a class graded by ``course grade --out DIR``.

The formgrader reads its course from ``nbgrader_config.py`` in the folder the Jupyter server
starts in, and refuses a course root outside the server's root. So the server starts in ``DIR``,
whose ``nbgrader_config.py`` (written here) makes ``DIR`` the course root: ``DIR/gradebook.db``,
``DIR/autograded/``, ``DIR/feedback/`` and ``DIR/release/`` (the assignments as graded) are
nbgrader's defaults there, and ``solutions/`` of the course is the source directory.
``DIR/submitted`` is a view of the submissions last graded into ``DIR``: their staged copies,
under the ids they were graded as (written by ``course grade``: :func:`show_in_view`), so the
formgrader counts them, and its own autograde reads what grading read, never a student's folder.
"""
from __future__ import annotations

import os
import shutil
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
c.CourseDirectory.submitted_directory = "submitted"  # a view of the class's submissions
c.HTMLExporter.sanitize_html = True  # a submission's HTML outputs never run in this server
'''


def formgrader_command(out: Path) -> str:
    """The documented command that opens the formgrader on the class graded into ``out``."""
    course = "course"
    if Path(sys.argv[0]).name == "course":  # as it was typed: .venv/bin/course, or its full path
        relative = os.path.relpath(sys.argv[0])
        course = os.path.abspath(sys.argv[0]) if relative.startswith("..") else relative
    return f"{course} formgrader {out}"


# In DIR: the course root the class was graded against (``course grade --course-root``, else
# this repository), so that the formgrader's source and Autograde are that course's.
COURSE_ROOT_FILE = ".course-root"


def record_course_root(out: Path, root: Path) -> None:
    """Note in ``out`` the course root its class is graded against (:func:`graded_course_root`)."""
    (Path(out) / COURSE_ROOT_FILE).write_text(f"{Path(root).resolve()}\n", encoding="utf-8")


def graded_course_root(out: Path) -> Path:
    """The course root noted in ``out`` by its last grading run: a folder holding
    ``solutions/``; else (none noted, or no longer such a folder) this repository."""
    try:
        noted = Path((Path(out) / COURSE_ROOT_FILE).read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError, ValueError):
        return REPO_ROOT
    return noted if noted.is_absolute() and (noted / SOURCE_DIR).is_dir() else REPO_ROOT


def write_course_config(out: Path, root: Path | None = None) -> Path:
    """Write ``out/nbgrader_config.py`` (see the module's docstring) for the course at ``root``
    (default: the one ``out`` was graded against, :func:`graded_course_root`); returns its path.

    Raises:
        FileNotFoundError: ``out`` holds no ``gradebook.db`` (not graded by ``course grade``).
    """
    out = Path(out).resolve()
    if not (out / GRADEBOOK_FILE).is_file():
        raise FileNotFoundError(f"{out} holds no gradebook.db: grade a class into it first "
                                f"with 'course grade SUBMITTED --out {out}'")
    root = graded_course_root(out) if root is None else root
    path = out / "nbgrader_config.py"
    path.write_text(CONFIG_TEMPLATE.format(
        command=formgrader_command(out), root=str(out), source=source_in_view(out, root)))
    return path


SOURCE_LINK = "source"  # in DIR: a link to the course's solutions/, inside the server's root


def source_in_view(out: Path, root: Path = REPO_ROOT) -> str:
    """The source directory the formgrader of ``out`` is given: ``"source"``, a link made in
    ``out`` to ``<root>/solutions``, so that Manage Assignments' link to each assignment's
    source opens (nbgrader links a path relative to the course root, which the server serves
    only inside its own root); the absolute path of ``solutions/`` where ``out/source`` is
    something else (not ours to replace)."""
    link, source = Path(out) / SOURCE_LINK, (Path(root) / SOURCE_DIR).resolve()
    if link.is_symlink() and link.resolve() != source:
        link.unlink()
    if not link.exists() and not link.is_symlink():
        link.symlink_to(source, target_is_directory=True)
    return SOURCE_LINK if link.is_symlink() and link.resolve() == source else str(source)


VIEW_MARK = ".submitted-view"  # in a submitted/ made by course grade (so it may be replaced)


def submitted_view(out: Path, submitted: Path, root: Path = REPO_ROOT) -> Path | None:
    """``out/submitted``, nbgrader's view of the class graded into ``out`` against the course at
    ``root`` (noted: :func:`record_course_root`), made if missing: what :func:`show_in_view` puts
    there. None where ``out/submitted`` is the graded class itself (``course demo`` builds its
    class there) or a folder ``course grade`` did not make."""
    record_course_root(out, root)
    view = Path(out) / "submitted"
    if view.is_symlink() or view.resolve() == Path(submitted).resolve() or \
            (view.exists() and not (view / VIEW_MARK).is_file()):
        return None
    view.mkdir(parents=True, exist_ok=True)
    (view / VIEW_MARK).write_text("Made by `course grade`: the staged copies of the submissions, "
                                  "under the ids they were graded as\n")
    return view


def show_in_view(view: Path, student_id: str, assignment_id: str, staged: Path | None) -> None:
    """Put a submission into the view as grading staged it, replacing what was there: a copy of
    ``staged`` (regular files only: notebooks read safely and normalized, a ``timestamp.txt``
    nbgrader reads, never a link), under ``student_id``, the id it was graded as (a safe id,
    :mod:`~.intake.student_ids`); ``staged`` None removes it. Never the submitted folder itself:
    the formgrader's autograde would follow what a student put there."""
    dest = view / student_id / assignment_id
    if dest.is_symlink():
        dest.unlink()
    elif dest.exists():
        shutil.rmtree(dest)
    if staged is not None:
        shutil.copytree(staged, dest, symlinks=True)


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


def open_formgrader(out: Path, extra: list[str], root: Path | None = None) -> None:
    """Write ``out``'s course config (for ``root``, default the course ``out`` was graded
    against), then replace this process with JupyterLab in ``out``."""
    write_course_config(out, root)
    os.chdir(Path(out).resolve())
    argv = lab_argv(out, extra)
    os.execv(argv[0], argv)
