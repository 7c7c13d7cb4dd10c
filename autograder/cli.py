"""The ``course`` command: a thin shell over ``autograder.grading``.

    course release [ASSIGNMENT ...] [--force]  solutions/ -> notebooks/ (nbgrader generate_assignment),
                                               stopping where notebooks/ holds saved answers
    course execute-solutions [ASSIGNMENT ...]  run solution notebooks in place, store outputs
    course grade SUBMITTED_DIR [--out DIR]     autograde a class: gradebook, CSV, feedback, table
                 [--due ID=DATE] [--late-penalty PLUGIN]   nbgrader's due dates and late penalties
    course demo [--out DIR]                    release, grade a sample class built in DIR/submitted
    course bundle [--out DIR]                  the student archive: release, utils, visible checks
    course formgrader DIR [LAB_OPTION ...]     JupyterLab's formgrader on the class graded into DIR
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from .grading.defaults import CELL_TIMEOUT_S, DEFAULT_MEMORY_LIMIT_MB, MIN_MEMORY_LIMIT_MB

    parser = argparse.ArgumentParser(
        prog="course", description="Release and grade the TensorFlow autodiff workbook.",
        epilog="Run 'course COMMAND --help' for a command's options.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("release", help="generate notebooks/ from solutions/ with nbgrader; stops, "
                                       "writing nothing, where a notebook there changed since "
                                       "the last release (saved answers)")
    p.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    p.add_argument("--force", action="store_true", dest="overwrite",
                   help="overwrite the files of notebooks/ changed since the last release")

    p = sub.add_parser("execute-solutions", help="execute solution notebooks in place")
    p.add_argument("assignments", nargs="*", help="assignment ids (default: all)")

    p = sub.add_parser("bundle", help="write the student archive: notebooks/, utils, the visible "
                                      "checks and install files, nothing else")
    p.add_argument("--out", type=Path, default=Path("dist"), help="output folder (default: ./dist)")

    p = sub.add_parser("formgrader", help="open nbgrader's formgrader in JupyterLab on a class "
                                          "graded with 'course grade --out DIR'")
    p.add_argument("out", type=Path, help="the output folder of 'course grade'")
    p.add_argument("lab_options", nargs=argparse.REMAINDER,
                   help="more 'jupyter lab' options, e.g. --port 8889 --no-browser")

    for name, text in (("grade", "autograde a folder of submissions"),
                       ("demo", "release, build the sample class of tests/samples in "
                                "OUT/submitted, then grade it")):
        p = sub.add_parser(name, help=text)
        if name == "grade":
            p.add_argument("submitted", type=Path,
                           help="folder laid out as <student>/<assignment>/<notebook>.ipynb")
        else:
            p.add_argument("--full-class", action="store_true",
                           help="grade every sample submission, as the tests do (default: a "
                                "smaller class: a full solution, other correct answers, an "
                                "untouched release, a copy, one mistake per assignment and the "
                                "files that are not notebooks)")
        default_out = "grading-output" if name == "grade" else "grading-demo"
        p.add_argument("--out", type=Path, default=Path(default_out),
                       help="output folder: gradebook, autograded/, feedback/, CSVs, summary "
                            f"(default: ./{default_out}); one folder per class: its gradebook "
                            "and grades.csv hold every student ever graded into it")
        p.add_argument("--assignment", action="append", dest="assignments",
                       help="grade only this assignment (repeatable; default: all)")
        p.add_argument("--workers", type=int, default=None,
                       help="worker processes of the embedded Dask cluster, one submission each "
                            "at a time (default: number of cores)")
        p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="grade on an existing Dask cluster, e.g. tcp://10.0.0.5:8786 "
                            "(default: an embedded LocalCluster on this machine)")
        p.add_argument("--db-url", default=None,
                       help="SQLAlchemy URL of the gradebook, e.g. postgresql://user@host/course "
                            "(default: SQLite in the output folder)")
        p.add_argument("--memory-limit-mb", type=int, default=None,
                       help="memory limit of each notebook's kernel, MiB "
                            f"(default: {DEFAULT_MEMORY_LIMIT_MB}; at least "
                            f"{MIN_MEMORY_LIMIT_MB}, what a kernel needs to import TensorFlow "
                            "and run the set-up; 0: none)")
        p.add_argument("--cell-timeout", type=int, default=None,
                       help=f"time limit of one cell, seconds (default: {CELL_TIMEOUT_S})")
        p.add_argument("--force", action="store_true",
                       help="grade again submissions already graded with the same files")
        p.add_argument("--no-feedback", action="store_true", help="skip feedback HTML")
        p.add_argument("--no-sandbox", action="store_true",
                       help="run kernels without the bubblewrap sandbox (where none can start, "
                            "e.g. macOS); the report says the run was not sandboxed")
        p.add_argument("--run-demos", action="store_true",
                       help="run the demonstration cells too (tagged demo in solutions/: timings, "
                            "plots, the visible checks); by default grading skips them, unchanged")
        p.add_argument("--similarity-reference", type=Path, default=None, metavar="DIR",
                       help="earlier years' or public answers (DIR/<name>/<assignment>/"
                            "<notebook>.ipynb) to compare every student's answers with too; "
                            "similarity is advice, scores never change")
        p.add_argument("--course-root", type=Path, default=None,
                       help="folder holding solutions/ (default: this workbook)")
        p.add_argument("--due", action="append", default=[], metavar="ASSIGNMENT=DATE",
                       help="an assignment's due date, ISO 8601 with its time zone, e.g. "
                            "01_gradient_tape=2026-12-01T23:59:00+01:00 (repeatable); written "
                            "into the gradebook, whose due date (an earlier run's, nbgrader db "
                            "assignment add --duedate, the formgrader) stands otherwise; a "
                            "submission's time is its nbgrader timestamp.txt")
        p.add_argument("--late-penalty", default=None, metavar="PLUGIN",
                       help="nbgrader's late-penalty plugin for submissions past their due "
                            "date: none (default), zero (a late notebook scores 0), or a plugin "
                            "class module.Class (nbgrader's late_submission_penalty method)")

    args = parser.parse_args(argv)
    if args.command == "bundle":
        return bundle(args)
    if args.command == "formgrader":
        from .grading.distribute.formgrader import open_formgrader

        try:
            open_formgrader(args.out, args.lab_options)  # returns only on failure
        except FileNotFoundError as error:
            print(f"course formgrader: {error}", file=sys.stderr)
        return 2
    from .grading.distribute import release

    if args.command in ("release", "demo"):
        try:
            released = release.release_notebooks(args.assignments or None,
                                                  force=getattr(args, "overwrite", False))
        except release.SavedWorkError as error:
            print(f"course {args.command}: {error}\nNothing was released. Keep your answers "
                  "(copy the notebooks elsewhere), or overwrite them with "
                  "'course release --force'.", file=sys.stderr)
            return 2
        for path in released:
            print(f"released {path}")
    if args.command == "execute-solutions":
        for path in release.execute_solutions(args.assignments or None):
            print(f"executed {path}")
    elif args.command != "release":
        if args.command == "demo":
            from .grading.demo.samples import SAMPLES, build_sample_class, demo_selection

            from .grading.course import REPO_ROOT

            only = None if args.full_class else demo_selection(REPO_ROOT / SAMPLES / "answers")
            args.submitted = build_sample_class(args.out / "submitted", only=only)
            print(f"sample class written to {args.submitted}")
        return grade(args)
    return 0


LAYOUT = "<student_id>/<assignment_id>/<assignment_id>.ipynb"


def grade(args) -> int:
    from .grading.run.pipeline import grade_class
    from .grading.layout import OutputLayout
    from .grading.defaults import DEFAULT_MEMORY_LIMIT_MB
    from .grading.run.reports import NOT_SANDBOXED, attention_lines, notebook_counts, score_table
    from .grading.report_text import printable, render
    from .grading.kernels.bwrap import SandboxUnavailable
    from .grading.distribute.release import parse_due_dates

    if not args.submitted.is_dir():
        print(f"course grade: {args.submitted} is not a folder", file=sys.stderr)
        return 2
    limit = DEFAULT_MEMORY_LIMIT_MB if args.memory_limit_mb is None else args.memory_limit_mb or None
    extra = {"root": args.course_root.resolve()} if args.course_root else {}
    try:
        extra["due"] = parse_due_dates(args.due)
    except ValueError as error:
        print(f"course grade: {error}", file=sys.stderr)
        return 2
    if args.cell_timeout:
        extra["cell_timeout_s"] = args.cell_timeout
    try:
        run = grade_class(args.submitted, args.out, assignment_ids=args.assignments,
                          workers=args.workers, db_url=args.db_url, memory_limit_mb=limit,
                          force=args.force, feedback=not args.no_feedback,
                          sandbox=not args.no_sandbox, scheduler=args.scheduler,
                          run_demos=args.run_demos,
                          similarity_reference=args.similarity_reference,
                          late_penalty=args.late_penalty, **extra)
    except SandboxUnavailable as error:
        print(f"course grade: {error}.\nKernels run student code, so grading stops here. To grade "
              "anyway, without the sandbox, add --no-sandbox (the report will say so).",
              file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"course grade: {error}", file=sys.stderr)
        return 2
    for entry in run.ignored:
        print(f"warning: ignored {printable(args.submitted / entry)}: not an assignment folder "
              f"(expected {LAYOUT})", file=sys.stderr)
    if not run.grades:
        print(f"course grade: no submissions found in {args.submitted}; expected {LAYOUT}",
              file=sys.stderr)
        return 2
    print(score_table(run.grades))
    if not run.sandboxed:
        print("\n" + NOT_SANDBOXED)
    if run.warnings:  # per-kernel limits (cgroups) that could not be set
        print("\n" + "\n".join(run.warnings))
    # Each notebook counted once: graded now, unchanged, or why it was not graded.
    print(f"\n{notebook_counts(run.grades, set(run.timings))} in {run.seconds:.1f} s; "
          f"outputs in {run.out}:")
    for path in OutputLayout(run.out).listed():
        if path.exists():
            print(f"  {path}{'/' if path.is_dir() else ''}")
    from .grading.distribute.formgrader import formgrader_command

    if args.db_url is None:
        print(f"Open the formgrader on this class: {formgrader_command(args.out)}")
    attention = attention_lines(run.grades)
    if run.failures:
        attention += ["Failed for the whole run:"] + [f"  {f}" for f in run.failures]
    if attention:
        print("\n" + render(attention))
    if args.command == "demo":
        return 0  # the sample class holds broken files on purpose
    return 1 if attention else 0


def bundle(args) -> int:
    import zipfile

    from .grading.distribute.bundle import build_bundle

    try:
        path = build_bundle(args.out)
    except ValueError as error:
        print(f"course bundle: {error}", file=sys.stderr)
        return 2
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    for name in names:
        print(f"  {name}")
    print(f"wrote {path} ({len(names)} files, {path.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
