"""JupyterLab as students and instructors use it, in a real browser (Playwright driving Debian's
``chromium``): the README's commands, clicked through. Each step leaves a screenshot in the
test's temporary folder (``screenshots/NN_step.png``).

Generous timeouts throughout: the first cell imports TensorFlow, which takes 5-30 s on a loaded
2-core machine.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

from autograder.grading.course import REPO_ROOT
from autograder.grading.distribute.formgrader import STUDENT_CONFIG
from autograder.grading.defaults import KERNEL_ENV
from tests.conftest import grading_workers, shared_scheduler

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on this machine (Debian: apt-get install chromium; "
                             ".ci/run installs it)")

ASSIGNMENT = "01_gradient_tape"
RELEASED = REPO_ROOT / "notebooks" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
SERVER_START_S = 180  # JupyterLab's start on a loaded machine
CELL_S = 240_000  # ms: a cell may import TensorFlow or trace a function on a slow CPU
KEY_RETRY_MS = 30_000  # ms: a run that has not even queued by then lost its key press
TOKEN = "browser-test-token"

RIGHT_ANSWER = '''def square_grad(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)'''
# The course's mistake M01: a constant the tape does not watch.
WRONG_ANSWER = '''def square_grad(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        y = x * x
    return tape.gradient(y, x)'''
MISTAKE = "unwatched"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def student_env(tmp: Path) -> dict[str, str]:
    """A student's shell: no grading mode (pytest's conftest sets it for nbval), own Jupyter
    config and runtime folders (nothing of this machine's user settings)."""
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_ENV}
    env.update(JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config-dir"),
               JUPYTER_RUNTIME_DIR=str(tmp / "jupyter-runtime"),
               # run from this checkout, which holds solutions/: the students' set-up refuses
               # there unless told it is an instructor's preview (tests/test_student_setup.py)
               WORKBOOK_INSTRUCTOR_PREVIEW="1")
    return env


@contextmanager
def jupyter_lab(argv: list[str], cwd: Path, env: dict[str, str], log: Path, port: int):
    """Run a JupyterLab command until the block ends; yields its base URL."""
    args = [*argv, "--no-browser", f"--port={port}", "--ServerApp.port_retries=0",
            "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}"]
    if os.geteuid() == 0 and "--allow-root" not in argv:
        args.append("--allow-root")
    with open(log, "w") as out:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=10)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")
                time.sleep(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield chromium
        finally:
            chromium.close()


class Shots:
    """Numbered screenshots of one test, under its temporary folder."""

    def __init__(self, page, folder: Path):
        self.page, self.folder, self.n = page, folder, 0
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, name: str) -> Path:
        self.n += 1
        path = self.folder / f"{self.n:02d}_{name}.png"
        self.page.screenshot(path=str(path))
        return path


def cell_index(path: Path, grade_id: str) -> int:
    nb = nbformat.read(path, as_version=4)
    return next(i for i, c in enumerate(nb.cells)
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def wait_idle(page) -> None:
    """Wait until the notebook's kernel is idle (JupyterLab's execution indicator)."""
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=CELL_S, state="attached")


def run_cell(page, index: int):
    """Select cell ``index``, run it (Shift+Enter), wait for the kernel; returns the cell. A cell
    run before is done when its prompt shows a number other than the one it had: until the
    kernel starts on it, the old number and an idle kernel look like a finished run."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.text_content()  # [n] where the cell ran before: the run must give a new number
    # A key press can be lost while a freshly opened notebook is still settling (seen on a
    # loaded machine): until the prompt leaves its old text (it shows [*] as soon as the
    # request is queued, even before the kernel is up), select the cell and press again.
    for _ in range(CELL_S // KEY_RETRY_MS):
        prompt.click()
        page.keyboard.press("Shift+Enter")
        try:
            page.wait_for_function("([el, before]) => el.textContent !== before",
                                   arg=[prompt.element_handle(), before],
                                   timeout=KEY_RETRY_MS)
            break
        except playwright_api.TimeoutError:
            continue
    page.wait_for_function(  # the prompt shows [*] while it runs, then a new number
        "([el, before]) => /\\[\\d+\\]/.test(el.textContent) && el.textContent !== before",
        arg=[prompt.element_handle(), before], timeout=CELL_S)
    wait_idle(page)
    return cell


def set_source(page, index: int, source: str) -> None:
    """Replace cell ``index``'s source as a student would (select all, then paste-like input,
    which keeps the editor from auto-indenting the typed lines)."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(source)
    page.keyboard.press("Escape")


def output_text(cell) -> str:
    return cell.locator(".jp-OutputArea").inner_text()


