"""What the last run recorded of each submission, so that an unchanged one is not graded again.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from autograder.grading.intake.submissions import (
    Submission,
)
from autograder.grading.layout import OutputLayout


def fingerprint(folder: Path) -> str:
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
