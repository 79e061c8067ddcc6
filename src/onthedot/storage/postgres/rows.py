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


def job_params(job: NewJob, now: datetime | None) -> dict[str, object]:
    args, kwargs = job.encoded()
    return {
        "name": job.name,
        "queue": job.queue,
        "priority": job.priority,
        "args": args,
        "kwargs": kwargs,
        "run_at": job.run_at,
        "now": now,
        "max_attempts": job.max_attempts,
        "timeout": job.timeout,
        "unique_key": job.unique_key,
        "schedule_key": job.schedule_key,
        "slot": job.slot,
        "lock_key": job.lock_key,
    }


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
                    cur.execute(Q["find_unique"], params)
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
                    await cur.execute(Q["find_unique"], params)
                    row = await cur.fetchone()
                if row is not None:
                    ids.append(int(row[0]))
                    break
            else:  # pragma: no cover - only under extreme churn of one key
                raise RuntimeError(f"could not enqueue job with unique_key {job.unique_key!r}")
    return ids
