"""The one gradebook: record a worker's execution into it, read every grade back.
"""
from __future__ import annotations

import time
from pathlib import Path

import nbformat

from autograder.checks.judge import error_name
from autograder.grading.defaults import (MAX_WRITTEN_FILES, REVIEW_KEY, VERDICT_KEY, WRITTEN_NAME,
                                         WRITTEN_REFUSED)
from autograder.grading.failures import Outcome
from autograder.grading.intake.scan import review_submission
from autograder.grading.intake.submissions import (
    Submission,
)
from autograder.grading.layout import OutputLayout, gradebook_lock
from autograder.grading.nbgrader_api import nbgrader_api, read_failure
from autograder.grading.preprocessors.record import ReuseOutputs
from autograder.grading.report_text import printable
from autograder.grading.run.records import read_record
from autograder.grading.run.results import NotebookGrade


def record(config, sub: Submission, executed_dir: Path, problem: str, unchanged: bool = False) -> str:
    """Run nbgrader's autograde of ``sub`` on the real gradebook, reusing the outputs of the
    worker's execution in ``executed_dir`` (see :class:`~.preprocessors.record.ReuseOutputs`).

    ``problem`` is why the worker left no executed notebook ("" when it did). ``unchanged``: its
    files are those last recorded (graded again with ``--force``): nbgrader marks every cell a
    person scored as needing manual grading again, but the answer the score was given for is
    the same, so the person's score stands and the mark is taken back. Returns "" on success,
    else why recording failed (the batch goes on without this submission)."""
    from nbgrader.preprocessors import Execute

    config = config.copy()
    config.Autograde.autograde_preprocessors = [
        ReuseOutputs if isinstance(pp, type) and issubclass(pp, Execute) else pp
        for pp in config.Autograde.autograde_preprocessors]
    config.ReuseOutputs.executed_directory = str(executed_dir)
    config.ReuseOutputs.problem = problem
    with gradebook_lock(Path(config.CourseDirectory.autograded_directory).parent):
        result = nbgrader_api(config).autograde(sub.assignment_id, sub.student_id, force=True)
        if result["success"] and unchanged:
            _keep_manual_scores(config, sub)
    if result["success"]:
        return ""
    _, why = read_failure(result.get("error", ""), result.get("log", ""))
    return "recording in the gradebook failed: " + why.removeprefix("grading failed: ")


def _keep_manual_scores(config, sub: Submission) -> None:
    """Take back nbgrader's "needs manual grading" mark from each cell of ``sub`` a person scored
    (see :func:`record`)."""
    from nbgrader.api import Gradebook

    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
        for notebook in gb.find_submission(sub.assignment_id, sub.student_id).notebooks:
            for grade in notebook.grades:
                if grade.manual_score is not None and grade.needs_manual_grade:
                    grade.needs_manual_grade = False
        gb.db.commit()


def place_written(folder: Path, files: dict[str, bytes]) -> list[str]:
    """Write ``files`` (name -> bytes: what a worker read back of the files the notebooks wrote,
    :mod:`~.preprocessors.written`) into the autograded folder ``folder``, as plain nbgrader
    leaves them, never over a file already there (the autograded notebooks, the submission's
    files) nor under a name :data:`~.defaults.WRITTEN_NAME` refuses; returns a note per file left
    out."""
    notes = []
    for name, data in sorted(files.items())[:MAX_WRITTEN_FILES]:
        target = folder / name
        try:
            if (not WRITTEN_NAME.fullmatch(name) or WRITTEN_REFUSED.fullmatch(name)
                    or target.exists() or target.is_symlink()):
                raise FileExistsError("the autograded folder holds a file of that name, or "
                                      "the name is not one the grader copies")
            with open(target, "xb") as handle:
                handle.write(data)
        except OSError as error:  # a full disk, a name the file system refuses: this file only
            notes.append(f"left out '{printable(name)[:120]}', a file a notebook wrote "
                         f"({printable(error.strerror or error)[:120]})")
    return notes


