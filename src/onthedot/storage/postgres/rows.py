"""Row-at-a-time job inserts, shared by enqueue and the operator's slot records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from onthedot.domain.jobs import NewJob
from onthedot.steps import Steps, arun, run
from onthedot.storage.interface import CallerConnection
from onthedot.storage.sqlfile import load_queries

Q = load_queries("postgres")


def job_params(job: NewJob, now: datetime | None) -> tuple[object, ...]:
    """The parameters of `enqueue_one`, in its (positional) order."""
    args, kwargs = job.encoded()
    return (
        job.name,
        job.queue,
        job.priority,
        args,
        kwargs,
        job.run_at,
        now,
        job.max_attempts,
        job.timeout,
        job.unique_key,
        job.schedule_key,
        job.slot,
        job.lock_key,
        job.limit_key,
        job.limits,
        now,
    )


# A statement to run and whether to prepare it; the answer is its first row (None: no row).
Statement = tuple[str, Sequence[Any] | Mapping[str, Any], bool | None]
Row = tuple[Any, ...] | None


def _enqueue_steps(
    jobs: Sequence[NewJob], now: datetime | None
) -> Steps[Statement, Row, list[int]]:
    """Insert jobs one statement each (prepared); a taken unique_key yields the holder's id."""
    ids: list[int] = []
    for job in jobs:
        params = job_params(job, now)
        for _ in range(5):
            row = yield Q["enqueue_one"], params, True
            if row is None and job.unique_key is not None:
                row = yield Q["find_unique"], {"unique_key": job.unique_key}, None
            if row is not None:
                ids.append(int(row[0]))
                break
        else:  # pragma: no cover - only under extreme churn of one key
            raise RuntimeError(f"could not enqueue job with unique_key {job.unique_key!r}")
    return ids


def enqueue_rows(conn: CallerConnection, jobs: Sequence[NewJob], now: datetime | None) -> list[int]:
    """Insert jobs one statement each (prepared); a taken unique_key yields the holder's id."""
    with conn.cursor(row_factory=tuple_row) as cur:  # the caller's connection may use dict_row

        def execute(statement: Statement) -> Row:
            query, params, prepare = statement
            cur.execute(query, params, prepare=prepare)
            row: Row = cur.fetchone()
            return row

        return run(_enqueue_steps(jobs, now), execute)


async def aenqueue_rows(
    conn: psycopg.AsyncConnection[Any], jobs: Sequence[NewJob], now: datetime | None
) -> list[int]:
    """`enqueue_rows` inside the caller's async transaction (a psycopg AsyncConnection)."""
    async with conn.cursor(row_factory=tuple_row) as cur:

        async def execute(statement: Statement) -> Row:
            query, params, prepare = statement
            await cur.execute(query, params, prepare=prepare)
            return await cur.fetchone()

        return await arun(_enqueue_steps(jobs, now), execute)