def open_notebook(page, url: str, path: str) -> None:
    page.goto(f"{url}/lab/tree/{path}?token={TOKEN}&reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=CELL_S)
    wait_idle(page)


def test_student_works_through_a_check_in_jupyterlab(browser, tmp_path):
    # The README's student command, from the project folder (where nbgrader_config.py is), on
    # a copy of one released notebook so that nothing of notebooks/ is written to.
    course = tmp_path / "student"
    shutil.copytree(RELEASED.parent, course / ASSIGNMENT, copy_function=shutil.copyfile)
    port = free_port()
    argv = [str(Path(sys.executable).parent / "jupyter"), "lab", f"--config={STUDENT_CONFIG}",
            f"--ServerApp.root_dir={course}"]
    with jupyter_lab(argv, REPO_ROOT, student_env(tmp_path), tmp_path / "lab.log", port) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        shot = Shots(page, tmp_path / "screenshots")
        open_notebook(page, url, f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
        shot("student_opens_notebook")

        # No instructor tools: no Nbgrader menu (Formgrader, Create Assignment, Assignment
        # List), and the formgrader's pages are not served.
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        if "Nbgrader" in menus:  # Assignment List, where an exchange exists
            page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
            items = page.locator(".lm-Menu-itemLabel").all_inner_texts()
            assert "Formgrader" not in items, items
            page.keyboard.press("Escape")
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{url}/formgrader?token={TOKEN}", timeout=30)
        assert page.get_by_text("Create Assignment").count() == 0

        # The set-up cell ends with one calm line: TensorFlow's version and its device.
        setup = run_cell(page, cell_index(RELEASED, "setup"))
        shot("setup_ran")
        text = output_text(setup)
        assert "TensorFlow" in text and ("CPU" in text or "GPU" in text), text
        assert setup.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0

        exercise, check = cell_index(RELEASED, "square_grad"), cell_index(RELEASED, "square_grad_check")
        # The check run before its answer: one line and what to do, no traceback.
        early = run_cell(page, check).locator("[data-mime-type='application/vnd.jupyter.stderr']")
        shot("check_before_its_answer")
        assert "run the cell that defines it first" in early.inner_text(), early.inner_text()
        assert "Traceback" not in early.inner_text() and "---->" not in early.inner_text()
        set_source(page, exercise, RIGHT_ANSWER)
        run_cell(page, exercise)
        passed = run_cell(page, check)
        shot("right_answer_check_passes")
        assert re.match(r"✔ square_grad: \d+ cases passed", output_text(passed)), output_text(passed)

        set_source(page, exercise, WRONG_ANSWER)
        run_cell(page, exercise)
        failed = run_cell(page, check)
        failed.scroll_into_view_if_needed()
        shot("wrong_answer_names_the_mistake")
        error = failed.locator("[data-mime-type='application/vnd.jupyter.stderr']")
        assert error.count() == 1
        # The exercise's name, then the named mistake: no traceback, no frame of the grader.
        lines = [line for line in error.inner_text().splitlines() if line.strip()]
        head = "\n".join(lines[:2])  # a headline naming the exercise may come first
        assert "square_grad" in head and "[M01" in head and MISTAKE in head.lower(), error.inner_text()
        assert "Traceback" not in error.inner_text() and "site-packages" not in error.inner_text()

        # Validate (saves, then runs the notebook on the server): a readable message.
        page.get_by_role("button", name="Validate").click()
        dialog = page.locator(".jp-Dialog-content")
        dialog.wait_for(timeout=CELL_S * 2)
        page.wait_for_function(
            "el => !/validating/i.test(el.textContent)",
            arg=dialog.element_handle(), timeout=CELL_S * 2)
        shot("validate_dialog")
        body = dialog.locator(".jp-Dialog-body")
        assert MISTAKE in body.inner_text().lower(), body.inner_text()
        assert body.evaluate("el => el.scrollWidth <= el.clientWidth + 2"), \
            "the Validate message runs off the dialog's right edge"
        page.keyboard.press("Escape")
        # JupyterLab asked nothing of the student meanwhile (its news question is off).
        assert page.get_by_text("official Jupyter news").count() == 0

        # A kernel started now (after Validate loaded the course's nbgrader configuration in
        # the server) runs as any student's kernel: not in grading mode.
        probe = nbformat.v4.new_notebook(
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                     "language": "python"}},
            cells=[nbformat.v4.new_code_cell(
                "import os\nprint({k: os.environ.get(k) for k in %r})" % sorted(KERNEL_ENV))])
        nbformat.write(probe, course / "env_probe.ipynb")
        open_notebook(page, url, "env_probe.ipynb")
        env_cell = run_cell(page, 0)
        shot("student_kernel_environment")
        seen = eval(output_text(env_cell).strip())
        assert seen == {k: None for k in KERNEL_ENV}, seen


