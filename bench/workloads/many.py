"""Workload 7: many worker processes on one database (onthedot on PostgreSQL only).

N plain `onthedot worker --processes 1` processes (N = 8, 16, 32; `--quick`: 8 and 32), every one
with its scheduler, on a private PostgreSQL cluster of the bench's own (`initdb` in /tmp,
`max_connections=200`, `pg_stat_statements` preloaded, `fsync=off`): 32 processes hold 96
connections, which the shared server (100) cannot spare.

- idle: once every process is registered and listening on an empty queue, the statements the
  server runs for the database in a 10 s window (`pg_stat_statements` calls; BEGIN and COMMIT
  count as statements), per process and second; the transactions too (`pg_stat_database`,
  flushed by each backend within seconds, so only roughly) and the CPU time of the processes
  (ms per second and process);
- drain: then the no-op jobs of workload 2 (`ctx.sizes.drain`) are enqueued in one bulk call (one
  transaction, one notification) and the window runs from its commit to the moment every job
  succeeded (read every 50 ms); the statements the server ran meanwhile and the CPU time of the
  worker processes (user + system), per job.

The fleet starts before the jobs exist, so the drain does not include 32 interpreters starting
on the bench machine's cores (the start-up time is reported beside it).
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from typing import Any

import psycopg

from bench.harness import (
    CLK_TCK,
    REPO,
    CellFailed,
    _cpu_ticks,
    cell_env,
    kill_group,
    log,
    python,
    run_cell,
)
from bench.ours import make_app
from bench.plan import Context
from bench.systems import OURS

CONCURRENCY = 4  # onthedot worker's default
IDLE_WINDOW = 10.0


def fleet_sizes(ctx: Context) -> tuple[int, ...]:
    return (8, 16, 32) if ctx.sizes.rounds > 1 else (8, 32)


def run(ctx: Context) -> None:
    if not ctx.wants(OURS):
        return
    from tests.torture.pgcluster import PrivateCluster, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        log(f"many: skipped ({reason})")
        ctx.notes.append(f"Workload 7 (many processes) did not run: {reason}.")
        return
    cluster = PrivateCluster("shared_preload_libraries=pg_stat_statements")
    try:
        cluster.start()
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        for r in range(ctx.sizes.rounds):
            for n in fleet_sizes(ctx):
                label = f"{n} processes x c={CONCURRENCY}, scheduler on"
                drain = ctx.results.cell("many", "drain", OURS.key, label, "jobs/s")
                idle = ctx.results.cell("many", "idle", OURS.key, label, "stmt/s/proc", False)
                log(f"many n={n} round {r + 1}")
                try:
                    res = fleet_cell(cluster, n, ctx.sizes.drain)
                except CellFailed as exc:
                    log(f"  failed: {exc}")
                    drain.errors.append(str(exc))
                    continue
                drain.add(
                    res["rate"],
                    startup_s=res["startup_s"],
                    statements_per_job=res["statements_per_job"],
                    cpu_us_per_job=res["cpu_us_per_job"],
                    n=res["n"],
                )
                idle.add(
                    res["idle_per_proc"],
                    xacts_per_proc=res["idle_xacts_per_proc"],
                    cpu_ms_per_s=res["idle_cpu_ms_per_s"],
                )
    finally:
        cluster.remove()


def _one(conn: psycopg.Connection[Any], sql: str, *params: Any) -> int:
    row = conn.execute(sql, params).fetchone()
    return int(row[0] or 0) if row else 0


def fleet_cell(cluster: Any, n: int, jobs: int) -> dict[str, Any]:
    db = f"many_{uuid.uuid4().hex[:8]}"
    url = cluster.create_database(db)
    run_cell("onthedot", "setup", {"url": url}, timeout=300)
    command = [python(), "-m", "onthedot", "--app", "bench.ours:cli_app", "worker"]
    command += ["-c", str(CONCURRENCY), "--processes", "1"]
    env = cell_env({"ONTHEDOT_DATABASE_URL": url})
    procs: list[subprocess.Popen[str]] = []
    admin = psycopg.connect(cluster.admin_url, autocommit=True)
    client = make_app(url)
    work = psycopg.connect(url, autocommit=True)
    try:
        t0 = time.monotonic()
        for _ in range(n):
            procs.append(
                subprocess.Popen(
                    command,
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
            )
        listening = (
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND query LIKE 'LISTEN%%'"
        )
        deadline = time.monotonic() + 300
        while _one(work, "SELECT count(*) FROM onthedot_workers") < n or (
            _one(admin, listening, db) < n
        ):
            if time.monotonic() > deadline:
                raise CellFailed(f"{n} workers not up after 300 s")
            dead = [p for p in procs if p.poll() is not None]
            if dead:
                raise CellFailed(f"a worker exited {dead[0].returncode}: {dead[0].stderr}")
            time.sleep(0.1)
        startup = time.monotonic() - t0
        time.sleep(2.0)  # past every worker's first heartbeat and schedule sync
        xacts = "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s"
        calls = (
            "SELECT sum(s.calls)::bigint FROM pg_stat_statements s"
            " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s"
        )
        admin.execute("SELECT pg_stat_statements_reset()")
        x0, t1 = _one(admin, xacts, db), time.monotonic()
        idle_cpu0 = sum(_cpu_ticks(p.pid) or 0 for p in procs)
        time.sleep(IDLE_WINDOW)
        statements, elapsed = _one(admin, calls, db), time.monotonic() - t1
        idle_cpu = (sum(_cpu_ticks(p.pid) or 0 for p in procs) - idle_cpu0) / CLK_TCK
        x1 = _one(admin, xacts, db)
        admin.execute("SELECT pg_stat_statements_reset()")
        cpu0 = sum(_cpu_ticks(p.pid) or 0 for p in procs)
        client.jobs["noop"].enqueue_many([[] for _ in range(jobs)])  # one transaction
        t2 = time.monotonic()  # its commit: no job was visible before
        while _one(work, "SELECT count(*) FROM onthedot_jobs WHERE state = 'succeeded'") < jobs:
            if time.monotonic() - t2 > 600:
                raise CellFailed("drain not done after 600 s")
            time.sleep(0.05)
        drain_s = time.monotonic() - t2
        cpu = (sum(_cpu_ticks(p.pid) or 0 for p in procs) - cpu0) / CLK_TCK
        drained = _one(admin, calls, db)
        top = admin.execute(
            "SELECT s.calls, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 70)"
            " FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid"
            " WHERE d.datname = %s ORDER BY s.calls DESC LIMIT 6",
            (db,),
        ).fetchall()
        log(f"  drain statements: {'; '.join(f'{c} {q}' for c, q in top)}")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                kill_group(p)
        work.close()
        client.close()
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        admin.close()
    return {
        "rate": jobs / drain_s,
        "n": jobs,
        "startup_s": round(startup, 1),
        "statements_per_job": drained / jobs,
        "cpu_us_per_job": cpu / jobs * 1e6,
        "idle_per_proc": statements / elapsed / n,
        "idle_xacts_per_proc": (x1 - x0) / elapsed / n,
        "idle_cpu_ms_per_s": idle_cpu / elapsed / n * 1000,
    }
