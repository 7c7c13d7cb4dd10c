# JupyterLab for students: nbgrader's instructor tools hidden (Formgrader, Create Assignment);
# Validate stays. Assignment List and Courses stay only where nbgrader's exchange exists (a shared
# server or JupyterHub; see autograder/grading/distribute/exchange.py): on a laptop they only show errors.
#   .venv/bin/jupyter lab --config=jupyter-config/student.py notebooks/
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by Jupyter when it loads this file)

# Never a student's server where the hidden tests can be read: in a checkout that holds solutions/
# (the instructor's), a Terminal from the Launcher or a notebook cell could open every hidden test.
# Students get the bundle (`course bundle`), which has none. An instructor trying the notebooks as
# a student would says so with WORKBOOK_INSTRUCTOR_PREVIEW=1.
PREVIEW = os.environ.get("WORKBOOK_INSTRUCTOR_PREVIEW") == "1"
_here = Path(__file__).resolve().parents[1]
_reachable = [p / "solutions" for p in (_here, Path.cwd(), *Path.cwd().parents)
              if (p / "solutions").is_dir() and any((p / "solutions").glob("*/*.ipynb"))]
if _reachable and not PREVIEW:
    sys.exit(f"This is the students' set-up, and {_reachable[0]} (the solutions, with every hidden "
             "test) can be read from here. Students: use the student bundle ('course bundle' makes "
             "it; its README says how to start). Instructors trying the notebooks as a student: "
             "WORKBOOK_INSTRUCTOR_PREVIEW=1 jupyter lab --config=jupyter-config/student.py notebooks/")

exchange = os.path.isdir(os.environ.get("COURSE_EXCHANGE", "/usr/local/share/nbgrader/exchange"))

# Server side: the extensions' handlers are not loaded at all.
c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.assignment_list": exchange,
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.validate_assignment": True,
}

# Browser side: the same plugins left out of the page, as `jupyter labextension disable` would,
# but for this server only (the environment stays as nbgrader installed it, for instructors).
HIDDEN_PLUGINS = {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                  "@jupyter/nbgrader:course-list",
                  # JupyterLab's "notified about official Jupyter news?" pop-up: a classroom may
                  # be offline, and the question is not the student's to answer.
                  "@jupyterlab/apputils-extension:announcements"}
if not exchange:  # the Nbgrader menu would hold only these
    HIDDEN_PLUGINS |= {"@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:menu"}


def hide_instructor_plugins(handler, page_config):
    """JupyterLab's page-config hook: add the plugins above to ``disabledExtensions``."""
    disabled = set(page_config.get("disabledExtensions") or [])
    page_config["disabledExtensions"] = sorted(disabled | HIDDEN_PLUGINS)
    return page_config


c.ServerApp.tornado_settings = {"page_config_hook": hide_instructor_plugins}

# No news feed fetched and no update check (the pop-up's plugin is left out above).
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
