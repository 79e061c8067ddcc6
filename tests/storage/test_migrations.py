"""Migrations: zero to latest on both backends, idempotent, safe under concurrency (threads and
processes), the schema check of a PostgreSQL app, and both dialects building the same schema."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from onthedot import App, SchemaOutOfDate
from onthedot.config import parse_database_url
from onthedot.storage import open_storage
from onthedot.storage.interface import Storage
from onthedot.storage.sqlfile import load_migrations
from tests.storage.contract.conftest import T0, new_job, run_threads

Catalog = dict[str, set[str]]


def _latest(url: str) -> int:
    backend = "sqlite" if url.startswith("sqlite") else "postgres"
    return len(load_migrations(backend))


@pytest.fixture
def bare(db_url: str) -> Iterator[Storage]:
    """A storage on an empty database that migrates only when told to."""
    storage = open_storage(db_url, auto_migrate=False)
    yield storage
    storage.close()


def test_migrate_from_zero_to_latest(bare: Storage, db_url: str) -> None:
    latest = _latest(db_url)
    assert latest >= 1
    assert bare.schema_version() == (0, latest)
    assert bare.migrate() == list(range(1, latest + 1))
    assert bare.schema_version() == (latest, latest)
    (job_id,) = bare.at(T0).enqueue([new_job("m")])
    assert bare.get_job(job_id) is not None


def test_migrate_twice_is_idempotent(bare: Storage, db_url: str) -> None:
    latest = _latest(db_url)
    bare.migrate()
    (job_id,) = bare.at(T0).enqueue([new_job("keep", args=[1])])
    assert bare.migrate() == []
    assert bare.migrate() == []
    assert bare.schema_version() == (latest, latest)
    kept = bare.get_job(job_id)
    assert kept is not None and kept.args == [1]


def test_concurrent_migrate_from_threads(db_url: str) -> None:
    n = 5
    storages = [open_storage(db_url, auto_migrate=False) for _ in range(n)]
    try:
        applied = run_threads(n, lambda i: storages[i].migrate())
    finally:
        for s in storages:
            s.close()
    latest = _latest(db_url)
    assert sorted(v for versions in applied for v in versions) == list(range(1, latest + 1))
    with _opened(db_url) as check:
        assert check.schema_version() == (latest, latest)


def test_threads_opening_a_new_sqlite_file_at_once_all_connect(tmp_path: Path) -> None:
    """Connections opening a new SQLite file at the same moment: the switch to WAL mode
    failed at once with "database is locked" in a few percent of such starts (SQLite does not
    wait on the busy timeout there), as `test_concurrent_migrate_from_threads` did once in CI.
    200 new files, 5 threads each opening one storage's first connection at once."""
    n, files = 5, 200
    for f in range(files):
        url = f"sqlite:///{tmp_path}/new{f}.db"
        storages = [open_storage(url, auto_migrate=False) for _ in range(n)]
        try:
            versions = run_threads(n, lambda i, opened=storages: opened[i].schema_version())
        finally:
            for s in storages:
                s.close()
        assert versions == [(0, _latest(url))] * n


def test_concurrent_migrate_from_processes(db_url: str) -> None:
    n = 3
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "onthedot", "--database", db_url, "migrate"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    outputs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, f"migrate exited {p.returncode}: {err.strip()[-500:]}"
        outputs.append(out)
    latest = _latest(db_url)
    applied = [o for o in outputs if o.startswith("applied migration")]
    assert len(applied) == 1, outputs  # exactly one process did the work
    assert all(f"version {latest}" in o for o in outputs), outputs
    with _opened(db_url) as check:
        assert check.schema_version() == (latest, latest)


@contextmanager
def _opened(url: str) -> Iterator[Storage]:
    """A storage for a check, closed afterwards."""
    storage = open_storage(url, auto_migrate=False)
    try:
        yield storage
    finally:
        storage.close()


