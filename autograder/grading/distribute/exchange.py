"""nbgrader's exchange for a JupyterHub or a shared server: where it is, and what students need.

The exchange is one folder every user of the machine can reach (nbgrader's default
``/usr/local/share/nbgrader/exchange``; set ``COURSE_EXCHANGE`` to use another). The instructor
runs plain ``nbgrader`` commands from this repository, whose ``nbgrader_config.py`` calls
:func:`configure_exchange`; each student's Jupyter server reads the configuration that
:func:`student_config` writes (system-wide in ``/etc/jupyter/nbgrader_config.py`` on a Hub image,
or ``~/.jupyter/nbgrader_config.py``). Print it with::

    python -m autograder.grading.distribute.exchange [--root DIR]

Without that file a student's JupyterLab Assignment List looks in nbgrader's default folder, which
does not exist on most servers, and shows "Error fetching courses!" and "The exchange directory
does not exist".

Layout that nbgrader keeps under the root (see ``nbgrader/exchange/default``)::

    <root>/tf-autodiff-workbook/outbound/<assignment>/   released notebooks (0755, files 0644)
    <root>/tf-autodiff-workbook/inbound/<student>+<assignment>+<timestamp>+<random>/
                                                         submissions (folder 2733: write-only)
    <root>/tf-autodiff-workbook/feedback/<hash>.html     released feedback (folder 0711)
"""
from __future__ import annotations

import argparse
import os

from autograder.grading.defaults import CLASS_ENV, COURSE_ID, DEFAULT_EXCHANGE_ROOT, EXCHANGE_ENV, GRADEBOOK_FILE
from autograder.grading.nbgrader_api import sqlite_url


def exchange_root() -> str:
    """The exchange root: ``$COURSE_EXCHANGE``, else nbgrader's default folder."""
    return os.environ.get(EXCHANGE_ENV) or DEFAULT_EXCHANGE_ROOT


def configure_exchange(c, root: str | None = None, class_dir: str | None = None) -> None:
    """Set the exchange of the instructor's configuration ``c`` (a traitlets ``Config``).

    ``root`` defaults to :func:`exchange_root`. A student's fetched assignment goes to
    ``./tf-autodiff-workbook/<assignment>/`` (``path_includes_course``), as in students' config.
    ``class_dir`` (default ``$COURSE_CLASS_DIR``; unset: nbgrader's folders in this repository)
    holds the class's files: ``submitted/`` (what ``collect`` writes) and ``grading/`` (the output
    folder of ``course grade``: the gradebook ``collect`` reads due dates from, and ``feedback/``,
    which ``release_feedback`` publishes).
    """

    c.CourseDirectory.course_id = COURSE_ID
    c.Exchange.root = root or exchange_root()
    c.Exchange.path_includes_course = True
    class_dir = class_dir or os.environ.get(CLASS_ENV)
    if class_dir:
        class_dir = os.path.abspath(os.path.expanduser(class_dir))
        c.CourseDirectory.submitted_directory = os.path.join(class_dir, "submitted")
        c.CourseDirectory.feedback_directory = os.path.join(class_dir, "grading", "feedback")
        os.makedirs(os.path.join(class_dir, "grading"), exist_ok=True)
        c.CourseDirectory.db_url = sqlite_url(os.path.join(class_dir, "grading", GRADEBOOK_FILE))


def student_config(root: str | None = None) -> str:
    """The text of a student's ``nbgrader_config.py`` for this course's exchange at ``root``."""
    root = root or exchange_root()
    return (f"# nbgrader configuration of the students of {COURSE_ID}: its exchange, for the\n"
            f"# Assignment List of JupyterLab and the nbgrader fetch/submit commands.\n"
            f"c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            f"c.Exchange.root = {root!r}\n"
            f"c.Exchange.path_includes_course = True\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.grading.distribute.exchange",
        description="Print the students' nbgrader_config.py for this course's exchange.")
    parser.add_argument("--root", default=None,
                        help=f"exchange root (default: ${EXCHANGE_ENV}, else {DEFAULT_EXCHANGE_ROOT})")
    print(student_config(parser.parse_args(argv).root), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
