"""Workload `bigtable`: onthedot on PostgreSQL with a big jobs table (issue 16, item 4).

A database of its own is filled server-side (INSERT ... SELECT generate_series, triggers off,
secondary indexes built after the load) with `big_finished` finished jobs (98 % succeeded, 2 %
failed with a traceback, 10 % in queue `reports`, 1 % from a schedule, finished_at spread
evenly over the last 30 days, ids in time order) and `big_queued` queued ones (ready, in queue
`backlog`, which no worker of the bench serves), then VACUUM ANALYZE. Against an empty
database, interleaved round by round, it then measures: a drain of `big_drain` no-op jobs
enqueued on top (2 processes x c=4, batch 200, prefetch 400: the drain workload's
configuration), idle enqueue -> start latency, and the operator's reads (queue_stats,
queued_by_name, list_jobs, count_jobs, the overview's queries).
No prune runs meanwhile (the maintenance turn is taken for ten years): `prune` measures it.
Last, once: `big_queued / 2` jobs delayed in `default` (the queue the workers serve) are added
and the drain and the latency measured again ("big+delayed").
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import psycopg

from bench.harness import (
    CellFailed,
    CpuSampler,
    admin,
    drop_database,
    first_marks,
    kill_group,
    log,
    pg_url,
    reset_database,
    result_of,
    run_cell,
    run_dir,
    spawn,
    wait_no_backends,
)
from bench.plan import Context

# $BENCH_DB_SUFFIX keeps two checkouts benchmarking on one server apart.
_SUFFIX = os.environ.get("BENCH_DB_SUFFIX", "")
EMPTY, BIG = "bench_big_empty" + _SUFFIX, "bench_big_full" + _SUFFIX
DRAIN = {"concurrency": 4, "batch_size": 200, "prefetch": 400}

FINISHED_SQL = """
INSERT INTO onthedot_jobs (name, queue, state, args, kwargs, run_at, attempts, schedule_key,
    slot, worker_id, result, error, traceback, errors, created_at, started_at, finished_at)
SELECT 'job_' || (g %% 20), CASE WHEN g %% 10 = 3 THEN 'reports' ELSE 'default' END,
    CASE WHEN g %% 50 = 7 THEN 'failed' ELSE 'succeeded' END,
    jsonb_build_array(g, 'user-' || (g %% 1000)), '{}'::jsonb, t, 1 + 2 * (g %% 50 = 7)::int,
    CASE WHEN g %% 100 = 1 THEN 'sched-' || (g %% 40) END, CASE WHEN g %% 100 = 1 THEN t END,
    'host-' || (g %% 8), CASE WHEN g %% 50 = 7 THEN NULL ELSE 'null'::jsonb END,
    CASE WHEN g %% 50 = 7 THEN 'ValueError: boom ' || g END,
    CASE WHEN g %% 50 = 7 THEN 'Traceback (most recent call last):\n  File "app.py", line 12'
         || ', in job\n    raise ValueError(x)\nValueError: boom' END,
    CASE WHEN g %% 50 = 7 THEN '[{"attempt": 1, "error": "ValueError: boom"}]'::jsonb END,
    t, t + interval '4 ms', t + interval '9 ms'
FROM generate_series(1, %(n)s) g,
     LATERAL (SELECT now() - interval '30 days' * (1 - g::float8 / %(n)s)
              - interval '1 second' AS t) x
"""
QUEUED_SQL = """
INSERT INTO onthedot_jobs (name, queue, state, args, kwargs, run_at, created_at)
SELECT 'job_' || (g %% 20), 'backlog', 'queued', jsonb_build_array(g), '{}'::jsonb,
    now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, %(n)s) g
"""
# Jobs delayed in the queue the workers serve (run_at over the next 30 days).
DELAYED_SQL = """
INSERT INTO onthedot_jobs (name, queue, state, args, kwargs, run_at, created_at)
SELECT 'job_' || (g %% 20), 'default', 'queued', jsonb_build_array(g), '{}'::jsonb,
    now() + interval '1 hour' + interval '30 days' * g::float8 / %(n)s, now()
FROM generate_series(1, %(n)s) g
"""
# The loads run with triggers off (no notify, no counting per statement of millions of rows):
# the counts table of the queue statistics (migration 0004) is then brought up to date once.
RECOUNT = (
    "INSERT INTO onthedot_job_counts (queue, name, state, priority, n)"
    " SELECT queue, name, state, priority, count(*) FROM onthedot_jobs"
    " WHERE created_at >= %(since)s GROUP BY queue, name, state, priority"
)
NO_PRUNE = (
    "INSERT INTO onthedot_maintenance (task, last_run_at, worker_id)"
    " VALUES ('prune', now() + interval '10 years', 'bench') ON CONFLICT (task) DO UPDATE"
    " SET last_run_at = EXCLUDED.last_run_at"
)


def create(db: str) -> str:
    """A fresh database `db` with onthedot's schema, pruning held off."""
    with admin() as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {db}")
    url = pg_url(db)
    run_cell("onthedot", "setup", {"url": url}, timeout=300)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(NO_PRUNE)
    return url


