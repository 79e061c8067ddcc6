"""The queue statistics cell (workload 8): a database holding N stored jobs, and how long the
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


def _schedstat_ns(pid: int) -> int:
    """CPU time a process has run, in ns (/proc/PID/schedstat: finer than the tick counts)."""
    try:
        return int(open(f"/proc/{pid}/schedstat").read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


class CpuMeter:
    """CPU ms per call, this process plus the PostgreSQL backends of the database (the server
    runs on this machine): on a loaded machine a steadier measure than the wall clock."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.admin = None if url.startswith("sqlite") else psycopg.connect(url, autocommit=True)

    def _server_ns(self) -> int:
        if self.admin is None:
            return 0
        pids = self.admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        ).fetchall()
        return sum(_schedstat_ns(p[0]) for p in pids)

    def per_call(self, fn: Any, n: int) -> float:
        server, client = self._server_ns(), time.process_time_ns()
        for _ in range(n):
            fn()
        used = (time.process_time_ns() - client) + (self._server_ns() - server)
        return used / n / 1e6

    def close(self) -> None:
        if self.admin is not None:
            self.admin.close()


def _summary(ms: list[float], cpu_ms: float) -> dict[str, float]:
    ms = sorted(ms)
    return {"median": statistics.median(ms), "min": ms[0], "max": ms[-1], "cpu_ms": cpu_ms}


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


def _before(url: str, reps: int, meter: CpuMeter) -> dict[str, dict[str, float]]:
    """The statements of schema version 3, timed on the same database (the "before")."""
    if url.startswith("sqlite"):
        lite = sqlite3.connect(url.removeprefix("sqlite:///"))
        stats, names = SQLITE_BEFORE
        calls = [
            lambda: lite.execute(stats, {"now": time.time()}).fetchall(),
            lambda: lite.execute(names).fetchall(),
        ]
        out = {
            k: _summary(_ms(f, reps), meter.per_call(f, reps))
            for k, f in zip(KEYS, calls, strict=True)
        }
        lite.close()
        return out
    with psycopg.connect(url, autocommit=True) as pg:
        stats, names = PG_BEFORE
        calls = [lambda: pg.execute(stats).fetchall(), lambda: pg.execute(names).fetchall()]
        return {
            k: _summary(_ms(f, reps), meter.per_call(f, reps))
            for k, f in zip(KEYS, calls, strict=True)
        }


KEYS = ("queue_stats", "queued_by_name")


def stats(p: dict[str, Any]) -> dict[str, Any]:
    """Fill `n` jobs, then time the statistics verbs `reps` times each (after a warm-up): wall
    ms per call, and CPU ms per call (client and server) over as many more calls."""
    url, n, reps = p["url"], p["n"], p.get("reps", 60)
    storage = open_storage(url, pool_size=1)
    storage.migrate()
    fill_s = _fill(url, n)
    storage.queue_stats()  # warm-up: connections, plans (and a compaction of the fill's rows)
    storage.queued_by_name()
    total = sum(
        s.queued + s.running + s.succeeded + s.failed + s.cancelled for s in storage.queue_stats()
    )
    assert total == n, f"the statistics count {total} jobs, the database holds {n}"
    meter = CpuMeter(url)
    out: dict[str, Any] = {"fill_s": fill_s}
    for key, fn in zip(KEYS, (storage.queue_stats, storage.queued_by_name), strict=True):
        out[key] = _summary(_ms(fn, reps), meter.per_call(fn, reps))
    storage.close()
    for key, res in _before(url, max(3, reps // 10), meter).items():
        out[f"before_{key}"] = res
    meter.close()
    return out
