"""Procrastinate's cells: its psycopg connector, async tasks, jobs deleted when done."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import procrastinate

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


def make_app(url: str) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop")
    async def noop() -> None:
        mark_first()

    @app.task(name="lat")
    async def lat(sample: int) -> None:
        signal_started(sample)

    @app.task(name="io")
    async def io(ms: float) -> None:
        """Real work waiting on I/O, as an async task."""
        mark_first()
        await asyncio.sleep(ms / 1000)
        mark_last()

    @app.task(name="cpu")
    def cpu(ms: float) -> None:
        """CPU-bound work as a sync task (the worker runs it in a thread)."""
        mark_first()
        burn(ms)
        mark_last()

    return app


def _run(p: dict[str, Any], body: Any) -> Any:
    async def main() -> Any:
        app = make_app(p["url"])
        async with app.open_async():
            return await body(app)

    return asyncio.run(main())


def setup(p: dict[str, Any]) -> dict[str, Any]:
    _run(p, lambda app: app.schema_manager.apply_schema_async())
    return {}


def enqueue_single(p: dict[str, Any]) -> dict[str, Any]:
    async def body(app: procrastinate.App) -> tuple[float, float]:
        noop = app.tasks["noop"]
        for _ in range(200):
            await noop.defer_async()
        t, c = time.perf_counter(), time.process_time()
        for _ in range(p["n"]):
            await noop.defer_async()
        return time.perf_counter() - t, time.process_time() - c

    elapsed, cpu = _run(p, body)
    return {"rate": p["n"] / elapsed, "cpu_us": cpu / p["n"] * 1e6}


async def _bulk(
    app: procrastinate.App, n: int, batch: int, job: str = "noop", kw: dict[str, Any] | None = None
) -> None:
    task = app.tasks[job]
    kwargs: list[dict[str, Any]] = [dict(kw or {}) for _ in range(batch)]
    for _ in range(n // batch):
        await task.batch_defer_async(*kwargs)


def enqueue_bulk(p: dict[str, Any]) -> dict[str, Any]:
    async def body(app: procrastinate.App) -> tuple[float, float]:
        await _bulk(app, 1000, 100)
        t, c = time.perf_counter(), time.process_time()
        await _bulk(app, p["n"], p["batch"])
        return time.perf_counter() - t, time.process_time() - c

    n = p["n"] // p["batch"] * p["batch"]
    elapsed, cpu = _run(p, body)
    return {"rate": n / elapsed, "cpu_us": cpu / n * 1e6}


def preload(p: dict[str, Any]) -> dict[str, Any]:
    job, args = p.get("job", "noop"), p.get("args", [])
    kw = {"ms": args[0]} if args else None
    _run(p, lambda app: _bulk(app, p["n"], min(p["n"], 10_000), job, kw))
    return {}


def drain_worker(p: dict[str, Any]) -> dict[str, Any]:
    _run(
        p,
        lambda app: app.run_worker_async(
            concurrency=p["concurrency"],
            wait=False,
            delete_jobs="always",
            install_signal_handlers=False,
        ),
    )
    return {"end": time.monotonic()}


def serve(p: dict[str, Any]) -> dict[str, Any]:
    async def body(app: procrastinate.App) -> None:
        task = asyncio.ensure_future(
            app.run_worker_async(
                concurrency=p["concurrency"], delete_jobs="always", install_signal_handlers=False
            )
        )
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await asyncio.sleep(0.5)  # the worker has started listening
        print("READY", flush=True)
        try:
            await task
        except asyncio.CancelledError:
            pass

    _run(p, body)
    return {}


def latency(p: dict[str, Any]) -> dict[str, Any]:
    probe = LatencyProbe()
    worker = spawn_worker("procrastinate", p, probe)

    async def body(app: procrastinate.App) -> list[float]:
        lat = app.tasks["lat"]

        async def enqueue(i: int) -> None:
            await lat.defer_async(sample=i)

        values: list[float] = await asamples(enqueue, probe, p["n"], p.get("warmup", 50))
        return values

    try:
        values = _run(p, body)
    finally:
        stop_worker(worker)
    return latency_result(values)
