"""The student bundle holds the release and what it imports, nothing that gives an answer away, and
installs and runs from the archive alone.

The install test makes a fresh virtual environment from the base interpreter, with no access to this
repository: the archive is extracted into a temporary folder and installed with
``pip install --no-index --no-build-isolation``. So that TensorFlow (hundreds of MB) is not
downloaded again, the fresh environment sees the project venv's site-packages through a ``.pth``
file holding only that path. ``python -m venv --system-site-packages`` cannot do this: a venv made
from inside a venv takes the *base* interpreter's site-packages, not the project venv's. A path line
in a ``.pth`` does not run that folder's own ``.pth`` files, so this repository's editable install
(a meta-path finder started from a ``.pth``) is not active: ``utils`` and ``autograder`` can come
only from the bundle, which the kernel checks.
"""
import ast
import io
import json
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
import tokenize
import zipfile
from pathlib import Path

import nbformat
import nbgrader
import pytest
import tomllib
from traitlets.config import Config, PyFileConfigLoader

from autograder.grading.configure import configure
from autograder.grading.distribute.bundle import TOP, build_bundle
from autograder.grading.course import assignments
from autograder.grading.demo.samples import solution_answers

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = assignments(ROOT)

# Solution lines that the bundle's code holds on purpose, each reviewed: an exercise's answer is
# more than one of them, and none is in a string (hint messages quote fixes by design, see
# CONTRIBUTING's Checks). Anything else found in the bundle's code fails the test.
REVIEWED_SHARED_LINES = {
    "for _ in range(steps):": "a loop header (the NumPy references of checks.tapes/software)",
    "return w, b, losses": "checks.tapes._numpy_fit_line returns the exercise's names",
    # utils.data.make_dataset, which checks.training.check_fit uses, ends like 06's make_pipeline.
    "return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)": "utils.data.make_dataset",
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return build_bundle(tmp_path_factory.mktemp("dist"), root=ROOT)


def _members(bundle: Path) -> dict[str, str]:
    with zipfile.ZipFile(bundle) as archive:
        return {info.filename: archive.read(info).decode() for info in archive.infolist()}


def _marked_lines(path: Path, begin: str, end: str) -> list[list[str]]:
    """The stripped, non-blank, non-comment lines of every ``begin``/``end`` region of a notebook."""
    regions = []
    for cell in nbformat.read(path, as_version=4).cells:
        inside = False
        for line in cell.source.splitlines():
            if begin in line:
                inside, region = True, []
            elif end in line and inside:
                inside = False
                regions.append(region)
            elif inside and line.strip() and not line.strip().startswith("#"):
                region.append(line.strip())
    return regions


def _code_lines(name: str, text: str) -> list[str]:
    """The stripped, non-blank lines of a bundle file as code: in Python files, strings and
    comments blanked (docstrings and messages are prose); in notebooks, every cell's source but
    comment lines."""
    if name.endswith(".ipynb"):
        return [line.strip() for cell in nbformat.reads(text, as_version=4).cells
                for line in cell.source.splitlines()
                if line.strip() and not line.strip().startswith("#")]
    if not name.endswith(".py"):
        return [line.strip() for line in text.splitlines() if line.strip()]
    rows = [list(line) for line in text.splitlines()]
    prose = {tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", -1)}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in prose:
            (r0, c0), (r1, c1) = token.start, token.end
            for r in range(r0, r1 + 1):
                row = rows[r - 1]
                row[c0 if r == r0 else 0:c1 if r == r1 else len(row)] = " " * (
                    (c1 if r == r1 else len(row)) - (c0 if r == r0 else 0))
    return [line for line in ("".join(row).strip() for row in rows) if line]


def test_bundle_holds_exactly_the_release_utils_visible_checks_and_install_files(bundle):
    names = set(_members(bundle))
    expected = {f"{TOP}/{p.relative_to(ROOT).as_posix()}"
                for p in [*(ROOT / "notebooks").glob("*/*.ipynb"), *(ROOT / "utils").glob("*.py"),
                          *(ROOT / "autograder" / "checks").glob("*.py"),
                          *(ROOT / "autograder" / "checks" / "judge").glob("*.py")]}
    expected |= {f"{TOP}/{name}" for name in ("README.md", "pyproject.toml", "environment.yml",
                                               "autograder/__init__.py", "nbgrader_config.py",
                                               "jupyter-config/student.py")}
    assert names == expected
    assert not [n for n in names if "/grading/" in n or "/solutions/" in n or "/tests/" in n]
    for name, text in _members(bundle).items():
        if name.endswith(".ipynb") or "/utils/" in name or "/checks/" in name or \
                "/jupyter-config/" in name:
            assert text == (ROOT / name.removeprefix(f"{TOP}/")).read_text(), name


def _config(members: dict[str, str], name: str, tmp_path: Path):
    """The bundle's config file ``name`` as Jupyter and nbgrader load it (traitlets)."""
    path = tmp_path / Path(name).name
    path.write_text(members[f"{TOP}/{name}"])
    return PyFileConfigLoader(path.name, path=str(tmp_path)).load_config()


def test_bundle_has_nbgraders_validate_button_and_what_it_runs_with(bundle, tmp_path, monkeypatch):
    # Loaded as a student's server loads it, from a folder with no solutions/ above it (the
    # set-up refuses under this checkout: tests/test_student_setup.py).
    monkeypatch.chdir(tmp_path)
    members = _members(bundle)
    requirements = tomllib.loads(members[f"{TOP}/pyproject.toml"])["project"]["dependencies"]
    assert [spec for spec in requirements if spec.startswith("nbgrader")]  # its lab extension
    readme = members[f"{TOP}/README.md"]
    assert "jupyter lab --config=jupyter-config/student.py notebooks/" in readme
    # The students' set-up: the validate_assignment server extension on, the formgrader's off,
    # and in the page the Validate plugin kept, the instructor's plugins left out.
    lab = _config(members, "jupyter-config/student.py", tmp_path)
    extensions = lab.ServerApp.jpserver_extensions
    assert extensions["nbgrader.server_extensions.validate_assignment"] is True
    assert extensions["nbgrader.server_extensions.formgrader"] is False
    hidden = lab.ServerApp.tornado_settings["page_config_hook"](None, {})["disabledExtensions"]
    assert "@jupyter/nbgrader:formgrader" in hidden
    assert "@jupyter/nbgrader:validate-assignment" not in hidden
    # No news pop-up over a student's notebook, no update check (LabApp's own switches).
    assert lab.LabApp.news_url is None
    assert lab.LabApp.check_for_updates_class == "jupyterlab.NeverCheckForUpdate"
    # The plugin is nbgrader 0.9's JupyterLab extension, shipped in its package.
    static = Path(nbgrader.__file__).parent / "labextension" / "static"
    assert any('id:"@jupyter/nbgrader:validate-assignment"' in p.read_text()
               for p in static.glob("*.js"))
    # Validate runs with the limits and kernel of the course's grading.
    validate, course = _config(members, "nbgrader_config.py", tmp_path), Config()
    configure(course)
    for name in ("timeout", "startup_timeout", "kernel_name"):
        assert validate.Execute[name] == course.Execute[name], name


def test_bundle_readme_shows_what_the_checks_print(bundle, capsys):
    """The README's two examples are what 01's first check cell prints, run here."""
    import tensorflow as tf

    from autograder.checks import tapes
    from autograder.checks.compare import CheckFailed

    nb = nbformat.read(ROOT / "notebooks" / "01_gradient_tape" / "01_gradient_tape.ipynb", 4)
    [source] = [c.source for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "square_grad_check"]
    assert "checks.check_square_grad(square_grad)" in source.splitlines()

    def square_grad(x):
        x = tf.constant(x, dtype=tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(y, x)

    def unwatched(x):  # mistake M01
        x = tf.constant(x, dtype=tf.float32)
        with tf.GradientTape() as tape:
            y = x * x
        return tape.gradient(y, x)

    capsys.readouterr()
    tapes.check_square_grad(square_grad)
    passed = capsys.readouterr().out.strip()
    with pytest.raises(CheckFailed) as failed:
        tapes.check_square_grad(unwatched)
    readme = _members(bundle)[f"{TOP}/README.md"]
    assert f"```\n{passed}\n```" in readme, passed
    assert f"```\n{failed.value}\n```" in readme, str(failed.value)
    assert "[M01:" in str(failed.value)


def test_bundle_is_reproducible(bundle, tmp_path):
    assert build_bundle(tmp_path, root=ROOT).read_bytes() == bundle.read_bytes()


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_bundle_holds_no_hidden_test_line_and_no_solution_code(bundle, assignment_id):
    solution = ROOT / "solutions" / assignment_id / f"{assignment_id}.ipynb"
    members = _members(bundle)
    everything = "\n".join(members.values()) + "\n" + "\n".join(
        cell.source for name, text in members.items() if name.endswith(".ipynb")
        for cell in nbformat.reads(text, as_version=4).cells)
    assert "BEGIN SOLUTION" not in everything and "BEGIN HIDDEN TESTS" not in everything

    hidden = [line for region in _marked_lines(solution, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
              for line in region if len(line) > 8]  # not a lone "])"
    assert hidden, "every assignment has hidden tests"
    assert [line for line in hidden if line in everything] == []

    # Solution lines that the release teaches in its prose or scaffolding are not answers.
    scaffold = {line.strip() for path in (ROOT / "notebooks").glob("*/*.ipynb")
                for cell in nbformat.read(path, as_version=4).cells
                if not cell.metadata.get("nbgrader", {}).get("solution")
                for line in cell.source.splitlines()}
    code = {name: _code_lines(name, text) for name, text in members.items()}
    regions = _marked_lines(solution, "BEGIN SOLUTION", "END SOLUTION")
    assert regions
    leaked = []
    for region in regions:
        for name, lines in code.items():
            found = set(lines)
            leaked += [(name, line) for line in region
                       if len(line) > 12 and line in found and line not in scaffold
                       and line not in REVIEWED_SHARED_LINES]
            # A whole answer, however short its lines, is nowhere either.
            leaked += [(name, "\n".join(region)) for i in range(len(lines))
                       if lines[i:i + len(region)] == region
                       and not set(region) <= scaffold]
    assert leaked == []


def test_bundle_imports_only_the_standard_library_and_its_requirements(bundle):
    # threadpoolctl comes with scikit-learn (notebook 05 says so); IPython with ipykernel; absl
    # (whose log utils quiets before TensorFlow is imported) with tensorflow.
    allowed = set(sys.stdlib_module_names) | {"tensorflow", "numpy", "matplotlib", "sklearn",
                                              "threadpoolctl", "tqdm", "IPython", "utils",
                                              "autograder", "absl"}
    imported = set()
    for name, text in _members(bundle).items():
        sources = ([c.source for c in nbformat.reads(text, as_version=4).cells
                    if c.cell_type == "code"] if name.endswith(".ipynb")
                   else [text] if name.endswith(".py") else [])
        for source in sources:
            source = "\n".join(line for line in source.splitlines()
                               if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    imported.add(node.module.split(".")[0])
    assert imported - allowed == set()
    assert "autograder.grading" not in "\n".join(_members(bundle).values())


def test_bundle_installs_in_a_fresh_venv_and_runs_a_notebook_check(bundle, tmp_path):
    """Extract, ``pip install .`` (offline), then run 01's set-up, an answer and its visible check
    in a real kernel of the fresh environment, from the extracted notebook's folder."""
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(tmp_path / "student")
    folder = tmp_path / "student" / TOP
    venv = tmp_path / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "project-venv-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COVERAGE_PROCESS_START")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-index", "--no-build-isolation", "."],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr

    notebook = folder / "notebooks" / "01_gradient_tape" / "01_gradient_tape.ipynb"
    answer = solution_answers(ROOT, "01_gradient_tape")["square_grad"]
    script = textwrap.dedent(f"""
        import json, sys, nbformat
        from nbclient import NotebookClient
        nb = nbformat.read({str(notebook)!r}, as_version=4)
        by_id = {{c.metadata.get("nbgrader", {{}}).get("grade_id"): c for c in nb.cells}}
        answer = by_id["square_grad"]
        answer.source = {answer!r}
        probe = nbformat.v4.new_code_cell(
            "import sys, autograder, utils, importlib.util\\n"
            "print(sys.prefix, autograder.__file__, utils.__file__,"
            " importlib.util.find_spec('autograder.grading'))")
        nb.cells = [by_id["setup"], answer, by_id["square_grad_check"], probe]
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={{"metadata": {{"path": {str(notebook.parent)!r}}}}}).execute()
        print(json.dumps([[o.get("text", o.get("evalue", "")) for o in c.outputs] for c in nb.cells]))
    """)
    run = subprocess.run([str(python), "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    setup, _, check, probe = json.loads(run.stdout.strip().splitlines()[-1])
    assert re.search(r"✔ .*square_grad.* passed", "".join(check)), check
    prefix, checks_file, utils_file, grading = "".join(probe).split()
    assert Path(prefix) == venv
    assert Path(checks_file).is_relative_to(site) and Path(utils_file).is_relative_to(site)
    assert grading == "None"


def test_course_bundle_command_writes_the_archive(tmp_path, capsys):
    from autograder.cli import main

    assert main(["bundle", "--out", str(tmp_path)]) == 0
    [archive] = tmp_path.glob("*.zip")
    assert f"wrote {archive}" in capsys.readouterr().out