def fill(url: str, finished: int, queued: int) -> dict[str, Any]:
    """Load the rows (see the module's docstring); returns the load's timings."""
    out: dict[str, Any] = {"finished": finished, "queued": queued}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")  # no notify trigger per load
        conn.execute("SET maintenance_work_mem = '512MB'")
        indexes = [
            (r[0], r[1])
            for r in conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'onthedot_jobs'"
                " AND indexname <> 'onthedot_jobs_pkey'"
            )
        ]
        for name, _ in indexes:
            conn.execute(f"DROP INDEX {name}")
        t = time.perf_counter()
        conn.execute(FINISHED_SQL, {"n": finished})
        conn.execute(QUEUED_SQL, {"n": queued})
        _recount(conn, "-infinity")
        out["insert_s"] = time.perf_counter() - t
        t = time.perf_counter()
        for _, definition in indexes:
            conn.execute(definition)
        out["index_s"] = time.perf_counter() - t
        t = time.perf_counter()
        conn.execute("VACUUM (ANALYZE) onthedot_jobs")
        out["vacuum_s"] = time.perf_counter() - t
    out.update(sizes(url))
    return out


def _recount(conn: psycopg.Connection[Any], since: str) -> None:
    """Count the rows created since `since` into onthedot_job_counts (when it exists)."""
    if conn.execute("SELECT to_regclass('onthedot_job_counts')").fetchone() != (None,):
        conn.execute(RECOUNT, {"since": since})


