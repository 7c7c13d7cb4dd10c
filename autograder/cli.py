"""The ``course`` command: a thin shell over ``autograder.grading``.

    course release [ASSIGNMENT ...]            solutions/ -> notebooks/ (nbgrader generate_assignment)
    course execute-solutions [ASSIGNMENT ...]  run solution notebooks in place, store outputs
    course grade SUBMITTED_DIR [--out DIR]     autograde a class, write gradebook, CSV, feedback
    course demo                                release, then grade the sample submissions
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("release", help="generate notebooks/ from solutions/ with nbgrader")
    p.add_argument("assignments", nargs="*", help="assignment ids (default: all)")

    p = sub.add_parser("execute-solutions", help="execute solution notebooks in place")
    p.add_argument("assignments", nargs="*", help="assignment ids (default: all)")

    args = parser.parse_args(argv)
    from .grading import release

    if args.command == "release":
        for path in release.release(args.assignments or None):
            print(f"released {path}")
    elif args.command == "execute-solutions":
        for path in release.execute_solutions(args.assignments or None):
            print(f"executed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
