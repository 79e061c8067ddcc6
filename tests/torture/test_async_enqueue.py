"""Transactional enqueue from async code (issue 12, item 7), on PostgreSQL with a worker
process: `await fn.aenqueue(..., connection=aconn)` with a psycopg AsyncConnection enqueues
inside the caller's transaction. Rolled back, it leaves no job; committed, its job is there
and a real worker runs it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from onthedot import App, JobFilter, JobState
from tests.torture.chaos_app import create_tables, make_app
from tests.torture.harness import ChaosLog, Fleet, wait_for


class Rollback(Exception):
    pass


@pytest.fixture
def client(private_pg_url: str) -> Iterator[App]:
    application = make_app(private_pg_url, log_events=False)
    application.migrate()
    create_tables(private_pg_url)
    yield application
    application.close()


async def _enqueue(client: App, url: str) -> tuple[int, int, int]:
    work = client.jobs["chaos.work"]
    async with await psycopg.AsyncConnection.connect(url) as aconn:
        await aconn.execute("CREATE TABLE orders (id int)")
        await aconn.commit()
        try:
            async with aconn.transaction():
                await aconn.execute("INSERT INTO orders VALUES (1)")
                rolled_back = await work.aenqueue(1, 0, 10, connection=aconn)
                raise Rollback
        except Rollback:
            pass
        async with aconn.transaction():
            await aconn.execute("INSERT INTO orders VALUES (2)")
            committed = await work.aenqueue(2, 0, 10, connection=aconn, unique_key="order-2")
            again = await work.aenqueue(2, 0, 10, connection=aconn, unique_key="order-2")
        return rolled_back, committed, again


def test_aenqueue_inside_an_async_transaction(
    client: App, private_pg_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    rolled_back, committed, again = asyncio.run(_enqueue(client, private_pg_url))
    assert again == committed  # the unique_key holder, seen inside the same transaction
    assert client.get_job(rolled_back) is None
    assert [j.id for j in client.list_jobs()] == [committed]
    with psycopg.connect(private_pg_url) as conn:
        assert conn.execute("SELECT id FROM orders").fetchall() == [(2,)]
    fleet = Fleet(private_pg_url, tmp_path, ChaosLog())
    try:
        fleet.wait_started(fleet.start("--no-scheduler"))

        def done() -> bool:
            job = client.get_job(committed)
            return job is not None and job.state is JobState.SUCCEEDED

        wait_for(done, "the worker to run the committed job")
        fleet.stop_all()
    finally:
        fleet.close()
    assert client.storage.count_jobs(JobFilter()) == 1
    record_result.update(rolled_back=rolled_back, committed=committed)
