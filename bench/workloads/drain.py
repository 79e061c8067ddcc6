"""Workload 2: drain pre-loaded no-op jobs with each system's best worker settings.

The window opens when the first job runs (the earliest first-job mark of any worker process)
and closes when the last worker process finished (burst/drain modes persist every outcome
before they return) or, for Celery, when Redis holds neither a queued nor an unacked message.
CPU is sampled from /proc for the worker process trees and for the PostgreSQL backends of the
system's database (Redis for Celery); statements come from pg_stat_statements when the server
preloads it, else transactions are counted from pg_stat_database.
"""

from __future__ import annotations

import subprocess
import time
from typing import Any

from bench.harness import (
    CellFailed,
    CpuSampler,
    cell_env,
    db_stats,
    first_marks,
    job_window,
    kill_group,
    log,
    result_of,
    run_cell,
    run_dir,
    spawn,
    wait_no_backends,
)
from bench.peers.celery_cells import worker_command
from bench.plan import Context
from bench.systems import DRAIN, SWEEP, DrainConfig, remaining


def run(ctx: Context) -> None:
    configs = [c for c in DRAIN + (SWEEP if ctx.sweep else []) if ctx.wants(c.system)]
    for r in range(ctx.sizes.rounds):
        for cfg in configs:
            n = ctx.sizes.drain_slow if cfg.slow else ctx.sizes.drain
            cell = ctx.results.cell("drain", "throughput", cfg.system.key, cfg.label, "jobs/s")
            log(f"drain {cfg.system.key} [{cfg.label}] n={n} round {r + 1}")
            try:
                res = drain_once(ctx, cfg, n)
                cell.add(res.pop("rate"), **res)
            except CellFailed as exc:
                log(f"  failed: {exc}")
                cell.errors.append(str(exc))


def drain_once(
    ctx: Context, cfg: DrainConfig, n: int, job: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Drain `n` pre-loaded jobs (no-op ones, or `job`: {"job": name, "args": [...]})."""
    system = cfg.system
    url = ctx.fresh_url(system)
    run_cell(system.cell, "preload", {"url": url, "n": n, **(job or {})}, timeout=600)
    if system.db:
        wait_no_backends(system.db)
    before = db_stats(system.db) if system.db else None
    rd = run_dir()
    redis = _redis(ctx) if system.cell == "celery" else None
    sampler = CpuSampler(system.db, server_pids=[ctx.redis_pid] if redis else [])
    sampler.start()
    env = {"BENCH_RUN_DIR": str(rd)}
    procs: list[subprocess.Popen[str]] = []
    try:
        if system.cell == "celery":
            end = _celery_drain(ctx, cfg, env, sampler, redis, n)
        else:
            params = {"url": url, **cfg.params, "profile": ctx.profile(f"drain-{system.cell}")}
            for _ in range(cfg.procs):
                proc = spawn(system.cell, "drain_worker", params, env=env)
                sampler.add_root(proc.pid)
                procs.append(proc)
            outs = [result_of(p, timeout=1200) for p in procs]
            end = max(o["end"] for o in outs)
    finally:
        for p in procs:
            kill_group(p)
        sampler.stop()
    marks = first_marks(rd)
    if not marks:
        raise CellFailed("no job ran")
    start = min(marks)
    left = remaining(system, url, redis)
    if left:
        raise CellFailed(f"{left} jobs left after the drain")
    elapsed = end - start
    w1, p1 = sampler.at(end)
    w0, p0 = sampler.at(start)
    out: dict[str, Any] = {
        "rate": n / elapsed,
        "cpu_us_per_job": (w1 - w0 + p1 - p0) / n * 1e6,
        "worker_cpu_us": (w1 - w0) / n * 1e6,
        "db_cpu_us": (p1 - p0) / n * 1e6,
        "cores_busy": (w1 - w0 + p1 - p0) / elapsed,
        "n": n,
        **job_window(rd, n),
    }
    if system.db and before is not None:
        wait_no_backends(system.db)
        after = db_stats(system.db)
        out["xacts_per_job"] = (after.xacts - before.xacts) / n
        out["rows_per_job"] = (after.rows - before.rows) / n
        out["wal_bytes_per_job"] = (after.wal - before.wal) / n
        if before.statements is not None and after.statements is not None:
            out["statements_per_job"] = (after.statements - before.statements) / n
    return out


def _redis(ctx: Context) -> Any:
    import redis

    return redis.Redis.from_url(ctx.redis_url)


def _celery_drain(
    ctx: Context, cfg: DrainConfig, env: dict[str, str], sampler: CpuSampler, redis: Any, n: int
) -> float:
    worker_env = cell_env(
        {
            **env,
            "BENCH_CELERY_PREFETCH": str(cfg.params.get("prefetch", 4)),
            "BENCH_REDIS_URL": ctx.redis_url,
        }
    )
    from bench.harness import REPO

    proc = subprocess.Popen(
        worker_command(cfg.params),
        env=worker_env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    sampler.add_root(proc.pid)
    deadline = time.monotonic() + 1200
    try:
        while time.monotonic() < deadline:
            if redis.llen("bench") == 0 and redis.hlen("unacked") == 0:
                return time.monotonic()
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                raise CellFailed(f"celery worker exited: {err[-800:]}")
            time.sleep(0.01)
        raise CellFailed("celery drain timed out")
    finally:
        kill_group(proc)
        proc.wait()
