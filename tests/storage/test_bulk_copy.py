"""The PostgreSQL bulk enqueue (COPY): jobs due at once on the database's clock leave run_at and
created_at to the column defaults; a delayed job or a fixed clock sends both. Either way every
job of one call gets the same instants, and the arguments and options arrive as given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from onthedot.domain.jobs import NewJob
from onthedot.storage.postgres.storage import PostgresStorage
from tests.storage.contract.conftest import T0


def rows(url: str, ids: list[int]) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT id, name, queue, priority, args, kwargs, run_at, created_at, max_attempts,"
            " timeout, lock_key FROM onthedot_jobs WHERE id = ANY(%s) ORDER BY id",
            (ids,),
        ).fetchall()


def db_now(url: str) -> datetime:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    return row[0]


def job(n: int, **options: object) -> NewJob:
    return NewJob(
        "bulk.job",
        [n, "tab\there", "back\\slash"],
        {"k": n},
        queue="bq",
        priority=3,
        max_attempts=5,
        timeout=2.5,
        args_json=None,
        **options,  # type: ignore[arg-type]
    )


def test_jobs_due_at_once_get_the_transactions_instant(pg: PostgresStorage, pg_url: str) -> None:
    before = db_now(pg_url)
    ids = pg.enqueue([job(i) for i in range(3)])
    after = db_now(pg_url)
    got = rows(pg_url, ids)
    assert [r[0] for r in got] == ids
    instants = {r[6] for r in got} | {r[7] for r in got}
    assert len(instants) == 1  # run_at == created_at, one instant for the whole call
    (instant,) = instants
    assert isinstance(instant, datetime) and before <= instant <= after
    for i, r in enumerate(got):
        assert r[1:6] == ("bulk.job", "bq", 3, [i, "tab\there", "back\\slash"], {"k": i})
        assert r[8:] == (5, 2.5, None)


def test_a_delayed_job_in_the_call_dates_every_row(pg: PostgresStorage, pg_url: str) -> None:
    later = datetime(2040, 1, 1, tzinfo=UTC)
    ids = pg.enqueue([job(1), job(2, run_at=later, lock_key="L")])
    first, second = rows(pg_url, ids)
    assert first[7] == second[7]  # one created_at for the call
    assert first[6] == first[7]  # the job without run_at is due when it was created
    assert second[6] == later and second[10] == "L"


def test_a_fixed_clock_is_written_as_given(pg: PostgresStorage, pg_url: str) -> None:
    ids = pg.at(T0).enqueue([job(1), job(2, run_at=T0 + timedelta(minutes=5))])
    first, second = rows(pg_url, ids)
    assert first[6] == first[7] == second[7] == T0
    assert second[6] == T0 + timedelta(minutes=5)
