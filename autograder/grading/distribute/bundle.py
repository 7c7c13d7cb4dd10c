"""The student bundle: one zip archive holding what a student needs and nothing an instructor keeps.

For courses without JupyterHub (an LMS upload, a shared drive, a git classroom), ``course bundle``
writes ``<out>/tf-autodiff-workbook-student-<version>.zip``. Its one top folder,
``tf-autodiff-workbook/``, holds:

- ``notebooks/<assignment>/<assignment>.ipynb``: the student release, as committed (no solutions,
  no hidden tests, no outputs: ``tests/test_release.py``);
- ``utils/``: what the notebooks import for teaching;
- ``autograder/checks/`` (with ``judge/``, the checks' grader halves): the visible checks the
  notebooks call, under a student ``__init__.py`` for ``autograder`` (the grading pipeline,
  ``autograder/grading``, is not there);
- ``pyproject.toml``: the package ``tf-autodiff-workbook-student`` (``utils`` and
  ``autograder.checks``) with only what the notebooks need at run time (no nbgrader), and an
  extra ``gpu`` for TensorFlow's CUDA libraries;
- ``environment.yml``: the same for conda; ``README.md``: the student's instructions;
- ``jupyter-config/student.py``: the students' JupyterLab set-up, as in this repository
  (nbgrader's Validate button, none of its instructor tools), and ``nbgrader_config.py``, what
  Validate runs with (the time limits and kernel :func:`~.configure.configure` sets).

Nothing else: ``solutions/``, ``tests/``, the grading pipeline and this repository's own files
never enter it. The archive is deterministic (sorted entries, fixed dates and modes): building
twice from the same files gives the same bytes.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import tomllib

from autograder.grading.course import REPO_ROOT, assignments
from autograder.grading.defaults import (
    CELL_TIMEOUT_S,
    COURSE_ID,
    KERNEL_NAME,
    KERNEL_STARTUP_TIMEOUT_S,
    RELEASE_DIR,
)

TOP = COURSE_ID

DIST_NAME = "tf-autodiff-workbook-student"

# What the notebooks, utils and checks import at run time (pip names), with the versions that
# pyproject.toml pins for the whole course; ipykernel and jupyterlab to open the notebooks, nbgrader
# for its Validate button (its JupyterLab extension and the validate_assignment server extension).
STUDENT_REQUIREMENTS = ("tensorflow", "numpy", "matplotlib", "scikit-learn", "tqdm", "ipykernel",
                        "jupyterlab", "nbgrader")

# The students' JupyterLab set-up, in the bundle as in this repository.
JUPYTER_CONFIG = "jupyter-config/student.py"

# What Validate runs with: nbgrader reads nbgrader_config.py in the folder JupyterLab starts in.
NBGRADER_CONFIG = """\
# nbgrader's settings for the Validate button: nbgrader reads this file from the folder JupyterLab
# starts in, so start it here (see README.md). The time limits and kernel of the course's grading.
c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.Execute.timeout = {timeout}
c.Execute.startup_timeout = {startup}
c.Execute.kernel_name = {kernel!r}
"""

# Folders copied as they are (their *.py files only), relative to the course root.
CODE_FOLDERS = ("utils", "autograder/checks", "autograder/checks/judge")

_DATE = (2024, 1, 1, 0, 0, 0)  # every entry's date, so that the archive's bytes are reproducible

AUTOGRADER_INIT = '''"""The checks that the workbook's notebooks call:
``from autograder.checks import tapes as checks``.

Each ``check_<exercise>(fn)`` runs your function on a few inputs, prints a line starting with a
check mark when every case passes, and otherwise raises ``CheckFailed`` with what was expected,
what came back and the likely cause. Your instructor grades with other inputs.
"""
'''

# What the check cell under 01's first exercise prints for a right answer and for mistake M01 (a
# tf.constant the tape does not watch), as the README shows it; tests/test_bundle.py runs the check.
README_PASSED = "\u2714 square_grad: 3 cases passed"
README_FAILED = """\
[M01: unwatched tf.constant] square_grad (input 3.0) returned None instead of
a number. A tape only follows tf.Variables by itself; a tf.constant has to be
watched.
Fix: a tape follows tf.Variables by itself, constants only when told to: ask
     the tape to watch x (read GradientTape.watch) inside its block, before
     computing the square there."""

README = """\
# TensorFlow 2 autodiff and graph mode: the student workbook

Jupyter assignments on `tf.GradientTape`, persistent and nested tapes, `tf.function` and
AutoGraph, control flow in graph mode, deep learning software, a custom training loop,
graph-mode pitfalls and debugging, and training for real (distribution, checkpoints, export,
gradient clipping, mixed precision). Each exercise has a check you run yourself; your instructor
grades your notebooks with other inputs.

| folder | what |
|---|---|
| `notebooks/` | the assignments, one folder each: {assignments} |
| `utils/` | what the notebooks import: set-up, plots, timing, devices, data |
| `autograder/checks/` | the checks that the notebooks' check cells call |

## Install (once)

You need Python 3.11-3.13 on Linux, macOS or Windows (64-bit). From this folder:

```bash
python3 -m venv .venv
.venv/bin/pip install .                 # Windows: .venv\\Scripts\\pip install .
```

**NVIDIA GPU (Linux or WSL2 only).** Install with TensorFlow's CUDA libraries instead:
`.venv/bin/pip install ".[gpu]"`. Nothing in the workbook needs a GPU: on a laptop CPU every
notebook runs in minutes, and the GPU parts say so and skip.

**Conda.** `conda env create -f environment.yml && conda activate {env}` (then, for a GPU,
`pip install ".[gpu]"`).

