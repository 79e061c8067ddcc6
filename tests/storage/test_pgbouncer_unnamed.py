"""Issue 25 item 5: onthedot behind PgBouncer in transaction mode, with a URL that does not say
so (no `?pooler=transaction`). Before, every worker failed on its first prepared statement
(`DuplicatePreparedStatement` / `prepared statement ... does not exist`), was restarted, and
ran none of 500 jobs. Now the first refusal turns prepared statements off for the process, one
warning line names the URL option, and every job runs once: real `onthedot worker` processes
through a real PgBouncer."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote

import pytest

from onthedot import App, JobState
from onthedot.domain.jobs import NewJob
from onthedot.storage.postgres.storage import PostgresStorage
from tests.conftest import pgbouncer_url

ROOT = Path(__file__).resolve().parents[2]
JOBS = 500


def urls(pgbouncer_db: tuple[object, str]) -> tuple[str, str]:
    """(the URL through PgBouncer without any pooler option, the direct URL)."""
    named = pgbouncer_url(pgbouncer_db)  # ...?pooler=transaction&direct_url=<direct>
    through = named.partition("?")[0]
    return through, unquote(named.rpartition("direct_url=")[2])


def test_worker_tree_through_an_unnamed_transaction_pooler(
    pgbouncer_db: tuple[object, str], tmp_path: Path
) -> None:
    through, direct = urls(pgbouncer_db)
    setup = App(direct, log_events=False)
    setup.migrate()
    setup.job(name="bouncer.noop")(lambda i: i)
    ids = setup.jobs["bouncer.noop"].enqueue_many([(i,) for i in range(JOBS)])
    env = dict(os.environ, ONTHEDOT_DATABASE_URL=through, PYTHONUNBUFFERED="1")
    env.pop("ONTHEDOT_APP", None)
    command = [sys.executable, "-m", "onthedot", "--app", "tests.storage.bouncer_app:app"]
    result = subprocess.run(
        [*command, "worker", "--burst", "--processes", "2", "-c", "4"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        jobs = [setup.get_job(i) for i in ids]
    finally:
        setup.close()
    assert result.returncode == 0, result.stderr
    assert {job.state for job in jobs if job} == {JobState.SUCCEEDED}, result.stderr[-3000:]
    assert {job.attempts for job in jobs if job} == {1}
    warnings = [
        line for line in result.stderr.splitlines() if "sends unprepared statements" in line
    ]
    assert warnings, result.stderr[-3000:]
    assert all("?pooler=transaction" in line for line in warnings)
    assert len(warnings) <= 3  # once per process at most (the supervisor and 2 children)
    assert "Traceback" not in result.stderr
    assert "worker_process_restarted" not in result.stderr


def test_many_threads_through_an_unnamed_pooler_lose_nothing(
    pgbouncer_db: tuple[object, str],
) -> None:
    """In-process callers (enqueue, reads) on a pool of several connections: none of them
    sees the refusal; every enqueue is stored once."""
    through, direct = urls(pgbouncer_db)
    setup = App(direct, log_events=False)
    setup.migrate()
    setup.close()
    app = App(through, log_events=False, pool_size=4)
    errors: list[BaseException] = []

    def churn(i: int) -> None:
        try:
            for _ in range(15):  # past psycopg's prepare threshold (5), on mixed server conns
                (job_id,) = app.storage.enqueue([NewJob(name=f"churn-{i}", args=[], kwargs={})])
                assert app.storage.get_job(job_id) is not None
                app.storage.queue_stats()
        except BaseException as exc:  # reported below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        assert sum(s.queued for s in app.storage.queue_stats()) == 60
    finally:
        app.close()


def test_a_refused_prepared_statement_switches_the_storage_off_preparing(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A pooler that PgBouncer's process-id sign does not reveal is found by its first refused
    prepared statement: here the server forgets the connection's prepared statements
    (`DEALLOCATE ALL`, as a pooler handing it another server connection would look)."""
    app = App(pg_url, log_events=False, pool_size=1)
    app.migrate()
    storage = app.storage
    assert isinstance(storage, PostgresStorage)
    try:
        for _ in range(3):
            storage.queue_stats()  # prepared at once (prepare=True)
        with storage._read() as conn:
            assert conn.prepared_max and conn.prepare_threshold is not None
            conn.pgconn.exec_(b"DEALLOCATE ALL")  # behind psycopg's back, as a pooler is
        with caplog.at_level(logging.WARNING, logger="onthedot.storage"):
            for _ in range(3):
                assert storage.queue_stats() == []  # the first one ran again, unprepared
        lines = [r.getMessage() for r in caplog.records if "sends unprepared" in r.getMessage()]
        assert len(lines) == 1 and "does not exist" in lines[0], lines
        with storage._read() as conn:
            assert conn.prepare_threshold is None
    finally:
        app.close()
