# nbgrader configuration of the course. Plain `nbgrader ...` commands run from this folder and the
# `course` command use the same settings: see autograder/grading/configure.py.
# A Jupyter server started here loads this file too (nbgrader's server extension): configure()
# changes no environment variable, so students' kernels never run in grading mode.
from traitlets.config import Application

from autograder.grading.distribute.exchange import configure_exchange
from autograder.grading.configure import configure
from autograder.grading.nbgrader_api import put_scripts_on_path

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
configure(c)
configure_exchange(c)  # the exchange: $COURSE_EXCHANGE, else nbgrader's default folder
if Application.initialized() and type(Application.instance()).__module__.startswith("nbgrader."):
    put_scripts_on_path()  # an `nbgrader` command (not a Jupyter server): it runs alembic
