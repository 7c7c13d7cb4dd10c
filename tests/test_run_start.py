"""What a grading run does before its first job, made cheaper (issue 30) without changing what it
makes: a new gradebook gets nbgrader's migration head from this process instead of an ``alembic
heads`` subprocess, and is the database nbgrader itself makes; the Dask cluster starts in the
background once the run's arguments hold (a run refused for an unknown assignment, late
penalty or due date starts none), its workers with the
grading code imported, and a failed start is raised where the client is asked for, not hung on."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
from datetime import datetime, timezone

import dask
import pytest
from distributed.client import ClosedClientError

from autograder.grading.jobs.cluster import WORKER_PRELOAD, ClusterStart
from autograder.grading.nbgrader_api import alembic_head, sqlite_url, stamp_new_gradebook
from tests.instructor_course import cell, make_course, released


def _schema(db) -> tuple[list, list]:
    with sqlite3.connect(db) as con:
        tables = sorted(con.execute("SELECT name, sql FROM sqlite_master WHERE type='table'"))
        versions = con.execute("SELECT version_num FROM alembic_version").fetchall()
    return tables, versions


def test_the_migration_head_is_the_one_alembic_heads_prints(monkeypatch):
    from nbgrader.api import get_alembic_version

    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    assert alembic_head() == get_alembic_version()  # nbgrader's own: the `alembic heads` command


def test_a_released_gradebook_is_the_database_nbgrader_makes(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    course = make_course(tmp_path / "course", {"tiny": [
        cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", answer=True),
        cell("assert x == 1", "test_x", points=1)]})
    released(course, ["tiny"], tmp_path / "release")  # through stamp_new_gradebook
    ours = tmp_path / "release" / "gradebook.db"
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    with Gradebook(sqlite_url(tmp_path / "nbgrader.db")):  # nbgrader alone, alembic subprocess
        pass
    tables, versions = _schema(ours)
    assert (tables, versions) == _schema(tmp_path / "nbgrader.db") and versions == [(alembic_head(),)]
    with Gradebook(sqlite_url(ours)) as gb:
        assert [c.name for c in gb.find_assignment("tiny").notebooks[0].grade_cells] == ["test_x"]


def test_a_gradebook_with_tables_is_left_alone(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE grade (id TEXT)")
        con.execute("INSERT INTO grade VALUES ('kept')")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    stamp_new_gradebook(sqlite_url(db))
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_the_cluster_starts_in_the_background_with_the_grading_code_imported():
    with ClusterStart(1) as cluster:
        imported = cluster.client().run(lambda: all(m in sys.modules for m in WORKER_PRELOAD))
    assert list(imported.values()) == [True]
    with pytest.raises(ClosedClientError):  # closed on leaving
        cluster.client().submit(sum, [1]).result(timeout=30)


def test_a_run_refused_for_its_arguments_starts_no_cluster(tmp_path):
    from autograder.grading.run.pipeline import ClassGrading

    (tmp_path / "class").mkdir()
    refusals = [({"assignment_ids": ["07_nope"]}, "unknown assignment 07_nope"),
                ({"late_penalty": "halve"}, "late penalty 'halve'"),
                ({"assignment_ids": ["01_gradient_tape"],
                  "due": {"02_persistent_nested_tapes": datetime(2026, 12, 1, tzinfo=timezone.utc)}},
                 "a due date for 02_persistent_nested_tapes, which is not graded or released here")]
    for arguments, refusal in refusals:
        with ClusterStart(1) as cluster:
            with pytest.raises(ValueError, match=refusal):
                ClassGrading(tmp_path / "class", tmp_path / "out", cluster=cluster, sandbox=False,
                             **arguments)
        assert not cluster.started, arguments


def test_a_cluster_that_cannot_start_raises_where_the_client_is_asked_for():
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        with pytest.raises(OSError), ClusterStart(1, scheduler="tcp://127.0.0.1:9") as cluster:
            cluster.client()