def collect(config, subs: list[Submission], layout: OutputLayout) -> list[NotebookGrade]:
    """Read every submission's scores (a person's manual scores included, and which cells still
    wait for one) from the gradebook, and its failure messages from the autograded notebooks;
    each notebook's cells in the order of its release notebook."""
    from nbgrader.api import Gradebook

    grades, orders = [], {}
    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
        for sub in subs:
            try:
                grades += _collect_one(gb, sub, layout, orders)
            except Exception as error:  # one unreadable record costs only this submission
                gb.db.rollback()
                grades.append(NotebookGrade(
                    sub.student_id, sub.assignment_id, next(iter(sub.notebooks), sub.assignment_id),
                    notes=list(sub.notes), problem="its grade could not be read",
                    failures=[f"collect: {type(error).__name__}: {error}"],
                    outcome=Outcome.FAILED, folder=sub.folder.parent.name))
    return grades


def _collect_one(gb, sub: Submission, layout: OutputLayout,
                 orders: dict[Path, dict[str, int]] | None = None) -> list[NotebookGrade]:
    """The grades of each notebook of ``sub``, read from the gradebook ``gb`` and the output
    folder; ``orders`` caches the position of each cell of the release notebooks read."""
    from nbgrader.api import MissingEntry

    grades = []
    folder = layout.autograded / sub.student_id / sub.assignment_id
    record = read_record(layout, sub)
    run_problem = record.get("problem", "")
    for notebook in gb.find_assignment(sub.assignment_id).notebooks:
        grade = NotebookGrade(sub.student_id, sub.assignment_id, notebook.name,
                              notes=list(sub.notes) + _strings(record.get("notes")),
                              failures=list(record.get("failures", [])),
                              folder=sub.folder.parent.name, review=list(sub.review))
        grade.problem = sub.problems.get(notebook.name) or run_problem or None
        grade.outcome = _recorded_outcome(record) if run_problem else Outcome.GRADED
        if notebook.name in sub.problems:
            grade.outcome = Outcome.UNREADABLE
        if notebook.name not in sub.notebooks:
            grade.problem = grade.problem or "notebook not submitted"
            grade.outcome = Outcome.NOT_SUBMITTED
        try:
            submitted = gb.find_submission_notebook(
                notebook.name, sub.assignment_id, sub.student_id)
            cells = {g.name: g for g in submitted.grades if g.max_score}
            grade.scores = {name: (float(g.score or 0), float(g.max_score))
                            for name, g in cells.items()}
            # nbgrader's manually graded cells: answer cells with points, and task cells.
            by_hand = {c.name for c in [*notebook.solution_cells, *notebook.task_cells]}
            grade.manual = {name: _known_score(g) for name, g in cells.items() if name in by_hand}
            grade.late_penalty = float(submitted.late_submission_penalty or 0)
            grade.seconds_late = float(submitted.assignment.total_seconds_late or 0)
        except MissingEntry:
            grade.scores = {c.name: (0.0, float(c.max_score))
                            for c in [*notebook.grade_cells, *notebook.task_cells] if c.max_score}
        released = layout.release / sub.assignment_id / f"{notebook.name}.ipynb"
        grade.scores = _in_notebook_order(grade.scores, released, {} if orders is None else orders)
        grade.executed = notebook.name in sub.notebooks and notebook.name not in sub.problems
        if grade.executed:  # never raises: what cannot be scanned is a flag
            grade.restored, flags = review_submission(sub.notebooks[notebook.name], released)
            grade.review += flags
        path = folder / f"{notebook.name}.ipynb"
        if path.exists():
            try:
                grade.messages = failure_messages(path)
                grade.review += [str(f) for f in
                                 nbformat.read(path, as_version=4).metadata.get(REVIEW_KEY, [])]
            except Exception as error:  # its flags must not vanish with it
                grade.review.append(f"the autograded notebook could not be read: "
                                    f"{type(error).__name__}: {str(error)[:200]}")
        grades.append(grade)
    return grades


