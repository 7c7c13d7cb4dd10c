# nbgrader configuration of the course. Plain `nbgrader ...` commands run from this folder and the
# `course` command use the same settings: see autograder/grading/settings.py.
from autograder.grading.settings import configure

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
configure(c)
