"""Limits beside the peers that have them (issue 27's Proof): onthedot, PgQueuer and Celery.

    python -m bench.limits --peers [--jobs 10000] [--limited 300] [--rate 50] [--rounds 1]

Every system runs the same job body (`body`: record the job's key, start and end, as
monotonic times, one line per job appended to a file of the process; `--ms` of sleep in the
limited cells, none in the drain) in **2 worker processes** of 8 slots each (onthedot `worker
--processes 1 -c 8`, PgQueuer `QueueManager.run` drain mode with `asyncio.sleep` as its async
entrypoints sleep, Celery `-P threads -c 8`), on a fresh PostgreSQL database
(`bench_limits_peers$BENCH_DB_SUFFIX`) and Redis (`$BENCH_REDIS_URL`, default
`redis://127.0.0.1:6379/13`, flushed before each cell).

- drain: `--jobs` no-op jobs with no limit, then under a generous limit (onthedot
  `concurrency=1000`; PgQueuer `concurrency_limit=1000`; Celery `rate_limit="100000/s"`), jobs/s
  over the job window (first start -> last end), rounds interleaved;
- concurrency: `--limited` jobs of `--ms` ms over keys a and b, limited to 3 running (onthedot
  `concurrency=3, key="k"`: per key; PgQueuer `concurrency_limit=3`: per entrypoint, it has no
  key; Celery has no such option, its nearest knob is the pool size, `-c 3` per process): the
  most running at once, per key and in all;
- rate: `--limited` jobs under `--rate` starts a second (onthedot `rate="N/s"`, its default
  burst N; Celery `rate_limit="N/s"`, per worker process; PgQueuer 1.6.0 has no rate limit):
  the most starts in any 1 s window and the mean start rate over the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

import onthedot

SERVER = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
DB = "bench_limits_peers" + os.environ.get("BENCH_DB_SUFFIX", "")
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
PROCS, SLOTS = 2, 8
_fd: int | None = None


def body(key: str, ms: float) -> None:
    """The job of every system, after its own sleep of `ms` (or none): one line, appended."""
    global _fd
    if _fd is None:
        path = os.path.join(os.environ["BENCH_RUN_DIR"], f"rec-{os.getpid()}")
        _fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    end = time.monotonic()
    os.write(_fd, f"{key} {end - ms / 1000:.6f} {end:.6f}\n".encode())


def _rate() -> str:
    return os.environ.get("BENCH_LIMIT_RATE", "50") + "/s"


# onthedot: the app of the worker processes (`--app bench.limits_peers:cli_app`).


def cli_app() -> onthedot.App:
    app = onthedot.App(os.environ["ONTHEDOT_DATABASE_URL"], log_events=False)

    @app.job(name="free")
    def free(k: str, ms: float) -> None:
        time.sleep(ms / 1000)
        body(k, ms)

    @app.job(name="generous", concurrency=1000)
    def generous(k: str, ms: float) -> None:
        time.sleep(ms / 1000)
        body(k, ms)

    @app.job(name="conc", concurrency=3, key="k")
    def conc(k: str, ms: float) -> None:
        time.sleep(ms / 1000)
        body(k, ms)

    @app.job(name="rated", rate=_rate(), burst=1)  # Celery's bucket holds 1 too
    def rated(k: str, ms: float) -> None:
        time.sleep(ms / 1000)
        body(k, ms)

    return app


# PgQueuer: a worker process is `python -m bench.cell limits pgq_drain JSON`.


def pgq_drain(p: dict[str, Any]) -> dict[str, Any]:
    import asyncpg
    import uvloop
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries
    from pgqueuer.types import QueueExecutionMode

    cap = None if p["slots"] == SLOTS else p["slots"]

    async def main() -> None:
        conn = await asyncpg.connect(p["url"])
        qm = QueueManager(Queries.from_asyncpg_connection(conn))
        for name, limit in (("free", 0), ("generous", 1000), ("conc", 3)):

            async def run(job: Any) -> None:
                k, ms = json.loads(job.payload)
                await asyncio.sleep(ms / 1000)
                body(k, ms)

            qm.entrypoint(name, concurrency_limit=limit)(run)
        await qm.run(
            # the drain: its benchmark's default batch and no cap; the slots of the concurrency
            # cell: a cap (which must be at least twice the batch)
            batch_size=10 if cap is None else cap // 2,
            mode=QueueExecutionMode.drain,
            dequeue_timeout=timedelta(seconds=1),
            max_concurrent_tasks=cap,
        )
        await conn.close()

    uvloop.run(main())
    return {}


# The driver.


def fresh() -> str:
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB}")
        conn.execute(f"CREATE DATABASE {DB}")
    return f"{SERVER}/{DB}"


def _wait(procs: list[subprocess.Popen[bytes]], what: str) -> None:
    for proc in procs:
        if proc.wait(600) != 0:
            raise RuntimeError(f"{what}: a worker exited with {proc.returncode}")


def run_ours(url: str, rd: str, name: str, args: list[list[Any]], slots: int) -> None:
    env = dict(os.environ, ONTHEDOT_DATABASE_URL=url, BENCH_RUN_DIR=rd)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE onthedot_jobs, onthedot_job_counts, onthedot_limit_keys")
    os.environ["ONTHEDOT_DATABASE_URL"] = url
    app = cli_app()
    app.limits.sync()
    app.jobs[name].enqueue_many(args)
    app.close()
    cmd = [sys.executable, "-m", "onthedot", "--app", "bench.limits_peers:cli_app", "worker"]
    cmd += ["--burst", "--no-scheduler", "--processes", "1", "-c", str(slots)]
    _wait([subprocess.Popen(cmd, env=env) for _ in range(PROCS)], f"onthedot {name}")


def run_pgq(url: str, rd: str, name: str, args: list[list[Any]], slots: int) -> None:
    import asyncpg
    import uvloop
    from pgqueuer.queries import Queries

    async def load() -> None:
        conn = await asyncpg.connect(url)
        await conn.execute("TRUNCATE pgqueuer")
        q = Queries.from_asyncpg_connection(conn)
        for i in range(0, len(args), 5000):
            chunk = args[i : i + 5000]
            await q.enqueue(
                [name] * len(chunk), [json.dumps(a).encode() for a in chunk], [0] * len(chunk)
            )
        await conn.close()

    uvloop.run(load())
    env = dict(os.environ, BENCH_RUN_DIR=rd)
    cmd = [
        sys.executable,
        "-m",
        "bench.cell",
        "limits",
        "pgq_drain",
        json.dumps({"url": url, "slots": slots}),
    ]
    _wait(
        [subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL) for _ in range(PROCS)],
        f"pgqueuer {name}",
    )


def run_celery(rd: str, name: str, args: list[list[Any]], slots: int = SLOTS) -> None:
    import redis

    from bench.peers import celery_app
    from bench.peers.celery_cells import worker_command

    r = redis.Redis.from_url(REDIS)
    r.flushdb()
    task = getattr(celery_app, "lim_" + name)
    with celery_app.app.producer_or_acquire() as producer:
        for a in args:
            task.apply_async(a, producer=producer)
    env = dict(os.environ, BENCH_RUN_DIR=rd, BENCH_REDIS_URL=REDIS)
    cmd = worker_command({"pool": "threads", "concurrency": slots})
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
        for _ in range(PROCS)
    ]
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if r.llen("bench") == 0 and r.hlen("unacked") == 0 and records(rd, len(args)):
                break
            time.sleep(0.02)
        else:
            raise RuntimeError(f"celery {name}: timed out")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)


def records(rd: str, n: int = 0) -> list[tuple[str, float, float]]:
    out = []
    for f in Path(rd).glob("rec-*"):
        for line in f.read_text().splitlines():
            k, s, e = line.split()
            out.append((k, float(s), float(e)))
    return out if len(out) >= n else []


def most_in_1s(starts: list[float]) -> int:
    """The most of these sorted times in any window of 1 s."""
    best, j = 0, 0
    for i, s in enumerate(starts):
        while starts[j] < s - 1.0:
            j += 1
        best = max(best, i - j + 1)
    return best


def analyse(recs: list[tuple[str, float, float]]) -> dict[str, Any]:
    """Jobs/s over the job window, the most running at once (per key, in all), the most starts
    in any 1 s window, the mean start rate (first to last start)."""
    starts = sorted(s for _, s, _ in recs)
    window = max(e for _, _, e in recs) - starts[0]

    def most(rows: list[tuple[str, float, float]]) -> int:
        events = sorted([(s, 1) for _, s, _ in rows] + [(e, -1) for _, _, e in rows])
        best = cur = 0
        for _, d in events:  # an end at the same instant as a start counts first
            cur += d
            best = max(best, cur)
        return best

    in_1s = most_in_1s(starts)
    after = most_in_1s([s for s in starts if s >= starts[0] + 1.0])
    keys = {k for k, _, _ in recs}
    return {
        "jobs": len(recs),
        "jobs_per_s": round(len(recs) / window),
        "max_running": most(recs),
        "max_running_per_key": max(most([r for r in recs if r[0] == k]) for k in keys),
        "max_starts_1s": in_1s,
        "mean_starts_per_s": round((len(starts) - 1) / (starts[-1] - starts[0]), 1),
        "max_starts_1s_after_first": after,
    }


def cell(
    system: str, url: str, name: str, args: list[list[Any]], slots: int = SLOTS
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as rd:
        if system == "onthedot":
            run_ours(url, rd, name, args, slots)
        elif system == "pgqueuer":
            run_pgq(url, rd, name, args, slots)
        else:
            run_celery(rd, name, args, slots)
        recs = records(rd)
    assert len(recs) == len(args), (system, name, len(recs), len(args))
    return analyse(recs)


def main(jobs: int, limited: int, rate: int, ms: float, rounds: int) -> dict[str, Any]:
    os.environ["BENCH_LIMIT_RATE"] = str(rate)
    os.environ["BENCH_REDIS_URL"] = REDIS
    url = fresh()
    from bench.peers.pgq_cells import setup

    setup({"url": url})
    app = onthedot.App(url, log_events=False)
    app.migrate()
    app.close()
    out: dict[str, Any] = {"drain": {}, "concurrency": {}, "rate": {}}
    noop = [["a", 0] for _ in range(jobs)]
    for _ in range(rounds):
        for system in ("onthedot", "pgqueuer", "celery"):
            for name in ("free", "generous"):
                got = cell(system, url, name, noop)["jobs_per_s"]
                out["drain"].setdefault(f"{system} {name}", []).append(got)
    slow = [["ab"[i % 2], ms] for i in range(limited)]
    for system in ("onthedot", "pgqueuer", "celery"):
        out["concurrency"][system] = cell(system, url, "conc", slow, slots=4)
    for system in ("onthedot", "celery"):
        out["rate"][system] = cell(system, url, "rated", slow)
    return out
