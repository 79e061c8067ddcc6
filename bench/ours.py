"""onthedot's cells (run in subprocesses by the workloads)."""

from __future__ import annotations

import asyncio
import cProfile
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import onthedot
from bench.jobs import (
    LatencyProbe,
    burn,
    latency_result,
    mark_first,
    mark_last,
    percentile,
    samples,
    signal_started,
    spawn_worker,
    stop_worker,
)
from onthedot.clock import ManualClock


def make_app(url: str, **kw: Any) -> onthedot.App:
    app = onthedot.App(url, log_events=False, **kw)

    @app.job(name="noop")
    def noop() -> None:
        mark_first()

    @app.job(name="lat")
    def lat(sample: int) -> None:
        signal_started(sample)

    @app.job(name="io")
    def io(ms: float) -> None:
        """Real work, waiting on I/O: `ms` milliseconds asleep (the GIL released)."""
        mark_first()
        time.sleep(ms / 1000)
        mark_last()

    @app.job(name="aio")
    async def aio(ms: float) -> None:
        """The I/O job written as an async job: `ms` milliseconds of `asyncio.sleep`."""
        mark_first()
        await asyncio.sleep(ms / 1000)
        mark_last()

    @app.job(name="cpu")
    def cpu(ms: float) -> None:
        """Real work, burning CPU: `ms` milliseconds of CPU in a pure-Python loop (the GIL held)."""
        mark_first()
        burn(ms)
        mark_last()

    return app


def cli_app() -> onthedot.App:
    """The `--app` of the plain `onthedot worker` cells: the same jobs, the URL from
    $ONTHEDOT_DATABASE_URL."""
    return make_app(os.environ["ONTHEDOT_DATABASE_URL"])


def _profiled(params: dict[str, Any], fn: Any) -> Any:
    """Run fn under cProfile when the cell was asked to (`--profile`), dumping to a file."""
    out = params.get("profile")
    if not out:
        return fn()
    prof = cProfile.Profile()
    try:
        return prof.runcall(fn)
    finally:
        prof.dump_stats(f"{out}.{os.getpid()}")


def setup(p: dict[str, Any]) -> dict[str, Any]:
    app = make_app(p["url"])
    app.migrate()
    app.close()
    return {}


def enqueue_single(p: dict[str, Any]) -> dict[str, Any]:
    app = make_app(p["url"])
    noop = app.jobs["noop"]
    for _ in range(p.get("warmup", 200)):
        noop.enqueue()
    n = p["n"]

    def run() -> tuple[float, float]:
        t, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            noop.enqueue()
        return time.perf_counter() - t, time.process_time() - c

    elapsed, cpu = _profiled(p, run)
    app.close()
    return {"rate": n / elapsed, "cpu_us": cpu / n * 1e6}