The notebooks import `utils` and `autograder.checks` from this install, not from this folder:
when your instructor sends a new version, run the install command again in the new folder.

## Work

From this folder (its `nbgrader_config.py` is what the Validate button runs with):

```bash
.venv/bin/jupyter lab --config=jupyter-config/student.py notebooks/
# conda: jupyter lab --config=jupyter-config/student.py notebooks/
```

Open an assignment and read it top to bottom, running each cell. Fill in each cell marked
`# YOUR CODE HERE` (delete the `raise NotImplementedError()` line), then run the check cell right
below it. A right answer prints one line, the exercise and how many inputs it tried:

```
{passed}
```

A wrong one prints the mistake it recognised, what came back, and the fix:

```
{failed}
```

**Validate** (in the notebook's toolbar) saves the notebook, runs it top to bottom and lists
the checks that fail. Do not edit or delete the other cells: the locked cells are put back as
they were before grading.

On a slow machine, `WORKBOOK_FAST=1 .venv/bin/jupyter lab --config=jupyter-config/student.py
notebooks/` shrinks the heavy cells (fewer repeats and epochs); the checks do not change.

## Submit

Save the notebook and hand in the `.ipynb` file, under its name
(`notebooks/01_gradient_tape/01_gradient_tape.ipynb` for the first assignment), the way your
instructor asked. The graded tests call the same checks with other inputs: an answer that passes
the visible check because it returns the expected numbers for those inputs only will not pass.
"""

ENVIRONMENT_YML = """\
# Conda environment of the workbook: conda-forge Python, then this folder's package from PyPI
# (TensorFlow's own wheels; what it needs is in pyproject.toml). From this folder:
#   conda env create -f environment.yml && conda activate {env}
# NVIDIA GPU (Linux or WSL2): then pip install ".[gpu]"
name: {env}
channels:
  - conda-forge
dependencies:
  - python=3.11
  - pip
  - pip:
      - .
"""

PYPROJECT = """\
# The student package of the workbook: `pip install .` (CPU) or `pip install ".[gpu]"` (NVIDIA GPU).
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
description = "TensorFlow 2 autodiff and graph mode: the student workbook (notebooks, utils, visible checks)"
readme = "README.md"
requires-python = "{python}"
dependencies = [
{dependencies}
]

[project.optional-dependencies]
gpu = ["{gpu}"]

[tool.setuptools.packages.find]
include = ["autograder*", "utils*"]
"""


def _requirement_name(spec: str) -> str:
    return spec.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip().lower()


def student_requirements(root: Path = REPO_ROOT) -> list[str]:
    """The pyproject.toml dependencies of :data:`STUDENT_REQUIREMENTS`, with the course's pins."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    by_name = {_requirement_name(spec): spec for spec in project["dependencies"]}
    missing = [name for name in STUDENT_REQUIREMENTS if name not in by_name]
    if missing:
        raise ValueError(f"pyproject.toml does not list {', '.join(missing)}")
    return [by_name[name] for name in STUDENT_REQUIREMENTS]


def bundle_files(root: Path = REPO_ROOT) -> dict[str, bytes]:
    """Archive path (below :data:`TOP`) -> contents of every file of the student bundle.

    Raises:
        ValueError: an assignment of ``solutions/`` has no release in ``notebooks/`` (run
            ``course release``), or pyproject.toml lacks a student requirement.
    """
    root = Path(root)
    ids = assignments(root)
    files: dict[str, bytes] = {}
    for assignment_id in ids:
        released = sorted((root / RELEASE_DIR / assignment_id).glob("*.ipynb"))
        if not released:
            raise ValueError(f"{assignment_id} has no release in {root / 'notebooks'}: "
                             f"run `course release {assignment_id}` first")
        for path in released:
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    for folder in CODE_FOLDERS:
        for path in sorted((root / folder).glob("*.py")):
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    files["autograder/__init__.py"] = AUTOGRADER_INIT.encode()

    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    requirements = student_requirements(root)
    tensorflow = next(spec for spec in requirements if _requirement_name(spec) == "tensorflow")
    files["pyproject.toml"] = PYPROJECT.format(
        name=DIST_NAME, version=project["version"], python=project["requires-python"],
        dependencies="\n".join(f'    "{spec}",' for spec in requirements),
        gpu=tensorflow.replace("tensorflow", "tensorflow[and-cuda]", 1)).encode()
    files["environment.yml"] = ENVIRONMENT_YML.format(env=TOP).encode()
    files["README.md"] = README.format(
        env=TOP, assignments=", ".join(f"`{a}`" for a in ids), passed=README_PASSED,
        failed=README_FAILED).encode()
    files[JUPYTER_CONFIG] = (root / JUPYTER_CONFIG).read_bytes()
    files["nbgrader_config.py"] = NBGRADER_CONFIG.format(
        timeout=CELL_TIMEOUT_S, startup=KERNEL_STARTUP_TIMEOUT_S, kernel=KERNEL_NAME).encode()
    return files


def bundle_path(out: Path, root: Path = REPO_ROOT) -> Path:
    """Where :func:`build_bundle` writes the archive in ``out``."""
    version = tomllib.loads((Path(root) / "pyproject.toml").read_text())["project"]["version"]
    return Path(out) / f"{DIST_NAME}-{version}.zip"


def build_bundle(out: Path, root: Path = REPO_ROOT) -> Path:
    """Write the student bundle (see the module's docstring) into folder ``out``; return its path.

    An archive already at that path is replaced.
    """
    path = bundle_path(out, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in sorted(bundle_files(root).items()):
            info = zipfile.ZipInfo(f"{TOP}/{name}", date_time=_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    tmp.replace(path)
    return path
