"""onthedot behind PgBouncer in transaction mode (`?pooler=transaction`): its URL options, no
server-side prepared statements, migrations through the pooler or on the direct URL, and the
polling fallback when no direct URL carries LISTEN. The conformance suite and a chaos test run
through PgBouncer too (tests/storage/contract, tests/torture/test_chaos.py)."""

from __future__ import annotations

import threading
from urllib.parse import quote

import pytest

from onthedot import App
from onthedot.config import parse_database_url
from onthedot.domain.errors import ConfigurationError
from onthedot.domain.jobs import NewJob
from onthedot.storage.postgres.storage import PostgresStorage
from onthedot.storage.postgres.wakeup import PostgresWakeup
from onthedot.storage.wakeup import Wakeup
from tests.conftest import pgbouncer_url
from tests.waiting import wait_for

DIRECT = "postgresql://app:s3cret@db:5432/app"


def test_pooler_and_direct_url_are_taken_off_the_url() -> None:
    url = f"postgresql://app@bouncer:6432/app?pooler=transaction&direct_url={quote(DIRECT)}"
    cfg = parse_database_url(url + "&connect_timeout=5")
    assert cfg.url == "postgresql://app@bouncer:6432/app?connect_timeout=5"
    assert cfg.pooler == "transaction"
    assert cfg.direct_url == DIRECT
    assert "s3cret" not in cfg.display and "s3cret" not in str(parse_database_url(url).display)
    assert parse_database_url("postgresql://a@h/db").pooler == "none"


def test_direct_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONTHEDOT_DIRECT_DATABASE_URL", DIRECT)
    assert parse_database_url("postgresql://a@h/db?pooler=transaction").direct_url == DIRECT
    explicit = parse_database_url(f"postgresql://a@h/db?direct_url={quote('postgresql://x@y/z')}")
    assert explicit.direct_url == "postgresql://x@y/z"


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("pooler=statement", "unknown pooler 'statement'"),
        (f"direct_url={quote('sqlite:///x.db')}", "is not a PostgreSQL URL"),
        (f"direct_url={quote('postgresql://a@h/db?pooler=transaction')}", "takes no pooler="),
    ],
)
def test_bad_pooler_options_get_one_line(query: str, words: str) -> None:
    with pytest.raises(ConfigurationError, match=words) as info:
        parse_database_url(f"postgresql://a@h/db?{query}")
    assert "\n" not in str(info.value)


def test_no_prepared_statements_through_a_transaction_pooler(
    pgbouncer_db: tuple[object, str],
) -> None:
    url = pgbouncer_url(pgbouncer_db, direct=False)
    app = App(url, log_events=False, pool_size=4)
    try:
        assert app.migrate()  # through PgBouncer: the advisory lock is transaction-scoped
        storage = app.storage
        assert isinstance(storage, PostgresStorage)
        with storage._read() as conn:
            assert conn.prepare_threshold is None

        def churn(i: int) -> None:
            for _ in range(15):  # past psycopg's prepare threshold (5), on mixed server conns
                (job_id,) = storage.enqueue([NewJob(name=f"churn-{i}", args=[], kwargs={})])
                assert storage.get_job(job_id) is not None
                storage.queue_stats()

        threads = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert storage.queue_stats()  # and nothing raised "prepared statement ... does not exist"
        assert sum(s.queued for s in storage.queue_stats()) == 60
    finally:
        app.close()


def test_listen_uses_the_direct_url_else_the_worker_polls(
    pgbouncer_db: tuple[object, str],
) -> None:
    cfg = parse_database_url(pgbouncer_url(pgbouncer_db))
    with_direct = PostgresStorage(cfg.url, pooler=cfg.pooler, direct_url=cfg.direct_url)
    assert isinstance(with_direct.wakeup({"default"}), PostgresWakeup)
    with_direct.close()

    url = pgbouncer_url(pgbouncer_db, direct=False)
    app = App(url, log_events=False)
    app.migrate()
    ran = threading.Event()

    @app.job(name="polled")
    def polled() -> None:
        ran.set()

    storage = app.storage
    wakeup = storage.wakeup({"default"})
    assert type(wakeup) is Wakeup  # no LISTEN through the pooler: a plain, polling wait
    other = App(url, log_events=False)
    worker = app.worker(install_signals=False, scheduler=False, poll_interval=0.2)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        # another process's enqueue: no notification reaches the worker, its next poll finds it
        other.storage.enqueue([NewJob(name="polled", args=[], kwargs={})])
        wait_for(ran.is_set, "the polling worker to run the job", 30)
    finally:
        worker.stop()
        thread.join(30)
        other.close()
        app.close()