def grade_tiny_class(tmp: Path) -> Path:
    """Two submissions of one assignment (the full solution, mistake M01), graded with
    ``course grade``; returns the output folder."""
    from autograder.grading.demo.samples import build_sample_class

    answers = REPO_ROOT / "tests" / "samples" / "answers"
    mine = tmp / "answers"
    for student in ("ada_full", "p01_unwatched_constant"):
        (mine / student).mkdir(parents=True)
        shutil.copy(answers / student / f"{ASSIGNMENT}.py", mine / student)
    (tmp / "invalid").mkdir()
    submitted = build_sample_class(tmp / "submitted", answers_dir=mine, invalid_dir=tmp / "invalid")
    out = tmp / "graded"
    course = Path(sys.executable).parent / "course"
    proc = subprocess.run([str(course), "grade", str(submitted), "--out", str(out),
                           "--workers", str(grading_workers()), "--no-feedback",
                           "--scheduler", shared_scheduler()],
                          capture_output=True, text=True, timeout=1200)
    assert (out / "gradebook.db").is_file(), proc.stdout + proc.stderr
    assert f"course formgrader {out}" in proc.stdout, proc.stdout
    return out


def test_instructor_opens_the_formgrader_on_a_graded_class(browser, tmp_path):
    out = grade_tiny_class(tmp_path)
    port = free_port()
    course = Path(sys.executable).parent / "course"
    # The command `course grade` printed, with the options a headless run needs.
    argv = [str(course), "formgrader", str(out)]
    with jupyter_lab(argv, tmp_path, student_env(tmp_path), tmp_path / "lab.log", port) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        shot = Shots(page, tmp_path / "screenshots")

        # What the command opens (its default URL, where a browser it starts goes): the
        # formgrader's Manage Assignments, not JupyterLab's Launcher, with the class's two
        # submissions counted (out/submitted: the view of the class `course grade` made).
        page.goto(f"{url}/?token={TOKEN}")
        row = page.locator("tbody tr", has_text=ASSIGNMENT)
        row.wait_for(timeout=CELL_S)
        shot("formgrader_opens_on_manage_assignments")
        assert page.url.split("?")[0].endswith("/formgrader/manage_assignments"), page.url
        assert page.get_by_text("Launcher").count() == 0
        header = [h.strip() for h in page.locator("thead th").all_inner_texts()]
        column = next(i for i, h in enumerate(header) if "Submissions" in h)
        assert row.locator("td").nth(column).inner_text().strip() == "2", (header, row.inner_text())
        other = page.locator("tbody tr", has_text="02_persistent_nested_tapes")
        assert other.locator("td").nth(column).inner_text().strip() == "0", other.inner_text()
        assert sorted(p.name for p in (out / "submitted").iterdir()) == [
            ".submitted-view", "ada_full", "p01_unwatched_constant"]

        page.goto(f"{url}/formgrader/manage_students?token={TOKEN}")
        page.wait_for_selector("text=p01_unwatched_constant", timeout=CELL_S)
        shot("formgrader_students")
        text = page.locator("tbody").inner_text()
        assert "ada_full" in text and "p01_unwatched_constant" in text, text
        assert "10 / " in text and "6 / " in text, text  # out of every assignment's points

        # Manual grading of the assignment: each submission with its score (the formgrader
        # hides student names behind "Submission #N" until asked).
        page.goto(f"{url}/formgrader/gradebook/{ASSIGNMENT}/{ASSIGNMENT}?token={TOKEN}")
        page.wait_for_selector("a[href*='/formgrader/submissions/']", timeout=CELL_S)
        shot("formgrader_submissions_with_scores")
        rows = page.locator("tbody tr").all_inner_texts()
        assert len(rows) == 2 and all("Submission #" in row for row in rows), rows
        assert any("10 / 10" in row for row in rows) and any("6 / 10" in row for row in rows), rows

        # Its autograded notebook opens from the list, with the named mistake in a test cell.
        href = page.locator("a[href*='/formgrader/submissions/']").first.get_attribute("href")
        page.goto(f"{url}{href}?token={TOKEN}")
        page.wait_for_selector("text=square_grad", timeout=CELL_S)
        shot("formgrader_autograded_notebook")
        assert "square_grad" in page.locator("body").inner_text()

        # similarity.html, opened from disk with the network cut off: it asks for nothing but
        # itself, is styled by its own inline CSS, fits a screen or two, and names students,
        # never the run's temporary folders.
        asked = []
        offline = browser.new_page(viewport={"width": 1400, "height": 1000})
        offline.on("request", lambda request: asked.append(request.url))
        offline.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                      else route.abort())
        offline.goto((out / "similarity.html").as_uri())
        Shots(offline, tmp_path / "screenshots")("similarity_offline")
        assert asked == [(out / "similarity.html").as_uri()], asked
        sheets = offline.evaluate("[...document.styleSheets].map(s => [s.href, s.cssRules.length])")
        assert sheets and all(href is None and rules > 0 for href, rules in sheets), sheets
        assert offline.evaluate("document.body.scrollHeight") < 3000
        body = offline.locator("body").inner_text()
        assert "Answer similarity" in body and "/tmp" not in body and "run-" not in body, body
        offline.close()

        # The instructor's JupyterLab has the Nbgrader menu and its Formgrader.
        page.goto(f"{url}/lab?token={TOKEN}&reset")
        page.wait_for_selector(".lm-MenuBar-itemLabel", timeout=CELL_S)
        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
        shot("instructor_nbgrader_menu")
        assert page.locator(".lm-Menu-itemLabel", has_text="Formgrader").count() >= 1