def sizes(url: str) -> dict[str, Any]:
    """Sizes (MB) of onthedot_jobs: heap, all indexes, each index; live and dead tuples."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        mb = 1024 * 1024
        heap, idx, total = conn.execute(
            "SELECT pg_relation_size('onthedot_jobs'), pg_indexes_size('onthedot_jobs'),"
            " pg_total_relation_size('onthedot_jobs')"
        ).fetchone() or (0, 0, 0)
        each = {
            r[0]: round(r[1] / mb, 1)
            for r in conn.execute(
                "SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes"
                " WHERE relname = 'onthedot_jobs' ORDER BY 2 DESC"
            )
        }
        live, dead = conn.execute(
            "SELECT n_live_tup, n_dead_tup FROM pg_stat_user_tables WHERE relname = 'onthedot_jobs'"
        ).fetchone() or (0, 0)
    return {
        "heap_mb": round(heap / mb, 1),
        "indexes_mb": round(idx / mb, 1),
        "total_mb": round(total / mb, 1),
        "index_mb": each,
        "live_tup": live,
        "dead_tup": dead,
    }


def settle(url: str, empty: bool) -> None:
    """Before a cell: the empty database truncated, the big one vacuumed; then a CHECKPOINT."""
    if empty:
        reset_database(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(NO_PRUNE)
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) onthedot_jobs")
        conn.execute("CHECKPOINT")


def drain(db: str, n: int) -> dict[str, Any]:
    """Enqueue n no-op jobs and drain them: jobs/s from the first job run to the last worker's
    end, CPU (workers + this database's backends) per job."""
    url = pg_url(db)
    run_cell("onthedot", "preload", {"url": url, "n": n}, timeout=600)
    wait_no_backends(db)
    rd = run_dir()
    sampler = CpuSampler(db).start()
    procs = []
    try:
        for _ in range(2):
            proc = spawn(
                "onthedot", "drain_worker", {"url": url, **DRAIN}, env={"BENCH_RUN_DIR": str(rd)}
            )
            sampler.add_root(proc.pid)
            procs.append(proc)
        end = max(result_of(p, timeout=1200)["end"] for p in procs)
    finally:
        for p in procs:
            kill_group(p)
        sampler.stop()
    marks = first_marks(rd)
    if not marks:
        raise CellFailed("no job ran")
    start = min(marks)
    w1, p1 = sampler.at(end)
    w0, p0 = sampler.at(start)
    return {
        "rate": n / (end - start),
        "cpu_us_per_job": (w1 - w0 + p1 - p0) / n * 1e6,
        "db_cpu_us": (p1 - p0) / n * 1e6,
        "start": start,
        "end": end,
    }


def _ratio(big: list[float], empty: list[float]) -> float | None:
    if not big or not empty:
        return None
    return statistics.median(big) / statistics.median(empty)


def run(ctx: Context) -> None:
    s = ctx.sizes
    res = ctx.results
    log(f"bigtable: filling {BIG} with {s.big_finished} finished + {s.big_queued} queued jobs")
    urls = {"empty": create(EMPTY), "big": create(BIG)}
    t = time.perf_counter()
    loaded = fill(urls["big"], s.big_finished, s.big_queued)
    loaded["total_s"] = time.perf_counter() - t
    log(f"  loaded: {loaded}")
    res.cell("bigtable", "load", "onthedot", f"{s.big_finished}+{s.big_queued}", "s").add(
        loaded.pop("total_s"), **loaded
    )
    try:
        for r in range(s.rounds):
            order = ["empty", "big"] if r % 2 == 0 else ["big", "empty"]
            for which in order:
                db = EMPTY if which == "empty" else BIG
                cell = res.cell("bigtable", "drain", "onthedot", which, "jobs/s")
                settle(urls[which], which == "empty")
                log(f"bigtable drain {which} n={s.big_drain} round {r + 1}")
                try:
                    out = drain(db, s.big_drain)
                    cell.add(out.pop("rate"), **out)
                    log(f"  {cell.values[-1]:.0f} jobs/s")
                except CellFailed as exc:
                    cell.errors.append(str(exc))
            for which in order:
                settle(urls[which], which == "empty")
                log(f"bigtable latency {which} round {r + 1}")
                params = {"url": urls[which], "n": min(s.latency, 500), "concurrency": 4}
                try:
                    out = run_cell("onthedot", "latency", params, timeout=600)
                    res.cell("bigtable", "latency p50", "onthedot", which, "ms", False).add(
                        out["p50"], p90=out["p90"], max=out["max"]
                    )
                    res.cell("bigtable", "latency p99", "onthedot", which, "ms", False).add(
                        out["p99"]
                    )
                except CellFailed as exc:
                    res.cell("bigtable", "latency p50", "onthedot", which, "ms").errors.append(
                        str(exc)
                    )
            for which in order:
                out = run_cell("big", "reads", {"url": urls[which]}, timeout=1200)
                for name, v in out["reads"].items():
                    res.cell("bigtable", f"read {name}", "onthedot", which, "ms", False).add(
                        v["median_ms"], first_ms=v["first_ms"], max_ms=v["max_ms"]
                    )
        res.cell("bigtable", "sizes", "onthedot", "big", "MB", False).add(
            sizes(urls["big"])["total_mb"], **sizes(urls["big"])
        )
        delayed(ctx, urls["big"])
        summary(ctx)
    finally:
        drop_database(EMPTY)
        if "prune" not in ctx.workloads:
            drop_database(BIG)


def delayed(ctx: Context, url: str) -> None:
    """The big table plus delayed jobs in the served queue: one drain, one latency run."""
    s, res = ctx.sizes, ctx.results
    n = s.big_queued // 2
    with psycopg.connect(url, autocommit=True) as conn:
        (since,) = conn.execute("SELECT now()::text").fetchone() or ("now",)
        conn.execute("SET session_replication_role = replica")
        conn.execute(DELAYED_SQL, {"n": n})
        _recount(conn, since)
    settle(url, False)
    log(f"bigtable big+delayed ({n} delayed in default): drain n={s.big_drain}")
    try:
        out = drain(BIG, s.big_drain)
        res.cell("bigtable", "drain", "onthedot", "big+delayed", "jobs/s").add(
            out.pop("rate"), delayed=n, **out
        )
    except CellFailed as exc:
        res.cell("bigtable", "drain", "onthedot", "big+delayed", "jobs/s").errors.append(str(exc))
    settle(url, False)
    params = {"url": url, "n": min(s.latency, 300), "concurrency": 4}
    out = run_cell("onthedot", "latency", params, timeout=900)
    res.cell("bigtable", "latency p50", "onthedot", "big+delayed", "ms", False).add(
        out["p50"], p90=out["p90"], max=out["max"], delayed=n
    )
    res.cell("bigtable", "latency p99", "onthedot", "big+delayed", "ms", False).add(out["p99"])
    with psycopg.connect(url, autocommit=True) as conn:  # the prune workload goes without them
        conn.execute("DELETE FROM onthedot_jobs WHERE queue = 'default' AND state = 'queued'")
        conn.execute("VACUUM onthedot_jobs")


def summary(ctx: Context) -> None:
    """Print the big/empty ratios (medians over rounds)."""
    res = ctx.results
    lines = ["", "| measure | empty | big | big/empty |", "|---|---|---|---|"]
    metrics = sorted({c.metric for c in res.of("bigtable") if c.config in ("empty", "big")})

    def show(c: Any) -> str:
        lo, hi = min(c.values), max(c.values)
        return f"{statistics.median(c.values):.3g} ({lo:.3g}-{hi:.3g})"

    for m in metrics:
        e = res.find("bigtable", m, "onthedot", "empty")
        for config in ("big", "big+delayed"):
            b = res.find("bigtable", m, "onthedot", config)
            if e is None or b is None or not e.values or not b.values:
                continue
            ratio = _ratio(b.values, e.values)
            lines.append(f"| {m} ({e.unit}) [{config}] | {show(e)} | {show(b)} | {ratio:.2f} |")
    for line in lines:
        log(line)
