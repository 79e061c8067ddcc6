"""PgQueuer's cells: its asyncpg driver on uvloop, installed and tuned with its own CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import uvloop
from pgqueuer.qm import QueueManager
from pgqueuer.queries import Queries
from pgqueuer.types import QueueExecutionMode

from bench.jobs import (
    LatencyProbe,
    asamples,
    burn,
    latency_result,
    mark_first,
    mark_last,
    signal_started,
    spawn_worker,
    stop_worker,
)


def _pgq(url: str, *args: str) -> None:
    pgq = str(Path(sys.executable).parent / "pgq")
    subprocess.run([pgq, *args], env=dict(os.environ, PGDSN=url), check=True, capture_output=True)


def setup(p: dict[str, Any]) -> dict[str, Any]:
    """`pgq install` (durability as configured) and, for the tuned setup, `pgq autovac`."""
    _pgq(p["url"], "install", "--durability", p.get("durability", "durable"))
    if p.get("autovac"):
        _pgq(p["url"], "autovac")
    return {}


def _run(coro: Any) -> Any:
    return uvloop.run(coro)


async def _queries(url: str) -> tuple[asyncpg.Connection, Queries]:
    conn = await asyncpg.connect(url)
    return conn, Queries.from_asyncpg_connection(conn)


def enqueue_single(p: dict[str, Any]) -> dict[str, Any]:
    async def main() -> tuple[float, float]:
        conn, q = await _queries(p["url"])
        for _ in range(200):
            await q.enqueue("noop", None)
        t, c = time.perf_counter(), time.process_time()
        for _ in range(p["n"]):
            await q.enqueue("noop", None)
        elapsed, cpu = time.perf_counter() - t, time.process_time() - c
        await conn.close()
        return elapsed, cpu

    elapsed, cpu = _run(main())
    return {"rate": p["n"] / elapsed, "cpu_us": cpu / p["n"] * 1e6}


async def _bulk(
    q: Queries, n: int, batch: int, job: str = "noop", payload: bytes | None = None
) -> None:
    names, payloads, prios = [job] * batch, [payload] * batch, [0] * batch
    for _ in range(n // batch):
        await q.enqueue(names, payloads, prios)


def enqueue_bulk(p: dict[str, Any]) -> dict[str, Any]:
    async def main() -> tuple[float, float]:
        conn, q = await _queries(p["url"])
        await _bulk(q, 1000, 100)
        t, c = time.perf_counter(), time.process_time()
        await _bulk(q, p["n"], p["batch"])
        elapsed, cpu = time.perf_counter() - t, time.process_time() - c
        await conn.close()
        return elapsed, cpu

    n = p["n"] // p["batch"] * p["batch"]
    elapsed, cpu = _run(main())
    return {"rate": n / elapsed, "cpu_us": cpu / n * 1e6}


def preload(p: dict[str, Any]) -> dict[str, Any]:
    job, args = p.get("job", "noop"), p.get("args", [])
    payload = json.dumps(args).encode() if args else None

    async def main() -> None:
        conn, q = await _queries(p["url"])
        await _bulk(q, p["n"], min(p["n"], 10_000), job, payload)
        await conn.close()

    _run(main())
    return {}


def _manager(conn: asyncpg.Connection) -> QueueManager:
    qm = QueueManager(Queries.from_asyncpg_connection(conn))

    @qm.entrypoint("noop")
    async def noop(job: Any) -> None:
        mark_first()

    @qm.entrypoint("lat")
    async def lat(job: Any) -> None:
        signal_started(int(job.payload))

    @qm.entrypoint("io")
    async def io(job: Any) -> None:
        """Real work waiting on I/O, the async way its entrypoints are written."""
        mark_first()
        (ms,) = json.loads(job.payload)
        await asyncio.sleep(ms / 1000)
        mark_last()

    @qm.entrypoint("cpu")
    async def cpu(job: Any) -> None:
        """Blocking work off the event loop, as its docs say: asyncio.to_thread."""
        mark_first()
        (ms,) = json.loads(job.payload)
        await asyncio.to_thread(burn, ms)
        mark_last()

    return qm


def drain_worker(p: dict[str, Any]) -> dict[str, Any]:
    async def main() -> None:
        conn = await asyncpg.connect(p["url"])
        qm = _manager(conn)
        await qm.run(
            batch_size=p["batch_size"],
            mode=QueueExecutionMode.drain,
            dequeue_timeout=timedelta(seconds=1),
        )
        await conn.close()

    _run(main())
    return {"end": time.monotonic()}


def serve(p: dict[str, Any]) -> dict[str, Any]:
    async def main() -> None:
        conn = await asyncpg.connect(p["url"])
        qm = _manager(conn)
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, qm.shutdown.set)
        print("READY", flush=True)
        await qm.run(batch_size=p["batch_size"])
        await conn.close()

    _run(main())
    return {}


def latency(p: dict[str, Any]) -> dict[str, Any]:
    probe = LatencyProbe()
    worker = spawn_worker("pgqueuer", p, probe)

    async def main() -> list[float]:
        conn, q = await _queries(p["url"])

        async def enqueue(i: int) -> None:
            await q.enqueue("lat", str(i).encode())

        values: list[float] = await asamples(enqueue, probe, p["n"], p.get("warmup", 50))
        await conn.close()
        return values

    try:
        values = _run(main())
    finally:
        stop_worker(worker)
    return latency_result(values)