def test_instructor_grades_a_written_answer_by_hand_in_the_formgrader(browser, tmp_path):
    """An instructor's own course (a written answer worth 2 points, graded by hand), graded by
    `course grade --course-root`; `course formgrader` opens on that course (its source, not this
    workbook's); the person types a score into the formgrader's submission page; the gradebook
    holds it, a forced regrade keeps it, and the formgrader and the CSVs then both say graded."""
    from nbgrader.api import Gradebook

    from autograder.grading.defaults import COURSE_ID
    from tests.instructor_course import answered, cell, course_grade, make_course, released

    written = "written"
    explain = nbformat.v4.new_markdown_cell("Why is x one?")
    explain.metadata["nbgrader"] = {"schema_version": 3, "locked": False, "grade": True,
                                    "solution": True, "task": False, "grade_id": "explain",
                                    "points": 2}
    course = make_course(tmp_path / "course", {written: [
        cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", answer=True),
        cell("assert x == 1", "test_x", points=1), explain]})
    notebook = released(course, [written], tmp_path / "release")[written]
    path = tmp_path / "class" / "ada" / written / f"{written}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(answered(notebook, {"answer": "x = 1", "explain": "Because I set it."}), path)
    out = tmp_path / "graded"
    _, cells, _ = course_grade(tmp_path / "class", out, course)
    assert cells["ada", "explain"]["status"] == "needs manual grading"

    argv = [str(Path(sys.executable).parent / "course"), "formgrader", str(out)]
    with jupyter_lab(argv, tmp_path, student_env(tmp_path), tmp_path / "lab.log", free_port()) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        shot = Shots(page, tmp_path / "screenshots")
        page.goto(f"{url}/?token={TOKEN}")  # logs in: the formgrader's own requests carry no token
        page.locator("tbody tr", has_text=written).wait_for(timeout=CELL_S)
        assert (out / "source").resolve() == (course / "solutions").resolve()
        page.goto(f"{url}/formgrader/gradebook/{written}/{written}?token={TOKEN}")
        link = page.locator("a[href*='/formgrader/submissions/']").first
        link.wait_for(timeout=CELL_S)
        shot("manual_grading_list")
        page.goto(f"{url}{link.get_attribute('href')}?token={TOKEN}")
        answer = page.locator(".nbgrader_cell", has_text="Because I set it.")
        score = answer.locator(".score")
        score.wait_for(timeout=CELL_S)
        score.fill("1.5")
        score.press("Tab")  # the formgrader saves a score on its change event
        answer.locator(".score-saved").wait_for(state="visible", timeout=CELL_S)
        shot("manual_score_saved")
        with Gradebook(f"sqlite:///{out / 'gradebook.db'}", COURSE_ID) as gb:
            grade = gb.find_grade("explain", written, written, "ada")
            assert (grade.manual_score, grade.needs_manual_grade) == (1.5, False)

        _, cells, _ = course_grade(tmp_path / "class", out, course, "--force")
        assert (float(cells["ada", "explain"]["score"]), cells["ada", "explain"]["status"]) == \
            (1.5, "graded")
        page.reload()
        score = page.locator(".nbgrader_cell", has_text="Because I set it.").locator(".score")
        score.wait_for(timeout=CELL_S)
        shot("manual_score_after_forced_regrade")
        assert score.input_value() == "1.5"
        with Gradebook(f"sqlite:///{out / 'gradebook.db'}", COURSE_ID) as gb:
            assert gb.find_grade("explain", written, written, "ada").needs_manual_grade is False