def test_postgres_app_refuses_a_schema_behind(pg_url: str) -> None:
    latest = _latest(pg_url)
    app = App(pg_url, log_events=False)

    @app.job(name="x")
    def x() -> None: ...

    try:
        with pytest.raises(SchemaOutOfDate) as info:
            x.enqueue()
        message = str(info.value)
        assert "\n" not in message
        assert "onthedot migrate" in message and f"needs {latest}" in message
        assert "version 0" in message
        with pytest.raises(SchemaOutOfDate):
            app.list_jobs()  # refused again, not just once
        assert app.migrate() == list(range(1, latest + 1))  # catching up makes it usable
        assert app.get_job(x.enqueue()) is not None
    finally:
        app.close()

    # A database whose recorded version is behind this code (as after a downgrade of the data).
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM onthedot_schema_version WHERE version = %s", (latest,))
    behind = App(pg_url, log_events=False)
    try:
        with pytest.raises(SchemaOutOfDate, match=r"version \d+, .*run `onthedot migrate`"):
            behind.list_jobs()
    finally:
        behind.close()


def test_postgres_app_refuses_a_schema_ahead(pg_url: str) -> None:
    latest = _latest(pg_url)
    App(pg_url, log_events=False).migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO onthedot_schema_version (version, name) VALUES (%s, 'future')",
            (latest + 1,),
        )
    ahead = App(pg_url, log_events=False)
    try:
        with pytest.raises(SchemaOutOfDate, match="upgrade onthedot"):
            ahead.list_jobs()
    finally:
        ahead.close()


def test_sqlite_app_migrates_itself(sqlite_url: str) -> None:
    app = App(sqlite_url, log_events=False)
    try:
        assert app.list_jobs() == []
        latest = _latest(sqlite_url)
        assert app.storage.schema_version() == (latest, latest)
    finally:
        app.close()


def _sqlite_catalog(url: str) -> Catalog:
    path = parse_database_url(url).path
    assert path is not None
    with sqlite3.connect(path) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'onthedot%'"
            )
        }
        # Indexes written in the migration (automatic ones for keys have no SQL).
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            )
        }
        catalog: Catalog = {"tables": tables, "indexes": indexes}
        for table in tables:
            columns = conn.execute(f"SELECT name FROM pragma_table_info('{table}')")
            catalog[table] = {r[0] for r in columns}
    conn.close()
    return catalog


def _postgres_catalog(url: str) -> Catalog:
    with psycopg.connect(url, autocommit=True) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_name LIKE 'onthedot%%'"
            )
        }
        # Indexes written in the migration (not the ones backing a key constraint).
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT c.relname FROM pg_index i"
                " JOIN pg_class c ON c.oid = i.indexrelid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = current_schema()"
                " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)"
            )
        }
        catalog: Catalog = {"tables": tables, "indexes": indexes}
        for table in tables:
            columns = conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = %s",
                (table,),
            )
            catalog[table] = {r[0] for r in columns}
    return catalog


def test_both_dialects_build_the_same_schema(sqlite_url: str, pg_url: str) -> None:
    for url in (sqlite_url, pg_url):
        with _opened(url) as storage:
            storage.migrate()
    lite, pg = _sqlite_catalog(sqlite_url), _postgres_catalog(pg_url)
    assert "onthedot_jobs" in lite["tables"] and "onthedot_jobs_ready" in lite["indexes"]
    assert lite["tables"] == pg["tables"]
    assert lite["indexes"] == pg["indexes"]
    for table in sorted(lite["tables"]):
        assert lite[table] == pg[table], table


def _run_three(execute: Any, mark: str, started: object, finished: object) -> None:
    """The first three jobs of q1 claimed, the first of them succeeded."""
    execute(
        f"UPDATE onthedot_jobs SET state = 'running', worker_id = 'w', attempts = 1, "
        f"started_at = {mark}, lease_until = {mark} WHERE id IN (SELECT id FROM onthedot_jobs "
        "WHERE queue = 'q1' ORDER BY id LIMIT 3)",
        (started, started),
    )
    execute(
        f"UPDATE onthedot_jobs SET state = 'succeeded', finished_at = {mark} WHERE id = "
        "(SELECT min(id) FROM onthedot_jobs WHERE queue = 'q1')",
        (finished,),
    )


