"""The PostgreSQL job counts: an append-only table of deltas and its compaction, which must lose
no delta beside concurrent writers (their transactions committed before, during or after it)."""

from __future__ import annotations

import threading

import psycopg
import pytest

from onthedot.domain.jobs import JobFilter, JobState, Outcome, OutcomeKind
from onthedot.storage import open_storage
from onthedot.storage.interface import Storage
from onthedot.storage.postgres.storage import PostgresStorage
from onthedot.storage.sql.base import COMPACT_AT
from onthedot.storage.sqlfile import load_queries
from tests.storage.contract.conftest import T0, at, new_job, run_threads
from tests.storage.contract.test_queue_counts import check

INSERT_JOB = (
    "INSERT INTO onthedot_jobs (name, queue, run_at, created_at)"
    " VALUES ('raw', 'r', '2030-01-01Z', '2030-01-01Z')"
)


def count_rows(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM onthedot_job_counts").fetchone()
    assert row is not None
    return int(row[0])


def test_each_statement_appends_its_deltas_and_compaction_folds_them(
    pg: PostgresStorage, pg_url: str
) -> None:
    s = pg.at(T0)
    s.enqueue([new_job("a") for _ in range(3)])
    s.enqueue([new_job("b")])
    claimed = pg.at(at(1)).claim_jobs("w", "default", 2, 30)
    pg.at(at(2)).heartbeat("w", 30, held=[j.id for j in claimed], started=[])
    assert count_rows(pg_url) == 2 + 2  # (a) and (b) queued; claim: a queued -2, a running +2
    pg.at(at(3)).finish_jobs("w", [Outcome(j.id, OutcomeKind.SUCCEEDED) for j in claimed])
    assert count_rows(pg_url) == 4 + 2  # the heartbeat added nothing
    assert pg._compact_counts() == 3  # (a, queued) 1, (b, queued) 1, (a, succeeded) 2 ...
    assert count_rows(pg_url) == 3  # ... and (a, running) reached zero: gone
    check(pg, at(3))


def test_compaction_keeps_the_deltas_of_transactions_it_cannot_see(
    pg: PostgresStorage, pg_url: str
) -> None:
    pg.at(T0).enqueue([new_job("a") for _ in range(4)])
    with psycopg.connect(pg_url) as before, psycopg.connect(pg_url) as during:
        before.execute(INSERT_JOB)  # uncommitted when the compaction starts
        with psycopg.connect(pg_url) as compactor:
            compactor.execute(load_queries("postgres")["compact_counts"])
            # A second compaction meanwhile returns at once, doing nothing (the lock is taken).
            assert pg._compact_counts() == 0
            during.execute(INSERT_JOB)  # begun and committed while the compaction is open
            during.commit()
            compactor.commit()
        before.commit()
    check(pg, T0)
    assert {q.queue: q.queued for q in pg.at(T0).queue_stats()} == {"default": 4, "r": 2}
    pg._compact_counts()
    check(pg, T0)
    assert count_rows(pg_url) == 2


@pytest.mark.slow
def test_concurrent_writers_and_compactions_lose_no_delta(pg_url: str) -> None:
    n_writers, rounds = 4, 60
    storages = [open_storage(pg_url, pool_size=2) for _ in range(n_writers + 1)]
    storages[0].migrate()
    done = threading.Event()
    compactions = []

    def compact_loop(storage: Storage) -> None:
        assert isinstance(storage, PostgresStorage)
        while not done.is_set():
            compactions.append(storage._compact_counts())
            storage.queue_stats()

    def writer(i: int) -> None:
        if i == n_writers:
            return compact_loop(storages[i])
        s = storages[i]
        queue = f"q{i % 2}"
        try:
            for r in range(rounds):
                s.enqueue([new_job(f"n{r % 3}", queue=queue) for _ in range(3)])
                s.enqueue([new_job("one", queue=queue)])
                held = s.claim_jobs(f"w{i}", queue, 3, 30)
                kinds = (OutcomeKind.SUCCEEDED, OutcomeKind.FAILED, OutcomeKind.RETRY)
                outcomes = [Outcome(j.id, kinds[(j.id + r) % 3], error="e") for j in held]
                s.finish_jobs(f"w{i}", outcomes)
                if r % 10 == 0:
                    s.bulk_job_action("delete", JobFilter(queue=queue, state=JobState.FAILED))
        finally:
            if i == 0:
                done.set()

    try:
        run_threads(n_writers + 1, writer, timeout=300)
        storage = storages[0]
        assert isinstance(storage, PostgresStorage)
        assert len(compactions) > 3 and any(compactions)
        check(storage, storage.db_now())
        storage._compact_counts()
        check(storage, storage.db_now())
    finally:
        for s in storages:
            s.close()


def test_a_read_compacts_when_it_sums_many_rows(pg: PostgresStorage, pg_url: str) -> None:
    (job_id,) = pg.at(T0).enqueue([new_job("a")])
    flips = COMPACT_AT // 2 + 50  # each single-row update adds two rows
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            f"DO $$ BEGIN FOR i IN 1..{2 * flips} LOOP"
            " UPDATE onthedot_jobs SET state = CASE state WHEN 'queued' THEN 'cancelled'"
            f" ELSE 'queued' END WHERE id = {job_id}; END LOOP; END $$"
        )
    assert count_rows(pg_url) > COMPACT_AT
    check(pg, T0)  # reads the counts, then compacts them
    assert count_rows(pg_url) == 1
    check(pg, T0)


def test_truncating_the_jobs_empties_the_counts(pg: PostgresStorage, pg_url: str) -> None:
    pg.at(T0).enqueue([new_job("a") for _ in range(3)])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("TRUNCATE onthedot_jobs")
    assert pg.at(T0).queue_stats() == [] and pg.queued_by_name() == {}
    pg.at(T0).enqueue([new_job("a")])
    check(pg, T0)
