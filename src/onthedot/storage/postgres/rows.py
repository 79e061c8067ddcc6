"""Row-at-a-time job inserts, shared by enqueue and the operator's slot records."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from onthedot.domain.jobs import NewJob
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


def enqueue_rows(conn: CallerConnection, jobs: Sequence[NewJob], now: datetime | None) -> list[int]:
    """Insert jobs one statement each (prepared); a taken unique_key yields the holder's id."""
    ids: list[int] = []
    with conn.cursor(row_factory=tuple_row) as cur:  # the caller's connection may use dict_row
        for job in jobs:
            params = job_params(job, now)
            for _ in range(5):
                cur.execute(Q["enqueue_one"], params, prepare=True)
                row = cur.fetchone()
                if row is None and job.unique_key is not None:
                    cur.execute(Q["find_unique"], {"unique_key": job.unique_key})
                    row = cur.fetchone()
                if row is not None:
                    ids.append(int(row[0]))
                    break
            else:  # pragma: no cover - only under extreme churn of one key
                raise RuntimeError(f"could not enqueue job with unique_key {job.unique_key!r}")
    return ids


async def aenqueue_rows(
    conn: psycopg.AsyncConnection[Any], jobs: Sequence[NewJob], now: datetime | None
) -> list[int]:
    """`enqueue_rows` inside the caller's async transaction (a psycopg AsyncConnection)."""
    ids: list[int] = []
    async with conn.cursor(row_factory=tuple_row) as cur:
        for job in jobs:
            params = job_params(job, now)
            for _ in range(5):
                await cur.execute(Q["enqueue_one"], params, prepare=True)
                row = await cur.fetchone()
                if row is None and job.unique_key is not None:
                    await cur.execute(Q["find_unique"], {"unique_key": job.unique_key})
                    row = await cur.fetchone()
                if row is not None:
                    ids.append(int(row[0]))
                    break
            else:  # pragma: no cover - only under extreme churn of one key
                raise RuntimeError(f"could not enqueue job with unique_key {job.unique_key!r}")
    return ids