def test_queue_counts_are_filled_from_jobs_made_before_them(
    bare: Storage, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onthedot.storage.postgres import storage as pg_module
    from onthedot.storage.sqlite import storage as sqlite_module
    from tests.storage.contract.conftest import at
    from tests.storage.contract.test_queue_counts import check

    def up_to_3(backend: str) -> tuple[tuple[int, str, str], ...]:
        return load_migrations(backend)[:3]

    for module in (pg_module, sqlite_module):
        monkeypatch.setattr(module, "load_migrations", up_to_3)
    assert bare.migrate() == [1, 2, 3]  # the schema before the job counts
    # Jobs written as that schema's code wrote them (today's statements name later columns):
    # five in q1 (one succeeded, two running), one delayed in default, one in q2.
    t0, t60 = T0.timestamp(), at(60).timestamp()
    rows = [("a", "q1", t0)] * 5 + [("b", "default", t60), ("c", "q2", t0)]
    if db_url.startswith("postgresql"):
        with psycopg.connect(db_url, autocommit=True) as conn:
            for name, queue, ts in rows:
                conn.execute(
                    "INSERT INTO onthedot_jobs (name, queue, run_at, created_at) "
                    "VALUES (%s, %s, to_timestamp(%s), to_timestamp(%s))",
                    (name, queue, ts, t0),
                )
            _run_three(conn.execute, "%s", at(1), at(2))
    else:
        path = parse_database_url(db_url).path
        with sqlite3.connect(str(path)) as lite:
            lite.executemany(
                "INSERT INTO onthedot_jobs (name, queue, run_at, created_at) VALUES (?, ?, ?, ?)",
                [(n, q, ts, t0) for n, q, ts in rows],
            )
            _run_three(lite.execute, "?", at(1).timestamp(), at(2).timestamp())
    monkeypatch.undo()
    assert bare.migrate() == list(range(4, _latest(db_url) + 1))
    check(bare, at(2))
    check(bare, at(61))
    bare.at(at(3)).enqueue([new_job("a", queue="q1")])  # and kept from then on
    check(bare, at(3))


def _function_bodies(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """Each onthedot function of the test's schema: its body as PostgreSQL keeps it."""
    rows = conn.execute(
        "SELECT p.proname, p.prosrc FROM pg_proc p"
        " WHERE p.proname LIKE 'onthedot\\_%%' AND p.pronamespace = current_schema()::regnamespace"
    ).fetchall()
    return {name: body for name, body in rows}


def _function_settings(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    rows = conn.execute(
        "SELECT p.proname, p.proconfig FROM pg_proc p"
        " WHERE p.proname LIKE 'onthedot\\_%%' AND p.proconfig IS NOT NULL"
        " AND p.pronamespace = current_schema()::regnamespace"
    ).fetchall()
    return {name: list(config) for name, config in rows}


def test_functions_sql_holds_every_function_and_migrate_reapplies_it(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PostgreSQL function bodies are read and changed in one file (functions.sql), which
    every migrate re-applies: a function changed by hand (or left behind by an older migration)
    is back to the file's body after `migrate`, even with no migration left to apply, and with
    the settings the migrations gave it (a CREATE OR REPLACE resets the ones it does not name)."""
    import re

    from onthedot.storage.postgres import storage as pg_module
    from onthedot.storage.sqlfile import load_functions

    text = load_functions("postgres")
    written = dict(re.findall(r"FUNCTION (\w+)\(.*?AS \$\$(.*?)\$\$;", text, re.S))
    migrations = "\n".join(sql for _, _, sql in load_migrations("postgres"))
    # Every function a migration ever made is in the file.
    assert set(re.findall(r"FUNCTION (\w+)\(", migrations)) == set(written)
    with monkeypatch.context() as patched:  # the migrations alone, as they were written
        patched.setattr(pg_module, "load_functions", lambda backend: "SELECT 1")
        bare = open_storage(pg_url, auto_migrate=False)
        try:
            bare.migrate()
        finally:
            bare.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        settings = _function_settings(conn)
    assert settings["onthedot_queue_priorities"] == ["enable_seqscan=off"]  # migration 0006's
    app = App(pg_url, log_events=False)
    try:
        assert app.migrate() == []  # nothing left to apply: functions.sql alone
        with psycopg.connect(pg_url, autocommit=True) as conn:
            assert _function_bodies(conn) == written
            assert _function_settings(conn) == settings
            conn.execute(
                "CREATE OR REPLACE FUNCTION onthedot_notify_jobs() RETURNS trigger"
                " LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
            )
            assert _function_bodies(conn)["onthedot_notify_jobs"] != written["onthedot_notify_jobs"]
        assert app.migrate() == []
        with psycopg.connect(pg_url, autocommit=True) as conn:
            assert _function_bodies(conn) == written  # before: the hand-made body stayed
    finally:
        app.close()
