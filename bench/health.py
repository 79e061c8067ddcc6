"""Schedule health's cost: the idle tick with every schedule watched, and one health check.

    python -m bench.health [--n 100000] [--ticks 200] [--sqlite]

N every-minute schedules, each with `grace`, `max_runtime` and `deadline`, on PostgreSQL
(`$BENCH_PG`, a database of its own, `bench_health`, dropped and created) or with `--sqlite` a
file in a temporary folder. A manual clock stands in for the database clock, as in
`bench/ours.py`'s scheduler cells:

- idle: `Scheduler.step()` (one tick plus the health decision; what a worker's scheduler loop
  runs) while no slot is due and no check is due: wall and CPU ms, median and p99;
- burst: every slot due at once, ticked (not timed here: `python -m bench` times it);
- check: their grace over, the checks of all N schedules (`check_health` until none is due):
  seconds and schedules per second, and the problems raised (none: every job "started").
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

import onthedot
from bench.jobs import percentile
from onthedot.testing import ManualClock

SERVER = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
T0 = datetime(2031, 1, 1, 0, 0, 30, tzinfo=UTC)  # half a minute before a slot


def _fresh_pg() -> str:
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_health")
        conn.execute("CREATE DATABASE bench_health")
    return f"{SERVER}/bench_health"


def build(url: str, n: int, clock: ManualClock) -> onthedot.App:
    app = onthedot.App(url, clock=clock, log_events=False)

    @app.job(name="noop")
    def noop() -> None: ...

    for i in range(n):
        app.schedule(
            f"s{i:06d}", "* * * * *", noop, catchup="none",
            grace="30s", max_runtime="5m", deadline="06:00",
        )  # fmt: skip
    app.migrate()
    return app


def run(url: str, n: int, ticks: int) -> dict[str, Any]:
    clock = ManualClock(T0)
    app = build(url, n, clock)
    sched = app.scheduler()
    t = time.perf_counter()
    sched.prepare()
    sched.sync()
    sync_s = time.perf_counter() - t
    for _ in range(20):
        sched.step()
    walls, cpus = [], []
    for _ in range(ticks):
        t, c = time.perf_counter(), time.process_time()
        delay = sched.step()
        walls.append((time.perf_counter() - t) * 1000)
        cpus.append((time.process_time() - c) * 1000)
        assert delay > 0, "something was due: not an idle tick"
    # Every slot due at once, each job claimed at once (started), then their grace over.
    clock.set(T0 + timedelta(seconds=30))
    slots = sum(len(r.recorded) for r in sched.tick())
    storage = app.storage
    while storage.claim_jobs("bench", "default", 10_000, 3600):
        pass
    clock.set(T0 + timedelta(seconds=61))
    found = 0
    t = time.perf_counter()
    while (result := sched.check_health()).evaluated:
        found += len(result.problems)
    check_s = time.perf_counter() - t
    app.close()
    return {
        "schedules": n,
        "sync_s": round(sync_s, 2),
        "idle_wall_ms_p50": round(percentile(walls, 50), 3),
        "idle_wall_ms_p99": round(percentile(walls, 99), 3),
        "idle_cpu_ms_p50": round(percentile(cpus, 50), 3),
        "burst_slots": slots,
        "check_s": round(check_s, 2),
        "checked_per_s": round(n / check_s) if check_s else None,
        "problems": found,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--ticks", type=int, default=200)
    parser.add_argument("--sqlite", action="store_true")
    args = parser.parse_args()
    if args.sqlite:
        with tempfile.TemporaryDirectory() as folder:
            result = run(f"sqlite:///{folder}/bench.db", args.n, args.ticks)
    else:
        result = run(_fresh_pg(), args.n, args.ticks)
    print(json.dumps({"backend": "sqlite" if args.sqlite else "postgresql", **result}))


if __name__ == "__main__":
    main()
