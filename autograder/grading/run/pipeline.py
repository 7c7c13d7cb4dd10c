"""Grade a class: stage, execute in parallel, record into one gradebook, feedback, export.

The steps, for ``grade_class(submitted_dir, out)``:

1. the assignments are released into the gradebook (nbgrader ``generate_assignment``), which
   records every graded cell and its points from ``solutions/``;
2. each submission is validated (G05) and its gradable files are copied to a folder private to
   the run (``<out>/runs/run-*/staged``), so nothing ever writes to the submitted files;
3. each staged submission becomes a :class:`~.jobs.job.Job` (its files and a scratch gradebook, as
   bytes) that a Dask worker grades with nbgrader's own ``autograde`` in a scratch course, its
   kernel in the sandbox, returning the executed notebooks (:mod:`.jobs.worker`, :mod:`.jobs.cluster`);
4. one at a time, under a file lock, nbgrader's ``autograde`` runs again on the real gradebook with
   ``Execute`` replaced by :class:`~.preprocessors.record.ReuseOutputs`: same grades, one writer;
5. feedback HTML (no hidden tests, no tracebacks) and the CSV exports are written.

A submission whose sources did not change since it was last recorded is not graded again, so an
interrupted run, started again, grades only the rest.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
import warnings
from datetime import datetime
from pathlib import Path

from nbgrader.utils import parse_utc
from sqlalchemy.exc import SAWarning

from autograder.grading.analysis import misconceptions
from autograder.grading.analysis.similarity import compare_class, summary_lines, write_similarity
from autograder.grading.configure import configure_late_penalty
from autograder.grading.course import REPO_ROOT, assignments, demo_cell_hashes, graded_cells_in_order
from autograder.grading.defaults import CELL_TIMEOUT_S, DEFAULT_MEMORY_LIMIT_MB, MIN_MEMORY_LIMIT_MB, SOURCE_DIR
from autograder.grading.distribute.formgrader import show_in_view, submitted_view
from autograder.grading.distribute.release import due_dates, due_problem, release
from autograder.grading.exports.lms import write_lms_exports
from autograder.grading.failures import Outcome
from autograder.grading.intake.align import Unalignable
from autograder.grading.intake.submissions import (Submission, find_submissions, stage, student_id_problem,
                                                   unknown_folders)
from autograder.grading.jobs.cluster import ClusterStart, default_workers, run_jobs
from autograder.grading.jobs.job import Job, JobResult, source_files
from autograder.grading.kernels.bwrap import SandboxUnavailable, sandbox_problem
from autograder.grading.layout import OutputLayout, gradebook_lock
from autograder.grading.nbgrader_api import nbgrader_config, sqlite_url
from autograder.grading.report_text import printable, printable_block
from autograder.grading.run.gradebook import (collect, create_students, place_written, record,
                                              write_feedback)
from autograder.grading.run.records import fingerprint, read_record
from autograder.grading.run.reports import write_exports, write_summary
from autograder.grading.run.results import GradeRun, NotebookGrade


def grade_class(submitted_dir: Path, out: Path, *, assignment_ids: list[str] | None = None,
                workers: int | None = None, db_url: str | None = None, root: Path = REPO_ROOT,
                memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
                cell_timeout_s: int = CELL_TIMEOUT_S, force: bool = False,
                feedback: bool = True, progress: bool = True, sandbox: bool = True,
                scheduler: str | None = None, run_demos: bool = False,
                similarity_reference: Path | None = None, due: dict[str, datetime] | None = None,
                late_penalty: str | None = None) -> GradeRun:
    """Autograde every submission in ``submitted_dir`` into one gradebook.

    Args:
        submitted_dir: ``<student>/<assignment>/<notebook>.ipynb`` folders; never written to.
        out: output folder: ``gradebook.db`` (unless ``db_url``), ``autograded/``, ``feedback/``,
            ``grades.csv`` (nbgrader's export) and ``scores_by_exercise.csv``.
        assignment_ids: assignments to grade; default those of ``solutions/``.
        workers: worker processes of the embedded Dask cluster (one submission each at a
            time); default the number of cores.
        db_url: SQLAlchemy URL of the gradebook (e.g. ``postgresql://...``); default SQLite.
        memory_limit_mb: memory limit of each kernel, MiB (its address space, and all its
            processes together); None or 0 for none; at least :data:`~.defaults.MIN_MEMORY_LIMIT_MB`.
        cell_timeout_s: time limit of one cell, seconds; a cell past it scores 0 (G01).
        force: grade again submissions already recorded with the same sources.
        feedback: write per-student feedback HTML.
        progress: show a progress bar.
        sandbox: run every kernel in the bubblewrap sandbox (:mod:`.kernels.bwrap`); False runs them
            as this user with the machine in view (the report says so).
        scheduler: address of a Dask scheduler to grade on; default an embedded ``LocalCluster``
            of ``workers`` processes (:mod:`.jobs.cluster`).
        run_demos: run the cells tagged ``demo`` in ``solutions/`` too (timings, plots, visible
            checks that the hidden tests repeat); by default grading skips them, unchanged.
        similarity_reference: earlier years' or public answers, ``<name>/<assignment>/
            <notebook>.ipynb``, that answer similarity compares each student with too
            (:mod:`.analysis.similarity`; advice only, scores never change).
        due: assignment id -> due date (time-zone aware), written into the gradebook as
            nbgrader's ``duedate``; an assignment not named keeps the gradebook's (set by an
            earlier run, ``nbgrader db assignment add --duedate`` or the formgrader). A
            submission's ``timestamp.txt`` (nbgrader's) is its time of submission.
        late_penalty: nbgrader's late-penalty plugin for submissions past their due date
            (:func:`~.configure.configure_late_penalty`: "none", the default, "zero", or a
            plugin class's import name).
    Returns:
        A :class:`GradeRun`; invalid or ungradable notebooks appear with their ``problem``.
    Raises:
        ValueError: ``memory_limit_mb`` is below :data:`~.defaults.MIN_MEMORY_LIMIT_MB`
            (:func:`memory_limit_problem`: nothing is written), an id of ``assignment_ids`` is not
            an assignment of the course, ``due`` names an assignment not graded here, or
            ``late_penalty`` names no plugin;
            :class:`~.intake.student_ids.StudentIdsError`: ``out``'s ``student_ids.csv`` is
            unreadable or was changed unsafely.
        SandboxUnavailable: ``sandbox`` is set and no sandbox can start on this host.
    """
    with ClusterStart(workers or default_workers(), scheduler) as cluster:
        run = ClassGrading(Path(submitted_dir), Path(out), root=root, assignment_ids=assignment_ids,
                           db_url=db_url, cell_timeout_s=cell_timeout_s,
                           memory_limit_mb=memory_limit_mb, sandbox=sandbox, run_demos=run_demos,
                           similarity_reference=similarity_reference, due=due,
                           late_penalty=late_penalty, cluster=cluster)
        run.stage(force=force)
        run.execute(0, progress=progress)
    return run.report(feedback=feedback)


def memory_limit_problem(memory_limit_mb: int | None) -> str | None:
    """Why no kernel could grade under ``memory_limit_mb`` MiB (below
    :data:`~.defaults.MIN_MEMORY_LIMIT_MB`: every kernel would die, or fail to import TensorFlow,
    before the first cell, and every student would score 0), a sentence for the instructor; None
    where it is enough, or None or 0 (no limit)."""
    if not memory_limit_mb or memory_limit_mb >= MIN_MEMORY_LIMIT_MB:
        return None
    return (f"--memory-limit-mb {memory_limit_mb} is too small: a grading kernel needs "
            f"{MIN_MEMORY_LIMIT_MB} MiB to import TensorFlow and run the course's set-up, so "
            f"under {memory_limit_mb} MiB every kernel would die or fail before the first cell "
            f"and no student could be graded. Nothing was graded; give at least "
            f"{MIN_MEMORY_LIMIT_MB} (default {DEFAULT_MEMORY_LIMIT_MB}; 0: no limit)")


class ClassGrading:
    """One grading run over a class, step by step: :meth:`stage` (validate and copy the
    submissions, decide what to grade), :meth:`execute` (grade them on Dask, recording each result
    as it comes), :meth:`report` (feedback, collect the grades, exports).

    Each submission's failure at any step is recorded against it (``"<step>: <reason>"``) and the
    run goes on. Staged copies and executed notebooks live in a folder private to the run, so two
    runs on one output folder never touch each other's files; only the gradebook is shared, under
    a lock. The constructor starts ``cluster`` once the arguments hold, releases the assignments
    into the gradebook (nbgrader ``generate_assignment``) and raises what :func:`grade_class` says."""

    def __init__(self, submitted_dir: Path, out: Path, *, root: Path = REPO_ROOT,
                 assignment_ids: list[str] | None = None, db_url: str | None = None,
                 cell_timeout_s: int = CELL_TIMEOUT_S,
                 memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB, sandbox: bool = True,
                 run_demos: bool = False, similarity_reference: Path | None = None,
                 due: dict[str, datetime] | None = None, late_penalty: str | None = None,
                 cluster: ClusterStart | None = None):
        # nbgrader's gradebook code trips SQLAlchemy's autoflush warnings; they are not news.
        warnings.filterwarnings("ignore", category=SAWarning)
        if memory_limit_problem(memory_limit_mb):
            raise ValueError(memory_limit_problem(memory_limit_mb))
        self.started = time.perf_counter()
        self.submitted_dir, self.root = submitted_dir, root
        self.layout = OutputLayout(out.resolve())
        self.layout.out.mkdir(parents=True, exist_ok=True)
        self.known = assignments(root)
        unknown = sorted(set(assignment_ids or []) - set(self.known))
        if unknown:
            raise ValueError(f"unknown assignment {', '.join(unknown)}: the course has "
                             f"{', '.join(self.known)} (the folders of {root / SOURCE_DIR})")
        self.ids = assignment_ids or self.known
        if sandbox and (problem := sandbox_problem()):
            raise SandboxUnavailable(problem)
        if problem := due_problem(due, self.ids):  # before the cluster starts (release() says it later)
            raise ValueError(problem)
        self.cluster, self.cell_timeout_s, self.sandbox = cluster, cell_timeout_s, sandbox
        self.similarity_reference = similarity_reference
        self.similarity_lines: list[str] = []  # for summary.txt
        self.demo_sha256 = () if run_demos else tuple(demo_cell_hashes(
            sorted((root / SOURCE_DIR).glob("*/*.ipynb"))))
        # Seconds per submission key and step: the job's (JobResult.timings), "record", "feedback".
        self.timings: dict[str, dict[str, float]] = {}
        self.memory_limit_bytes = memory_limit_mb * 2**20 if memory_limit_mb else None
        self.layout.runs.mkdir(exist_ok=True)
        self.run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self.layout.runs))
        self.staged_dir = self.run_dir / "staged"
        self.template_db = self.run_dir / "template.db"
        db_url = db_url or sqlite_url(self.layout.gradebook)
        self.config = nbgrader_config(root, db_url=db_url, submitted_dir=self.staged_dir,
                                      workdir=self.layout.out, cell_timeout_s=cell_timeout_s,
                                      sandbox=sandbox, demo_sha256=list(self.demo_sha256))
        # nbgrader applies it when it records a submission past its due date (the gradebook's).
        self.late_penalty = configure_late_penalty(self.config, late_penalty)
        if cluster:  # the arguments hold: its workers start during the release below
            cluster.start()
        with gradebook_lock(self.layout.out):
            release(self.ids, root=root, release_dir=self.layout.release, db_url=db_url, due=due)
            self.due = due_dates(db_url, self.config.CourseDirectory.course_id, self.ids)
        release(self.ids, root=root, release_dir=self.run_dir / "release", db_path=self.template_db)
        self.failed: dict[str, list[str]] = {}  # submission key -> "<step>: <reason>" of each
        self.missing_limits: set[str] = set()  # per-kernel limits a worker could not set
        self.todo: dict[str, Submission] = {}
        self.fingerprints: dict[str, str] = {}

    def stage(self, force: bool = False) -> None:
        """Find and validate the submissions (G05), copy each gradable one, normalized and
        repaired, to the run's private folder, and keep those to grade: new or changed since the
        last run (every one with ``force``)."""
        expected = {a: sorted(p.stem for p in (self.root / SOURCE_DIR / a).glob("*.ipynb"))
                    for a in self.known}
        everything = find_submissions(self.submitted_dir, expected, self.layout.student_ids)
        subs = [sub for sub in everything if sub.assignment_id in self.ids]
        # The report covers this run's assignments and what earlier runs recorded in this folder.
        self.reported = [sub for sub in everything
                         if sub.assignment_id in self.ids or self._read_record(sub)]
        self.gradable = [s for s in subs if s.notebooks.keys() - s.problems.keys()]
        # Every student nbgrader can name is in the gradebook, so grades.csv lists a student whose
        # file was not a notebook too (with 0).
        create_students(self.config, sorted({s.student_id for s in subs
                                              if not student_id_problem(s.folder.parent.name)}))
        for sub in subs:  # not graded (no notebook of it readable): recorded as graded ones are
            if sub.problems and not sub.notebooks.keys() - sub.problems.keys():
                self._write_unreadable(sub)
        for sub in self.gradable:
            try:
                stage(sub, self.staged_dir, release_dir=self.layout.release)
            except Unalignable:  # its reason is the notebook's problem already: not a failed step
                self._write_unreadable(sub)
                continue
            except Exception as error:  # a notebook nbformat reads but we cannot stage
                self.failed.setdefault(sub.key, []).append(f"stage: {type(error).__name__}: {error}")
                continue
            self.fingerprints[sub.key] = fingerprint(self._staged(sub))
            last = self._read_record(sub)
            # A grade made without the sandbox is made again when this run has it.
            if force or last.get("sha256") != self.fingerprints[sub.key] or \
                    (self.sandbox and not last.get("sandboxed", True)) or \
                    last.get("late") != self._late_key(sub):
                self.todo[sub.key] = sub
        self._update_view(subs)

    def _update_view(self, subs: list[Submission]) -> None:
        """``out/submitted``, what the formgrader sees (:func:`~.distribute.formgrader.show_in_view`):
        each staged submission as staged, under the id it is graded as; the others taken out."""
        with gradebook_lock(self.layout.out):  # two runs on one folder write it one at a time
            view = submitted_view(self.layout.out, self.submitted_dir, self.root)
            for sub in subs if view is not None else []:
                if not student_id_problem(sub.student_id):
                    staged = self._staged(sub)
                    show_in_view(view, sub.student_id, sub.assignment_id,
                                 staged if sub.key in self.fingerprints else None)

    def execute(self, workers: int, scheduler: str | None = None, progress: bool = True) -> None:
        """Grade every submission to grade as a :class:`~.jobs.job.Job` on Dask (:mod:`.jobs.cluster`;
        the constructor's ``cluster`` if given), recording each result as soon as it comes back."""
        gradebook = self.template_db.read_bytes()
        sources = {a: source_files(self.layout.release / a) for a in self.ids}  # data files
        jobs = [Job(sub.student_id, sub.assignment_id,
                    {p.name: p.read_bytes() for p in sorted(self._staged(sub).iterdir())
                     if p.is_file()},
                    gradebook, self.cell_timeout_s, self.memory_limit_bytes, self.sandbox,
                    self.demo_sha256, source_files=sources[sub.assignment_id])
                for sub in self.todo.values()]
        run_jobs(jobs, workers, scheduler=scheduler, on_done=self._record, progress=progress,
                 cluster=self.cluster)

    def _record(self, result: JobResult) -> None:
        # Runs in this process as each job ends: an interrupted run keeps what it recorded; a
        # failure here (a full disk) costs only this submission, which the next run grades again.
        try:
            self._record_one(result)
        except Exception as error:
            why = f"recording failed: {type(error).__name__}: {printable(str(error))[:300]}"
            self._write_record(self.todo[result.key], {
                "sha256": None, "problem": why, "outcome": Outcome.FAILED,
                "sandboxed": self.sandbox, "failures": [f"record: {why}"]})

    def _record_one(self, result: JobResult) -> None:
        sub = self.todo[result.key]
        executed = self.run_dir / "executed"
        folder = executed / sub.student_id / sub.assignment_id
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in result.executed.items():
            (folder / f"{name}.ipynb").write_bytes(data)
        problem = "" if result.success else result.problem
        if problem:
            problem += f" (log: {self._keep_log(sub, result)})"
        self.missing_limits.update(result.missing_limits)
        if result.kind is Outcome.GRADER_FAILED:  # the grader's fault: no grade; the next run grades it
            self.timings[result.key] = dict(result.timings)
            self._write_record(sub, {"sha256": None, "problem": problem, "outcome": result.kind,
                                     "sandboxed": self.sandbox, "failures": [f"execute: {problem}"]})
            shutil.rmtree(folder, ignore_errors=True)
            return
        started = time.perf_counter()
        unchanged = self._read_record(sub).get("sha256") == self.fingerprints[result.key]
        try:
            not_recorded = record(self.config, sub, executed if result.success else folder / "none",
                                  problem, unchanged)
        except Exception as error:  # the gradebook refused it: this submission only
            not_recorded = f"recording in the gradebook failed: {type(error).__name__}: {error}"
        notes = result.notes + ([] if not_recorded else place_written(
            self.layout.autograded / sub.student_id / sub.assignment_id, result.files))
        self.timings[result.key] = {**result.timings, "record": time.perf_counter() - started}
        # A submission that could not be recorded keeps no fingerprint: the next run retries it.
        self._write_record(sub, {
            "sha256": None if not_recorded else self.fingerprints[result.key],
            "problem": not_recorded or problem,
            "outcome": Outcome.FAILED if not_recorded else result.kind, "sandboxed": self.sandbox,
            "failures": [f"{step}: {why}" for step, why in
                         (("execute", problem), ("record", not_recorded)) if why],
            "notes": notes})
        shutil.rmtree(folder, ignore_errors=True)

    def report(self, feedback: bool = True) -> GradeRun:
        """Write feedback, read every grade back from the gradebook, write the exports and the
        summary; returns the :class:`GradeRun`. The run's private folder is removed."""

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
            course = self.config.CourseDirectory
            for step, write in (
                    ("export", lambda: write_exports(self.config, grades, self.layout)),
                    ("LMS export", lambda: write_lms_exports(course.db_url, course.course_id,
                                                             self.layout.out)),
                    ("similarity", lambda: self._write_similarity(grades)),
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
        """``summary.txt`` and the plots, then the mistakes per exercise
        (:mod:`.analysis.misconceptions`) and the similar pairs to look at; first in
        ``summary.txt``, the per-kernel limits that could not be set (as an unsandboxed run says
        so first)."""

        counts = misconceptions.mistake_counts(
            grades, cell_order=graded_cells_in_order(self.layout.release))
        misconceptions.write_csv(counts, self.layout.mistakes[0])
        misconceptions.plot(counts, self.layout.mistakes[1])
        write_summary(grades, self.layout, sandboxed=self.sandbox,
                      analysis=misconceptions.summary_lines(counts) + self.similarity_lines)
        if self.missing_limits:
            text = self.layout.summary.read_text()
            self.layout.summary.write_text("\n".join(sorted(self.missing_limits)) + "\n" + text)

    def _write_similarity(self, grades: list[NotebookGrade]) -> None:
        """Compare the answer cells across students (:mod:`.analysis.similarity`), the release's
        code and the course's own answers taken out: ``similarity_pairs.csv``,
        ``similarity.html``, and the pairs to look at for ``summary.txt``."""
        result = compare_class(self.layout.autograded, self.layout.release,
                               reference=self.similarity_reference,
                               known_answers=self.root / SOURCE_DIR)
        folders = {g.student_id: g.folder for g in grades if g.folder}
        write_similarity(result, self.layout.out, folders)
        self.similarity_lines = summary_lines(result.pairs, notes=result.notes, folders=folders)

    def _staged(self, sub: Submission) -> Path:
        return self.staged_dir / sub.student_id / sub.assignment_id

    def _keep_log(self, sub: Submission, result: JobResult) -> str:
        """Keep what a failed job left (its kind and problem, nbgrader's log, the kernel's own
        output) in the output folder; returns that path relative to it."""
        path = self.layout.log(sub.student_id, sub.assignment_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{printable(sub.key)}: {printable(result.kind)}: {printable(result.problem)}"
                        f"\n\n{printable_block(result.log)}\n")
        return str(path.relative_to(self.layout.out))

    def _read_record(self, sub: Submission) -> dict:
        return read_record(self.layout, sub)

    def _late_key(self, sub: Submission) -> list[str] | None:
        """What its late penalty depends on besides its files: the due date and the plugin
        (a change grades it again); None where it is not late (no due date, no
        ``timestamp.txt``, or one before the due date)."""
        due, stamp = self.due.get(sub.assignment_id), self._staged(sub) / "timestamp.txt"
        text = stamp.read_text().strip() if stamp.is_file() else ""  # staged: nbgrader reads it
        if due is None or not text or not parse_utc(text) > due:
            return None
        return [due.isoformat(), self.late_penalty]

    def _write_unreadable(self, sub: Submission) -> None:
        """Record ``sub`` as not graded, unreadable, so that a later run of other assignments
        reports it as this one does (a record is what puts it in their reports)."""
        self._write_record(sub, {"sha256": None, "problem": "; ".join(sub.problems.values()),
                                 "outcome": Outcome.UNREADABLE, "sandboxed": self.sandbox,
                                 "failures": []})

    def _write_record(self, sub: Submission, data: dict) -> None:
        path = self.layout.record(sub.student_id, sub.assignment_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**data, "late": self._late_key(sub)}))
