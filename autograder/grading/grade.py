"""Grade a class: stage, execute in parallel, record into one gradebook, feedback, export.

The steps, for ``grade_class(submitted_dir, out)``:

1. the assignments are released into the gradebook (nbgrader ``generate_assignment``), which
   records every graded cell and its points from ``solutions/``;
2. each submission is validated (G05) and its gradable files are copied to a folder private to
   the run (``<out>/runs/run-*/staged``), so nothing ever writes to the submitted files;
3. each staged submission becomes a :class:`~.jobs.Job` (its files and a scratch gradebook, as
   bytes) that a Dask worker grades with nbgrader's own ``autograde`` in a scratch course, its
   kernel in the sandbox, returning the executed notebooks (:mod:`.jobs`, :mod:`.cluster`);
4. one at a time, under a file lock, nbgrader's ``autograde`` runs again on the real gradebook with
   ``Execute`` replaced by :class:`~.preprocessors.ReuseOutputs`: same grades, one writer;
5. feedback HTML (no hidden tests, no tracebacks) and the CSV exports are written.

A submission whose sources did not change since it was last recorded is not graded again, so an
interrupted run, started again, grades only the rest.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import tempfile
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from sqlalchemy.exc import SAWarning

from .course import REPO_ROOT, assignments, nbgrader_api, nbgrader_config, sqlite_url
from .cluster import default_workers, run_jobs
from .jobs import Job, JobResult
from .layout import OutputLayout
from .preprocessors import REVIEW_KEY
from .release import release
from .sandbox import SandboxUnavailable, sandbox_problem
from .settings import CELL_TIMEOUT_S, DEFAULT_MEMORY_LIMIT_MB, demo_cell_hashes
from .scan import review_submission
from .report_text import printable, printable_block
from .submissions import Submission, find_submissions, stage, student_id_problem, unknown_folders



@dataclass
class NotebookGrade:
    """The grade of one submitted notebook.

    ``scores`` maps each graded cell's ``grade_id`` to ``(score, max_score)`` in points;
    ``messages`` maps the ``grade_id`` of each failed graded cell to its first error line;
    ``problem`` says why the notebook was not graded (or only partly), else None;
    ``restored`` lists the locked cells the student deleted or changed, which nbgrader restored
    from the source before grading; ``notes`` says what was done about misnamed or extra files,
    copied cells and the like; ``executed`` is False for a notebook that was missing or not
    a valid notebook (it scores 0 without running); ``failures`` lists each step of the pipeline
    that failed for this submission as ``"<step>: <reason>"`` (steps: stage, execute, record,
    collect, feedback), where the instructor must act; ``review`` lists what the static scan
    (:mod:`.scan`) and the integrity check (:class:`~.preprocessors.GradingExecute`) flagged for
    review: the score stands, a person decides.
    """
    student_id: str
    assignment_id: str
    notebook_id: str
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    problem: str | None = None
    restored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    executed: bool = False
    failures: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(s for s, _ in self.scores.values())

    @property
    def max_score(self) -> float:
        return sum(m for _, m in self.scores.values())


@dataclass
class GradeRun:
    """Everything a grading run produced; files are under ``out``. ``ignored`` lists the
    ``<student>/<folder>`` entries that name no assignment (not graded); ``failures`` lists what
    failed for the run as a whole (an export), each as ``"<step>: <reason>"``; ``timings`` maps
    each submission graded in this run (``student/assignment``) to its seconds per step
    (:attr:`.jobs.JobResult.timings`, "record", "feedback")."""
    out: Path
    grades: list[NotebookGrade]
    seconds: float
    graded_now: int
    reused: int
    ignored: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    sandboxed: bool = True
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def grade_class(submitted_dir: Path, out: Path, *, assignment_ids: list[str] | None = None,
                workers: int | None = None, db_url: str | None = None, root: Path = REPO_ROOT,
                memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
                cell_timeout_s: int = CELL_TIMEOUT_S, force: bool = False,
                feedback: bool = True, progress: bool = True, sandbox: bool = True,
                scheduler: str | None = None, run_demos: bool = False) -> GradeRun:
    """Autograde every submission in ``submitted_dir`` into one gradebook.

    Args:
        submitted_dir: ``<student>/<assignment>/<notebook>.ipynb`` folders; never written to.
        out: output folder: ``gradebook.db`` (unless ``db_url``), ``autograded/``, ``feedback/``,
            ``grades.csv`` (nbgrader's export) and ``scores_by_exercise.csv``.
        assignment_ids: assignments to grade; default those of ``solutions/``.
        workers: worker processes of the embedded Dask cluster (one submission each at a
            time); default the number of cores.
        db_url: SQLAlchemy URL of the gradebook (e.g. ``postgresql://...``); default SQLite.
        memory_limit_mb: address-space limit of each kernel, MiB; None for none.
        cell_timeout_s: time limit of one cell, seconds; a cell past it scores 0 (G01).
        force: grade again submissions already recorded with the same sources.
        feedback: write per-student feedback HTML.
        progress: show a progress bar.
        sandbox: run every kernel in the bubblewrap sandbox (:mod:`.sandbox`); False runs them
            as this user with the machine in view (the report says so).
        scheduler: address of a Dask scheduler to grade on; default an embedded ``LocalCluster``
            of ``workers`` processes (:mod:`.cluster`).
        run_demos: run the cells tagged ``demo`` in ``solutions/`` too (timings, plots, visible
            checks that the hidden tests repeat); by default grading skips them, unchanged.
    Returns:
        A :class:`GradeRun`; invalid or ungradable notebooks appear with their ``problem``.
    Raises:
        ValueError: an id of ``assignment_ids`` is not an assignment of the course.
        SandboxUnavailable: ``sandbox`` is set and no sandbox can start on this host.
    """
    run = ClassGrading(Path(submitted_dir), Path(out), root=root, assignment_ids=assignment_ids,
                       db_url=db_url, cell_timeout_s=cell_timeout_s,
                       memory_limit_mb=memory_limit_mb, sandbox=sandbox, run_demos=run_demos)
    run.stage(force=force)
    run.execute(workers or default_workers(), scheduler=scheduler, progress=progress)
    return run.report(feedback=feedback)


class ClassGrading:
    """One grading run over a class, step by step: :meth:`stage` (validate and copy the
    submissions, decide what to grade), :meth:`execute` (grade them on Dask, recording each result
    as it comes), :meth:`report` (feedback, collect the grades, exports).

    Each submission's failure at any step is recorded against it (``"<step>: <reason>"``) and the
    run goes on. Staged copies and executed notebooks live in a folder private to the run, so two
    runs on one output folder never touch each other's files; only the gradebook is shared, under
    a lock. The constructor releases the assignments into the gradebook (nbgrader
    ``generate_assignment``) and raises what :func:`grade_class` documents.
    """

    def __init__(self, submitted_dir: Path, out: Path, *, root: Path = REPO_ROOT,
                 assignment_ids: list[str] | None = None, db_url: str | None = None,
                 cell_timeout_s: int = CELL_TIMEOUT_S,
                 memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB, sandbox: bool = True,
                 run_demos: bool = False):
        # nbgrader's gradebook code trips SQLAlchemy's autoflush warnings; they are not news.
        warnings.filterwarnings("ignore", category=SAWarning)
        self.started = time.perf_counter()
        self.submitted_dir, self.root = submitted_dir, root
        self.layout = OutputLayout(out.resolve())
        self.layout.out.mkdir(parents=True, exist_ok=True)
        self.known = assignments(root)
        unknown = sorted(set(assignment_ids or []) - set(self.known))
        if unknown:
            raise ValueError(f"unknown assignment {', '.join(unknown)}: the course has "
                             f"{', '.join(self.known)} (the folders of {root / 'solutions'})")
        self.ids = assignment_ids or self.known
        if sandbox:
            problem = sandbox_problem()
            if problem:
                raise SandboxUnavailable(problem)
        self.cell_timeout_s, self.sandbox = cell_timeout_s, sandbox
        self.demo_sha256 = () if run_demos else tuple(demo_cell_hashes(
            sorted((root / "solutions").glob("*/*.ipynb"))))
        # Seconds per submission key and step: the job's (JobResult.timings), "record", "feedback".
        self.timings: dict[str, dict[str, float]] = {}
        self.memory_limit_bytes = memory_limit_mb * 2**20 if memory_limit_mb else None
        self.layout.runs.mkdir(exist_ok=True)
        self.run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self.layout.runs))
        self.staged_dir = self.run_dir / "staged"
        self.template_db = self.run_dir / "template.db"
        db_url = db_url or sqlite_url(self.layout.gradebook)
        with gradebook_lock(self.layout.out):
            release(self.ids, root=root, release_dir=self.layout.release, db_url=db_url)
        release(self.ids, root=root, release_dir=self.run_dir / "release", db_path=self.template_db)
        self.config = nbgrader_config(root, db_url=db_url, submitted_dir=self.staged_dir,
                                      workdir=self.layout.out, cell_timeout_s=cell_timeout_s,
                                      sandbox=sandbox, demo_sha256=list(self.demo_sha256))
        self.failed: dict[str, list[str]] = {}  # submission key -> "<step>: <reason>" of each
        self.missing_limits: set[str] = set()  # per-kernel limits a worker could not set
        self.todo: dict[str, Submission] = {}
        self.fingerprints: dict[str, str] = {}

    def stage(self, force: bool = False) -> None:
        """Find and validate the submissions (G05), copy each gradable one, normalized and
        repaired, to the run's private folder, and keep those to grade: new or changed since the
        last run (every one with ``force``)."""
        expected = {a: sorted(p.stem for p in (self.root / "solutions" / a).glob("*.ipynb"))
                    for a in self.known}
        everything = find_submissions(self.submitted_dir, expected)
        subs = [sub for sub in everything if sub.assignment_id in self.ids]
        # The report covers this run's assignments and what earlier runs recorded in this folder.
        self.reported = [sub for sub in everything
                         if sub.assignment_id in self.ids or self._read_record(sub)]
        self.gradable = [s for s in subs if s.notebooks.keys() - s.problems.keys()]
        # Every student nbgrader can name is in the gradebook, so grades.csv lists a student whose
        # file was not a notebook too (with 0).
        _create_students(self.config, sorted({s.student_id for s in subs
                                              if not student_id_problem(s.folder.parent.name)}))
        for sub in self.gradable:
            try:
                stage(sub, self.staged_dir, release_dir=self.layout.release)
            except Exception as error:  # a notebook nbformat reads but we cannot stage
                self.failed.setdefault(sub.key, []).append(f"stage: {type(error).__name__}: {error}")
                continue
            self.fingerprints[sub.key] = _fingerprint(self._staged(sub))
            last = self._read_record(sub)
            # A grade made without the sandbox is made again when this run has it.
            if force or last.get("sha256") != self.fingerprints[sub.key] or \
                    (self.sandbox and not last.get("sandboxed", True)):
                self.todo[sub.key] = sub

    def execute(self, workers: int, scheduler: str | None = None, progress: bool = True) -> None:
        """Grade every submission to grade as a :class:`~.jobs.Job` on Dask (:mod:`.cluster`),
        recording each result into the gradebook as soon as it comes back."""
        gradebook = self.template_db.read_bytes()
        jobs = [Job(sub.student_id, sub.assignment_id,
                    {p.name: p.read_bytes() for p in sorted(self._staged(sub).iterdir())
                     if p.is_file()},
                    gradebook, self.cell_timeout_s, self.memory_limit_bytes, self.sandbox,
                    self.demo_sha256)
                for sub in self.todo.values()]
        run_jobs(jobs, workers, scheduler=scheduler, on_done=self._record, progress=progress)

    def _record(self, result: JobResult) -> None:
        # Runs in this process as each job ends: an interrupted run keeps what it recorded.
        sub = self.todo[result.key]
        executed = self.run_dir / "executed"
        folder = executed / sub.student_id / sub.assignment_id
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in result.executed.items():
            (folder / f"{name}.ipynb").write_bytes(data)
        reason = "" if result.success else result.reason
        if reason:
            reason += f" (log: {self._keep_log(sub, result)})"
        self.missing_limits.update(result.missing_limits)
        if result.kind == "grader_failed":  # the grader's fault: no grade; the next run grades it
            self.timings[result.key] = dict(result.timings)
            self._write_record(sub, {"sha256": None, "problem": reason, "sandboxed": self.sandbox,
                                     "failures": [f"execute: {reason}"]})
            shutil.rmtree(folder, ignore_errors=True)
            return
        started = time.perf_counter()
        try:
            not_recorded = record(self.config, sub,
                                  executed if result.success else folder / "none", reason)
        except Exception as error:  # the gradebook refused it: this submission only
            not_recorded = f"recording in the gradebook failed: {type(error).__name__}: {error}"
        self.timings[result.key] = {**result.timings, "record": time.perf_counter() - started}
        # A submission that could not be recorded keeps no fingerprint: the next run retries it.
        self._write_record(sub, {
            "sha256": None if not_recorded else self.fingerprints[result.key],
            "problem": not_recorded or reason, "sandboxed": self.sandbox,
            "failures": [f"{step}: {why}" for step, why in
                         (("execute", reason), ("record", not_recorded)) if why]})
        shutil.rmtree(folder, ignore_errors=True)

    def report(self, feedback: bool = True) -> GradeRun:
        """Write feedback, read every grade back from the gradebook, write the exports and the
        summary; returns the :class:`GradeRun`. The run's private folder is removed."""
        from .reports import write_exports

        shutil.rmtree(self.run_dir, ignore_errors=True)
        out, run_failures = self.layout.out, []
        with gradebook_lock(out):
            if feedback:
                done = [s for s in self.gradable if s.key in self.fingerprints]
                for key, reason in write_feedback(self.config, done, self.timings).items():
                    self.failed.setdefault(key, []).append(f"feedback: {reason}")
            grades = collect(self.config, self.reported, self.layout)
            for grade in grades:
                grade.failures += self.failed.get(f"{grade.student_id}/{grade.assignment_id}", [])
            for step, write in (
                    ("export", lambda: write_exports(self.config, grades, self.layout)),
                    ("summary", lambda: self._write_summary(grades))):
                try:
                    write()
                except Exception as error:  # the other exports are still written
                    run_failures.append(f"{step}: {type(error).__name__}: {error}")
        return GradeRun(out, grades, time.perf_counter() - self.started, len(self.todo),
                        len(self.fingerprints) - len(self.todo),
                        unknown_folders(self.submitted_dir, self.known), run_failures, self.sandbox,
                        self.timings, sorted(self.missing_limits))

    def _write_summary(self, grades: list[NotebookGrade]) -> None:
        """``summary.txt`` and the plots; first in ``summary.txt``, the per-kernel limits that
        could not be set (as an unsandboxed run says so first)."""
        from .reports import write_summary

        write_summary(grades, self.layout, sandboxed=self.sandbox)
        if self.missing_limits:
            text = self.layout.summary.read_text()
            self.layout.summary.write_text("\n".join(sorted(self.missing_limits)) + "\n" + text)

    def _staged(self, sub: Submission) -> Path:
        return self.staged_dir / sub.student_id / sub.assignment_id

    def _keep_log(self, sub: Submission, result: JobResult) -> str:
        """Keep what a failed job left (its kind and reason, nbgrader's log, the kernel's own
        output) in the output folder; returns that path relative to it."""
        path = self.layout.log(sub.student_id, sub.assignment_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{printable(sub.key)}: {printable(result.kind)}: {printable(result.reason)}"
                        f"\n\n{printable_block(result.log)}\n")
        return str(path.relative_to(self.layout.out))

    def _read_record(self, sub: Submission) -> dict:
        return read_record(self.layout, sub)

    def _write_record(self, sub: Submission, data: dict) -> None:
        path = self.layout.record(sub.student_id, sub.assignment_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))


def failure_reason(error: str, log: str = "") -> str:
    """A readable reason from a failed worker's error text and nbgrader log (G02 and friends)."""
    text = error + "\n" + log
    if "DeadKernelError" in text or "Kernel died" in text:
        return "the kernel died before all cells ran (out of memory, or os._exit?)"
    if "MemoryError" in text:
        return "the notebook ran out of memory"
    if "longer than" in error:
        return error
    causes = [line.strip() for line in text.splitlines()
              if re.match(r"\s*[\w.]+(Error|Exception): ", line) and "NbGraderException" not in line]
    return "grading failed: " + (causes[-1][:300] if causes else "unknown error (see the log)")


@contextmanager
def gradebook_lock(out: Path):
    """An exclusive lock on the output folder's lock file (:class:`~.layout.OutputLayout`) held
    while writing the gradebook, so that two grading runs on the same course never write at once."""
    out.mkdir(parents=True, exist_ok=True)
    with open(OutputLayout(out).lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def record(config, sub: Submission, executed_dir: Path, reason: str) -> str:
    """Run nbgrader's autograde of ``sub`` on the real gradebook, reusing the outputs of the
    worker's execution in ``executed_dir`` (see :class:`~.preprocessors.ReuseOutputs`).

    Returns "" on success, else why it failed (the batch goes on without this submission)."""
    from nbgrader.preprocessors import Execute

    from .preprocessors import ReuseOutputs

    config = config.copy()
    config.Autograde.autograde_preprocessors = [
        ReuseOutputs if isinstance(pp, type) and issubclass(pp, Execute) else pp
        for pp in config.Autograde.autograde_preprocessors]
    config.ReuseOutputs.executed_directory = str(executed_dir)
    config.ReuseOutputs.failure_reason = reason
    with gradebook_lock(Path(config.CourseDirectory.autograded_directory).parent):
        result = nbgrader_api(config).autograde(sub.assignment_id, sub.student_id, force=True)
    if result["success"]:
        return ""
    return "recording in the gradebook failed: " + failure_reason(
        result.get("error", ""), result.get("log", "")).removeprefix("grading failed: ")


def collect(config, subs: list[Submission], layout: OutputLayout) -> list[NotebookGrade]:
    """Read every submission's scores from the gradebook and its failure messages from the
    autograded notebooks."""
    from nbgrader.api import Gradebook

    grades = []
    with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
        for sub in subs:
            try:
                grades += _collect_one(gb, sub, layout)
            except Exception as error:  # one unreadable record costs only this submission
                gb.db.rollback()
                grades.append(NotebookGrade(
                    sub.student_id, sub.assignment_id, next(iter(sub.notebooks), sub.assignment_id),
                    notes=list(sub.notes), problem="its grade could not be read",
                    failures=[f"collect: {type(error).__name__}: {error}"]))
    return grades


def _collect_one(gb, sub: Submission, layout: OutputLayout) -> list[NotebookGrade]:
    """The grades of each notebook of ``sub``, read from the gradebook ``gb`` and the output
    folder."""
    from nbgrader.api import MissingEntry

    grades = []
    folder = layout.autograded / sub.student_id / sub.assignment_id
    record = read_record(layout, sub)
    run_problem = record.get("problem", "")
    for notebook in gb.find_assignment(sub.assignment_id).notebooks:
        grade = NotebookGrade(sub.student_id, sub.assignment_id, notebook.name,
                              notes=list(sub.notes), failures=list(record.get("failures", [])))
        grade.problem = sub.problems.get(notebook.name) or run_problem or None
        if notebook.name not in sub.notebooks:
            grade.problem = grade.problem or "notebook not submitted"
        try:
            submitted = gb.find_submission_notebook(
                notebook.name, sub.assignment_id, sub.student_id)
            grade.scores = {g.name: (float(g.score or 0), float(g.max_score))
                            for g in submitted.grades if g.max_score}
        except MissingEntry:
            grade.scores = {c.name: (0.0, float(c.max_score))
                            for c in notebook.grade_cells if c.max_score}
        released = layout.release / sub.assignment_id / f"{notebook.name}.ipynb"
        grade.executed = notebook.name in sub.notebooks and notebook.name not in sub.problems
        if grade.executed:  # never raises: what cannot be scanned is a flag
            grade.restored, grade.review = review_submission(sub.notebooks[notebook.name], released)
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
                    text = f"{output.ename}: {output.evalue}".strip()
                    if output.ename == "NotImplementedError":  # the release's placeholder
                        text = "NotImplementedError: the exercise was not answered"
                    # One line (checks wrap their messages), control characters escaped: a
                    # message can carry terminal escapes.
                    messages[meta["grade_id"]] = printable(" ".join(text.split()))[:600]
                    break
    return messages


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
            error = "" if result["success"] else failure_reason(result.get("error", ""),
                                                                result.get("log", ""))
        except Exception as exception:
            error = f"{type(exception).__name__}: {exception}"
        if error:
            failed[sub.key] = error.removeprefix("grading failed: ")
        if timings is not None and sub.key in timings:
            timings[sub.key]["feedback"] = time.perf_counter() - started
    return failed


def _create_students(config, student_ids: list[str]) -> None:
    from nbgrader.api import Gradebook

    with gradebook_lock(Path(config.CourseDirectory.autograded_directory).parent):
        with Gradebook(config.CourseDirectory.db_url, config.CourseDirectory.course_id) as gb:
            for student_id in student_ids:
                gb.update_or_create_student(student_id)


def _fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def read_record(layout: OutputLayout, sub: Submission) -> dict:
    """What the last run recorded of ``sub``: the sha256 of its staged files, its problem and
    failed steps; {} when it was never recorded."""
    path = layout.record(sub.student_id, sub.assignment_id)
    try:
        record = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):  # a record cut short: graded again
        return {}
    return record if isinstance(record, dict) else {}
