"""What limits cost (issue 27): drain with no limit against a generous one, fairness under a
saturated key's backlog, and the idle latency of a limited job with free capacity.

    python -m bench.limits [--jobs 20000] [--backlog 1000000] [--samples 200] [--rounds 3]
    python -m bench.limits --peers [--jobs N] [--rounds N] [--limited 300] [--rate 50] [--ms 20]

(`--peers`: the same beside PgQueuer and Celery, bench/limits_peers.py.)

PostgreSQL (`$BENCH_PG`, a database of its own, `bench_limits$BENCH_DB_SUFFIX`, dropped and
created); every figure comes from one in-process worker (threads, `-c 8`), the same for the
cases compared, so the difference is the claim's:

- drain: `--jobs` no-op jobs drained by a burst worker, jobs/s: no limit declared, then the
  same jobs under `concurrency=1000` (a limit that never binds), rounds interleaved;
- fairness: `--backlog` ready jobs of key A under `concurrency=1` with one of them running
  (A saturated), then one job of key B: the limited claim's time with A's backlog (median of
  `--samples` claims), the unlimited claim's time beside it, and B's start after its enqueue;
- idle latency: an idle worker; one job enqueued, the time until it starts (JobStarted), p50
  and p99 over `--samples`, unlimited and limited (`concurrency=100`, free) alternating.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from typing import Any

import psycopg

import onthedot
from bench.jobs import percentile
from onthedot.observability.events import JobStarted

SERVER = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
DB = "bench_limits" + os.environ.get("BENCH_DB_SUFFIX", "")


def fresh() -> str:
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB}")
        conn.execute(f"CREATE DATABASE {DB}")
    return f"{SERVER}/{DB}"


def build(url: str) -> onthedot.App:
    app = onthedot.App(url, log_events=False)

    @app.job(name="free")
    def free(n: int = 0) -> None: ...

    @app.job(name="generous", concurrency=1000)
    def generous(n: int = 0) -> None: ...

    @app.job(name="tenant", concurrency=1, key="t")
    def tenant(t: str, n: int = 0) -> None: ...

    @app.job(name="spare", concurrency=100)
    def spare(n: int = 0) -> None: ...

    app.migrate()
    app.limits.sync()
    return app


def vacuum(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE onthedot_jobs, onthedot_job_counts, onthedot_limit_keys")
        conn.execute("VACUUM ANALYZE onthedot_jobs")


def drain(app: onthedot.App, url: str, name: str, jobs: int) -> float:
    vacuum(url)
    app.jobs[name].enqueue_many([[i] for i in range(jobs)])
    worker = app.worker(concurrency=8, burst=True, scheduler=False, install_signals=False)
    t = time.perf_counter()
    done = int(worker.run())
    elapsed = time.perf_counter() - t
    assert done == jobs, (name, done)
    return jobs / elapsed


def fairness(app: onthedot.App, url: str, backlog: int, samples: int) -> dict[str, Any]:
    vacuum(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO onthedot_jobs (name, queue, args, run_at, created_at, limit_key, limits)"
            " SELECT 'tenant', 'default', '[\"A\"]', now() - interval '1 hour', now(),"
            " 'tenant|t=A', '[\"tenant|t=A\"]' FROM generate_series(1, %s)",
            (backlog,),
        )
        conn.execute("VACUUM ANALYZE onthedot_jobs")
    storage = app.storage
    assert len(storage.claim_limited("holder", "default", 1, 3600)) == 1  # A is now full
    limited, free = [], []
    for _ in range(samples):
        t = time.perf_counter()
        assert not storage.claim_limited("probe", "default", 8, 3600)
        limited.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        assert not storage.claim_jobs("probe", "default", 8, 3600)
        free.append((time.perf_counter() - t) * 1000)
    started = threading.Event()
    app.events.subscribe(lambda e: started.set(), JobStarted)
    worker = app.worker(concurrency=8, scheduler=False, install_signals=False)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    time.sleep(2.0)  # idle
    t = time.perf_counter()
    app.jobs["tenant"].enqueue("B")
    assert started.wait(30), "B never started"
    b_ms = (time.perf_counter() - t) * 1000
    worker.stop()
    thread.join(30)
    return {
        "backlog": backlog,
        "limited_claim_ms_p50": statistics.median(limited),
        "unlimited_claim_ms_p50": statistics.median(free),
        "b_start_ms": b_ms,
    }


def latency(app: onthedot.App, url: str, samples: int) -> dict[str, Any]:
    vacuum(url)
    got: dict[str, threading.Event] = {}
    app.events.subscribe(lambda e: got.get(e.job, threading.Event()).set(), JobStarted)  # type: ignore[attr-defined]
    worker = app.worker(concurrency=8, scheduler=False, install_signals=False)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    time.sleep(2.0)
    found: dict[str, list[float]] = {"free": [], "spare": []}
    for i in range(samples):
        for name in ("free", "spare") if i % 2 else ("spare", "free"):
            got[name] = threading.Event()
            time.sleep(0.05)  # idle again (the previous job finished)
            t = time.perf_counter()
            app.jobs[name].enqueue(i)
            assert got[name].wait(30)
            found[name].append((time.perf_counter() - t) * 1000)
    worker.stop()
    thread.join(30)
    return {
        f"{name}_{p}": round(percentile(v, q), 2)
        for name, v in found.items()
        for p, q in (("p50", 50), ("p99", 99))
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--backlog", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="drain,fairness,latency")
    parser.add_argument("--peers", action="store_true", help="beside PgQueuer and Celery")
    parser.add_argument("--limited", type=int, default=300)
    parser.add_argument("--rate", type=int, default=50)
    parser.add_argument("--ms", type=float, default=20.0)
    a = parser.parse_args()
    if a.peers:
        from bench.limits_peers import main as peers

        print(json.dumps(peers(a.jobs, a.limited, a.rate, a.ms, a.rounds), indent=2))
        return
    url = fresh()
    app = build(url)
    out: dict[str, Any] = {}
    only = set(a.only.split(","))
    if "drain" in only:
        rates: dict[str, list[float]] = {"free": [], "generous": []}
        for _ in range(a.rounds):
            for name in rates:
                rates[name].append(drain(app, url, name, a.jobs))
        out["drain"] = {
            name: {"median": round(statistics.median(v)), "all": [round(x) for x in v]}
            for name, v in rates.items()
        }
        out["drain"]["ratio"] = round(
            statistics.median(rates["generous"]) / statistics.median(rates["free"]), 3
        )
    if "latency" in only:
        out["latency"] = latency(app, url, a.samples)
    if "fairness" in only:
        out["fairness"] = fairness(app, url, a.backlog, a.samples)
    app.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
