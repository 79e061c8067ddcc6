"""Many plain jobs at once: COPY in text format, the lines built here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from onthedot.domain.jobs import NewJob
from onthedot.storage.sqlfile import load_queries

Q = load_queries("postgres")
_N = "\\N"  # NULL in COPY's text format
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value: str) -> str:
    """A value escaped for COPY's text format."""
    return value.translate(_COPY_ESCAPES)


def enqueue_copy(
    conn: psycopg.Connection[Any], jobs: Sequence[NewJob], now: datetime | None
) -> list[int]:
    """COPY in text format, built here: per row only the id and the JSON vary, the rest of
    the line is shared by every job with the same options.

    Jobs that run as soon as possible, on the database's clock (the common bulk enqueue), leave
    run_at and created_at to their default, now(): the transaction's instant, as before, without
    reading it first or parsing two timestamps per row (~15 % of the server's time per row)."""
    ids = [r[0] for r in conn.execute(Q["allocate_ids"], {"n": len(jobs)}).fetchall()]
    start: datetime | None = None  # None: run_at and created_at left to the database
    if now is not None or any(job.run_at is not None for job in jobs):
        start = now or conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
    created = "" if start is None else start.isoformat()
    shared: dict[tuple[object, ...], tuple[str, str]] = {}
    lines: list[str] = []
    statement = Q["enqueue_copy_now"] if start is None else Q["enqueue_copy"]
    with conn.cursor() as cur, cur.copy(statement) as copy:
        for job_id, job in zip(ids, jobs, strict=True):
            options = (
                job.name,
                job.queue,
                job.priority,
                job.run_at,
                job.max_attempts,
                job.timeout,
                job.schedule_key,
                job.slot,
                job.lock_key,
            )
            parts = shared.get(options)
            if parts is None:
                head = f"{_copy_text(job.name)}\t{_copy_text(job.queue)}\t{job.priority}"
                fields = [
                    str(job.max_attempts),
                    _N if job.timeout is None else repr(job.timeout),
                    _N if job.schedule_key is None else _copy_text(job.schedule_key),
                    _N if job.slot is None else job.slot.isoformat(),
                    _N if job.lock_key is None else _copy_text(job.lock_key),
                ]
                if start is not None:
                    fields = [(job.run_at or start).isoformat(), *fields, created]
                parts = shared[options] = (head, "\t".join(fields))
            args, kwargs = job.encoded()
            if "\\" in args:
                args = args.replace("\\", "\\\\")
            if "\\" in kwargs:
                kwargs = kwargs.replace("\\", "\\\\")
            lines.append(f"{job_id}\t{parts[0]}\t{args}\t{kwargs}\t{parts[1]}\n")
            if len(lines) >= 5000:
                copy.write("".join(lines))
                lines.clear()
        if lines:
            copy.write("".join(lines))
    return ids
