"""A grading worker: ``python -m autograder.grading.worker``, one long-lived process per worker.

It reads the path of a job file (JSON) per line from the jobs pipe (``--jobs-fd``), executes that
submission with nbgrader's own ``autograde`` in a scratch course with a private copy of the
gradebook, and writes one JSON line ``{"success": bool, "error": str, "log": str}`` to the results
pipe (``--results-fd``). Both pipes are made non-inheritable at once, so no kernel or subprocess
can write to them; the worker's own stdout and stderr go to its log file. Workers never share a database; the
grading run records the grades into the real gradebook one at a time
(:func:`autograder.grading.grade.record`). Staying alive between jobs saves the two seconds that
importing nbgrader takes. A job holds: root, submitted_dir, scratch_dir, db_path, assignment_id,
student_id, cell_timeout_s, sandbox. The memory limit (``--memory-limit-bytes``) applies to this
process and to every kernel it starts, which inherit it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from pathlib import Path


def limit_memory(max_bytes: int | None) -> None:
    """Cap the address space of this process and of the kernels it starts (they inherit it)."""
    if max_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))


def run(job: dict) -> dict:
    """Autograde one submission as the job describes; returns success, error text and log."""
    from .course import nbgrader_api, nbgrader_config

    config = nbgrader_config(Path(job["root"]), db_path=Path(job["db_path"]),
                             submitted_dir=Path(job["submitted_dir"]),
                             workdir=Path(job["scratch_dir"]),
                             cell_timeout_s=job["cell_timeout_s"], sandbox=job["sandbox"])
    api = nbgrader_api(config)
    result = api.autograde(job["assignment_id"], job["student_id"], force=True, create=True)
    return {"success": bool(result.get("success")), "error": result.get("error", ""),
            "log": result.get("log", "")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memory-limit-bytes", type=int, default=0)
    parser.add_argument("--jobs-fd", type=int, required=True)
    parser.add_argument("--results-fd", type=int, required=True)
    args = parser.parse_args()
    for fd in (args.jobs_fd, args.results_fd):
        os.set_inheritable(fd, False)
    jobs, results = os.fdopen(args.jobs_fd, "r"), os.fdopen(args.results_fd, "w")
    # Graded kernels run on the CPU: the same results for every student, and CUDA's huge address
    # space reservations do not collide with the memory limit. One thread each for TensorFlow and
    # BLAS: the grading run already keeps every core busy with one worker per core.
    os.environ.update(CUDA_VISIBLE_DEVICES="", TF_NUM_INTRAOP_THREADS="1",
                      TF_NUM_INTEROP_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    limit_memory(args.memory_limit_bytes)
    from .course import nbgrader_api  # noqa: F401  (import nbgrader once, before the first job)

    for line in jobs:
        try:
            result = run(json.loads(Path(line.strip()).read_text()))
        except Exception as error:  # a broken job must not end the worker
            result = {"success": False, "error": f"{type(error).__name__}: {error}", "log": ""}
        results.write(json.dumps(result) + "\n")
        results.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
