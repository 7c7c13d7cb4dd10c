"""Execute one submission in a scratch course: ``python -m autograder.grading.worker JOB.json``.

The grading run starts one such process per submission, several at a time
(:mod:`autograder.grading.parallel`). Each has its own copy of the gradebook, so workers never share
a database; the run then records the grades into the real gradebook one at a time
(:func:`autograder.grading.grade.record`). The job file holds: root, submitted_dir, scratch_dir,
db_path, assignment_id, student_id, cell_timeout_s, memory_limit_bytes (or null). The process prints one JSON line:
``{"success": bool, "error": str, "log": str}``.
"""
from __future__ import annotations

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
    from .course import nbgrader_api, nbgrader_config

    config = nbgrader_config(Path(job["root"]), db_path=Path(job["db_path"]),
                             submitted_dir=Path(job["submitted_dir"]),
                             workdir=Path(job["scratch_dir"]),
                             cell_timeout_s=job["cell_timeout_s"])
    api = nbgrader_api(config)
    result = api.autograde(job["assignment_id"], job["student_id"], force=True, create=True)
    return {"success": bool(result.get("success")), "error": result.get("error", ""),
            "log": result.get("log", "")}


def main() -> int:
    job = json.loads(Path(sys.argv[1]).read_text())
    # Graded kernels run on the CPU: the same results for every student, and CUDA's huge address
    # space reservations do not collide with the memory limit.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    limit_memory(job.get("memory_limit_bytes"))
    print(json.dumps(run(job)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
