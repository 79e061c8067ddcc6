"""SQLite's insert of one job (an enqueue, or a slot's job in a tick), by the `enqueue_one`
query with named parameters; a taken unique key answers with the job holding it."""

from __future__ import annotations

import sqlite3

from onthedot.domain.jobs import NewJob
from onthedot.storage.sqlfile import load_queries
from onthedot.storage.sqlite.timeconv import opt_ts, slot_ts

Q = load_queries("sqlite")


def insert_job(conn: sqlite3.Connection, job: NewJob, now: float) -> int:
    """Insert one job; a taken unique_key yields the id of the job holding it."""
    args, kwargs = job.encoded()
    params = {
        "name": job.name,
        "queue": job.queue,
        "priority": job.priority,
        "args": args,
        "kwargs": kwargs,
        "run_at": opt_ts(job.run_at),
        "now": now,
        "max_attempts": job.max_attempts,
        "timeout": job.timeout,
        "unique_key": job.unique_key,
        "schedule_key": job.schedule_key,
        "slot": None if job.slot is None else slot_ts(job.slot),
        "lock_key": job.lock_key,
        "limit_key": job.limit_key,
        "limits": job.limits,
    }
    row = conn.execute(Q["enqueue_one"], params).fetchone()
    if row is None:
        row = conn.execute(Q["find_unique"], {"unique_key": job.unique_key}).fetchone()
    return int(row[0])
