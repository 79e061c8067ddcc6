"""The queue statistics cell (workload 7): a database holding N stored jobs, and how long the
statistics verbs (`queue_stats`, `queued_by_name`) take on it, against the full count of the
jobs that they replaced (the statements of schema version 3, kept here for the comparison)."""

from __future__ import annotations

import sqlite3
import statistics
import time
from typing import Any

import psycopg

from onthedot.storage import open_storage

# The mix of the stored jobs, per 100 (the rest succeeded): mostly history, as a busy system
# with a retention of days holds; one queued job in 50 waits for a future run_at.
FAILED, CANCELLED, QUEUED, RUNNING = 4, 2, 5, 1
QUEUES, NAMES = 5, 10

PG_FILL = """
INSERT INTO onthedot_jobs (name, queue, state, run_at, created_at, started_at, finished_at,
                           worker_id, lease_until)
SELECT 'n' || (mod(i, %(names)s)), 'q' || (mod(i, %(queues)s)), s,
       CASE WHEN s = 'queued' AND mod(i, 1000) = 6 THEN now() + interval '1 hour'
            ELSE now() - (mod(i, 86400)) * interval '1 second' END,
       now() - interval '1 day', now() - interval '1 day',
       CASE WHEN s IN ('succeeded', 'failed', 'cancelled') THEN now() END,
       CASE WHEN s = 'running' THEN 'bench' END,
       CASE WHEN s = 'running' THEN now() + interval '1 hour' END
FROM (SELECT i, CASE WHEN mod(i, 100) < %(f)s THEN 'failed'
                     WHEN mod(i, 100) < %(c)s THEN 'cancelled'
                     WHEN mod(i, 100) < %(q)s THEN 'queued'
                     WHEN mod(i, 100) < %(r)s THEN 'running'
                     ELSE 'succeeded' END AS s
      FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS i) AS g
"""
SQLITE_FILL = """
WITH RECURSIVE g(i) AS (SELECT :lo UNION ALL SELECT i + 1 FROM g WHERE i < :hi),
t(i, s) AS (SELECT i, CASE WHEN i % 100 < :f THEN 'failed' WHEN i % 100 < :c THEN 'cancelled'
                           WHEN i % 100 < :q THEN 'queued' WHEN i % 100 < :r THEN 'running'
                           ELSE 'succeeded' END FROM g)
INSERT INTO onthedot_jobs (name, queue, state, run_at, created_at, started_at, finished_at,
                           worker_id, lease_until)
SELECT 'n' || (i % :names), 'q' || (i % :queues), s,
       CASE WHEN s = 'queued' AND i % 1000 = 6 THEN :now + 3600 ELSE :now - (i % 86400) END,
       :now - 86400, :now - 86400,
       CASE WHEN s IN ('succeeded', 'failed', 'cancelled') THEN :now END,
       CASE WHEN s = 'running' THEN 'bench' END,
       CASE WHEN s = 'running' THEN :now + 3600 END
FROM t
"""
# What queue_stats and queued_by_name ran before the counts table (schema version 3).
PG_BEFORE = (
    """SELECT queue, count(*) FILTER (WHERE state = 'queued'),
       count(*) FILTER (WHERE state = 'running'), count(*) FILTER (WHERE state = 'succeeded'),
       count(*) FILTER (WHERE state = 'failed'), count(*) FILTER (WHERE state = 'cancelled'),
       count(*) FILTER (WHERE state = 'queued' AND run_at <= now()),
       EXTRACT(EPOCH FROM now() - min(run_at) FILTER (WHERE state = 'queued'
                                                      AND run_at <= now()))::float8
    FROM onthedot_jobs GROUP BY queue ORDER BY queue""",
    "SELECT name, count(*) FROM onthedot_jobs WHERE state = 'queued' GROUP BY name ORDER BY name",
)
SQLITE_BEFORE = (
    """SELECT queue, sum(state = 'queued'), sum(state = 'running'), sum(state = 'succeeded'),
       sum(state = 'failed'), sum(state = 'cancelled'), sum(state = 'queued' AND run_at <= :now),
       :now - min(CASE WHEN state = 'queued' AND run_at <= :now THEN run_at END)
    FROM onthedot_jobs GROUP BY queue ORDER BY queue""",
    "SELECT name, count(*) FROM onthedot_jobs WHERE state = 'queued' GROUP BY name ORDER BY name",
)
CHUNK = 200_000  # rows per filling statement (each one transaction)


def _ms(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _summary(ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    return {"median": statistics.median(ms), "min": ms[0], "max": ms[-1]}


def _fill(url: str, n: int) -> float:
    t = time.perf_counter()
    mix = {"f": FAILED, "c": FAILED + CANCELLED, "q": FAILED + CANCELLED + QUEUED}
    mix.update(r=mix["q"] + RUNNING, names=NAMES, queues=QUEUES)
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            for lo in range(1, n + 1, CHUNK):
                hi = min(lo + CHUNK - 1, n)
                conn.execute(SQLITE_FILL, {**mix, "lo": lo, "hi": hi, "now": time.time()})
                conn.commit()
            conn.execute("ANALYZE")
        conn.close()
    else:
        with psycopg.connect(url, autocommit=True) as pg:
            for lo in range(1, n + 1, CHUNK):
                pg.execute(PG_FILL, {**mix, "lo": lo, "hi": min(lo + CHUNK - 1, n)})
            pg.execute("VACUUM ANALYZE onthedot_jobs")
            pg.execute("VACUUM ANALYZE onthedot_job_counts")
    return time.perf_counter() - t


def _before(url: str, reps: int) -> tuple[list[float], list[float]]:
    """The statements of schema version 3, timed on the same database (the "before"), inside
    a transaction that drops the index version 4 added (rolled back), as on version 3."""
    drop = "DROP INDEX onthedot_jobs_queued_at"
    if url.startswith("sqlite"):
        lite = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        stats, names = SQLITE_BEFORE
        lite.execute("BEGIN")
        lite.execute(drop)
        a = _ms(lambda: lite.execute(stats, {"now": time.time()}).fetchall(), reps)
        b = _ms(lambda: lite.execute(names).fetchall(), reps)
        lite.execute("ROLLBACK")
        lite.close()
        return a, b
    with psycopg.connect(url) as pg:
        stats, names = PG_BEFORE
        pg.execute(drop)
        a = _ms(lambda: pg.execute(stats).fetchall(), reps)
        b = _ms(lambda: pg.execute(names).fetchall(), reps)
        pg.rollback()
        return a, b


def stats(p: dict[str, Any]) -> dict[str, Any]:
    """Fill `n` jobs, then time the statistics verbs `reps` times each (after one warm-up)."""
    url, n, reps = p["url"], p["n"], p.get("reps", 30)
    storage = open_storage(url)
    storage.migrate()
    fill_s = _fill(url, n)
    storage.queue_stats()  # warm-up: connections, plans (and a compaction of the fill's rows)
    storage.queued_by_name()
    qs = _ms(storage.queue_stats, reps)
    by_name = _ms(storage.queued_by_name, reps)
    total = sum(
        s.queued + s.running + s.succeeded + s.failed + s.cancelled for s in storage.queue_stats()
    )
    assert total == n, f"the statistics count {total} jobs, the database holds {n}"
    storage.close()
    old_qs, old_names = _before(url, max(3, reps // 6))
    return {
        "fill_s": fill_s,
        "queue_stats": _summary(qs),
        "queued_by_name": _summary(by_name),
        "before_queue_stats": _summary(old_qs),
        "before_queued_by_name": _summary(old_names),
    }