def enqueue_bulk(p: dict[str, Any]) -> dict[str, Any]:
    app = make_app(p["url"])
    noop = app.jobs["noop"]
    noop.enqueue_many([[]] * 100)
    n, batch = p["n"], p["batch"]
    calls: list[list[Any]] = [[] for _ in range(batch)]

    def run() -> tuple[float, float]:
        t, c = time.perf_counter(), time.process_time()
        for _ in range(n // batch):
            noop.enqueue_many(calls)
        return time.perf_counter() - t, time.process_time() - c

    elapsed, cpu = _profiled(p, run)
    app.close()
    done = n // batch * batch
    return {"rate": done / elapsed, "cpu_us": cpu / done * 1e6}


def preload(p: dict[str, Any]) -> dict[str, Any]:
    app = make_app(p["url"])
    fn = app.jobs[p.get("job", "noop")]
    args = p.get("args", [])
    left = p["n"]
    while left > 0:
        k = min(left, 10_000)
        fn.enqueue_many([list(args) for _ in range(k)])
        left -= k
    app.close()
    return {}


def drain_worker(p: dict[str, Any]) -> dict[str, Any]:
    """A burst worker: runs until the queue is empty, then reports when it finished."""
    app = make_app(p["url"], lease=p.get("lease", 30.0))
    worker = app.worker(
        concurrency=p["concurrency"],
        batch_size=p.get("batch_size"),
        prefetch=p.get("prefetch"),
        burst=p.get("burst", True),
        scheduler=False,
        install_signals=p.get("signals", False),
        poll_interval=p.get("poll_interval", 1.0),
    )
    processed = _profiled(p, worker.run)
    end = time.monotonic()
    app.close()
    return {"end": end, "processed": processed}


def serve(p: dict[str, Any]) -> dict[str, Any]:
    """A long-running worker (default options but the concurrency), stopped by SIGTERM."""
    app = make_app(p["url"])
    worker = app.worker(concurrency=p.get("concurrency", 4), install_signals=True)
    print("READY", flush=True)
    worker.run()
    app.close()
    return {}


def latency(p: dict[str, Any]) -> dict[str, Any]:
    """Producer: start a worker process, then enqueue one job at a time and time its start."""
    probe = LatencyProbe()
    worker = spawn_worker("onthedot", p, probe)
    try:
        app = make_app(p["url"])
        lat = app.jobs["lat"]
        values = samples(lambda i: lat.enqueue(i), probe, p["n"], p.get("warmup", 50))
        app.close()
    finally:
        stop_worker(worker)
    return latency_result(values)


# -- scheduler --------------------------------------------------------------------------------
T0 = datetime(2031, 1, 1, 0, 0, 30, tzinfo=UTC)  # a manual clock: half a minute before a slot


ANCHOR = datetime(2030, 1, 1, tzinfo=UTC)


def sched_app(url: str, n: int, clock: ManualClock, distinct: bool = False) -> onthedot.App:
    """N schedules due every minute. `distinct`: each has a spec of its own (an interval of
    60 s from its own anchor, a whole number of minutes from the others), so no two share the
    evaluation of their timing: the worst case for the scheduler's memo."""
    app = make_app(url, clock=clock)
    noop = app.jobs["noop"]
    for i in range(n):
        if distinct:
            spec: Any = onthedot.every(60, anchor=ANCHOR + timedelta(minutes=i))
        else:
            spec = "* * * * *"
        app.schedule(f"s{i:06d}", spec, noop, catchup="none")
    return app


def sched_sync(p: dict[str, Any]) -> dict[str, Any]:
    """Declare N every-minute schedules and sync them into the ledger (setup, timed apart)."""
    app = sched_app(p["url"], p["n"], ManualClock(T0), p.get("distinct", False))

    t = time.perf_counter()
    sched = app.scheduler()
    sched.prepare()
    sched.sync()
    return {"sync_s": time.perf_counter() - t}


def sched_idle(p: dict[str, Any]) -> dict[str, Any]:
    """Cost of one scheduler loop iteration when nothing is due: one tick, which also returns
    the next due instant the loop sleeps until."""

    clock = ManualClock(T0)
    app = sched_app(p["url"], p["n"], clock)
    sched = app.scheduler()
    sched.prepare()
    for _ in range(20):
        sched.tick()
    walls, cpus = [], []

    def run() -> None:
        for _ in range(p.get("ticks", 200)):
            t, c = time.perf_counter(), time.process_time()
            results = sched.tick()
            walls.append((time.perf_counter() - t) * 1000)
            cpus.append((time.process_time() - c) * 1000)
            assert sum(r.rows for r in results) == 0
            assert results[-1].idle and results[-1].next_due_at is not None

    _profiled(p, run)
    return {
        "wall_ms": percentile(walls, 50),
        "wall_p99_ms": percentile(walls, 99),
        "cpu_ms": percentile(cpus, 50),
    }


def sched_burst(p: dict[str, Any]) -> dict[str, Any]:
    """One of several scheduler processes: at `start` (monotonic) move the clock to the slot
    every schedule shares and tick until nothing is due; report when this process finished."""

    clock = ManualClock(T0)
    app = sched_app(p["url"], p["n"], clock, p.get("distinct", False))
    sched = app.scheduler(worker_id=f"bench-{os.getpid()}")
    sched.prepare()
    app.storage.db_now()  # connect before the clock starts
    print("READY", flush=True)
    sys.stdin.readline()  # all processes are released together
    clock.set(T0 + timedelta(seconds=30))
    t0 = time.monotonic()
    c0 = time.process_time()
    slots = 0

    def run() -> None:
        nonlocal slots
        for r in sched.tick():
            slots += len(r.recorded)

    _profiled(p, run)
    end = time.monotonic()
    return {"start": t0, "end": end, "slots": slots, "cpu_s": time.process_time() - c0}


def sched_verify(p: dict[str, Any]) -> dict[str, Any]:
    import psycopg

    slot = T0 + timedelta(seconds=30)
    with psycopg.connect(p["url"]) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT (schedule_key, slot)),"
            " count(*) FILTER (WHERE slot = %s) FROM onthedot_jobs WHERE schedule_key IS NOT NULL",
            (slot,),
        ).fetchone()
        hist = conn.execute("SELECT count(*) FROM onthedot_slots").fetchone()
    assert row is not None and hist is not None
    jobs, distinct, at_slot = row
    return {
        "jobs": jobs,
        "duplicates": jobs - distinct,
        "misses": p["n"] - at_slot,
        "history": hist[0],
    }


# -- crash safety -----------------------------------------------------------------------------
def crash_verify(p: dict[str, Any]) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(p["url"]) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE state = 'succeeded'),"
            " count(*) FILTER (WHERE state <> 'succeeded'),"
            " count(*) FILTER (WHERE attempts > 1), count(*) FROM onthedot_jobs"
        ).fetchone()
    assert row is not None
    ok, not_done, rerun, total = row
    return {
        "succeeded": ok,
        "lost": p["n"] - ok,
        "unfinished": not_done,
        "rerun": rerun,
        "total": total,
    }