def _strings(value) -> list[str]:
    """The strings of a list a record holds (a record is a file of the output folder)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _known_score(grade) -> float | None:
    """A manually graded cell's score: a person's (``manual_score``, with any extra credit), or
    nbgrader's own (0 for an answer left as released), None while it waits for a person."""
    if grade.manual_score is None and grade.auto_score is None or grade.needs_manual_grade:
        return None  # waits for a person (nbgrader's mark: the formgrader shows the same)
    return float(grade.score or 0)


def _in_notebook_order(scores: dict, released: Path, orders: dict[Path, dict[str, int]]) -> dict:
    """``scores`` (``grade_id`` -> anything) in the order of the cells of the release notebook
    ``released``, read once into ``orders``; cells it does not hold (all, when it cannot be read)
    after the others, as they came."""
    if released not in orders:
        try:
            cells = nbformat.read(released, as_version=4).cells
            orders[released] = {c.metadata.get("nbgrader", {}).get("grade_id"): i
                                for i, c in enumerate(cells)}
        except Exception:  # the order only: the grades stand
            orders[released] = {}
    position = orders[released]
    return dict(sorted(scores.items(), key=lambda item: position.get(item[0], len(position))))


def _recorded_outcome(record: dict) -> Outcome:
    """The :class:`~.failures.Outcome` a record holds (records are files in the output folder:
    an unknown value is read as a failure)."""
    try:
        return Outcome(record.get("outcome", Outcome.FAILED))
    except ValueError:
        return Outcome.FAILED


def failure_messages(path: Path) -> dict[str, str]:
    """``grade_id`` -> first line of the error of each graded cell that failed, from an
    autograded notebook."""
    nb = nbformat.read(path, as_version=4)
    messages = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade"):
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    # A cell the grader decided carries its own words; a cell run in the kernel
                    # shows its error's type only if it is Python's or TensorFlow's.
                    name = output.ename if cell.metadata.get(VERDICT_KEY) else error_name(output.ename)
                    text = f"{name}: {output.evalue}".strip()
                    if output.ename == "NotImplementedError":  # the release's placeholder
                        text = "NotImplementedError: the exercise was not answered"
                    # One line (checks wrap their messages), control characters escaped: a
                    # message can carry terminal escapes.
                    messages[meta["grade_id"]] = printable(" ".join(text.split()))[:600]
                    break
    return messages


def create_students(config, student_ids: list[str]) -> None:
    from nbgrader.api import Gradebook

    with gradebook_lock(Path(config.CourseDirectory.autograded_directory).parent):
        with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
            for student_id in student_ids:
                gb.update_or_create_student(student_id)


def write_feedback(config, subs: list[Submission],
                   timings: dict[str, dict[str, float]] | None = None) -> dict[str, str]:
    """Per-student feedback HTML under ``<out>/feedback/<student>/<assignment>/``; the seconds
    each took go to ``timings[key]["feedback"]`` for the keys ``timings`` holds.

    Returns submission key -> why its feedback was not written (G16: a student's text holding
    nbgrader's own markers, say); the other students' feedback is written all the same."""
    api = nbgrader_api(config)
    failed = {}
    for sub in subs:
        started = time.perf_counter()
        try:
            result = api.generate_feedback(sub.assignment_id, sub.student_id, force=True)
            error = "" if result["success"] else read_failure(result.get("error", ""),
                                                              result.get("log", ""))[1]
        except Exception as exception:
            error = f"{type(exception).__name__}: {exception}"
        if error:
            failed[sub.key] = error.removeprefix("grading failed: ")
        if timings is not None and sub.key in timings:
            timings[sub.key]["feedback"] = time.perf_counter() - started
    return failed
