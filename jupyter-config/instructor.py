# JupyterLab for instructors: every nbgrader tool (Formgrader, Create Assignment, Validate,
# Assignment List and Courses), whatever the environment's defaults. `course formgrader DIR` starts
# it in a graded class's output folder; from the course folder:
#   .venv/bin/jupyter lab --config=jupyter-config/instructor.py
c = get_config()  # noqa: F821 (provided by Jupyter when it loads this file)

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": True,
    "nbgrader.server_extensions.validate_assignment": True,
    "nbgrader.server_extensions.assignment_list": True,
    "nbgrader.server_extensions.course_list": True,
}


def instructor_plugins(handler, page_config):
    """JupyterLab's page-config hook: nbgrader's plugins on, even where the environment
    disabled them (``jupyter labextension disable``)."""
    disabled = page_config.get("disabledExtensions") or []
    page_config["disabledExtensions"] = [name for name in disabled
                                         if not name.startswith("@jupyter/nbgrader")]
    return page_config


c.ServerApp.tornado_settings = {"page_config_hook": instructor_plugins}
