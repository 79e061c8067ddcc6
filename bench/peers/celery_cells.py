"""Celery's cells. The broker is a Redis server the harness starts for the run (no
persistence, as Celery is usually benchmarked; said so in the report)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.jobs import LatencyProbe, latency_result, samples


def worker_command(p: dict[str, Any]) -> list[str]:
    celery = str(Path(sys.executable).parent / "celery")
    return [
        celery,
        "-A",
        "bench.peers.celery_app",
        "worker",
        "-P",
        p["pool"],
        "-c",
        str(p["concurrency"]),
        "-Q",
        "bench",
        "-l",
        "warning",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def _env(p: dict[str, Any]) -> dict[str, str]:
    return dict(os.environ, BENCH_CELERY_PREFETCH=str(p.get("prefetch", 4)))


def enqueue_single(p: dict[str, Any]) -> dict[str, Any]:
    from bench.peers.celery_app import noop

    for _ in range(200):
        noop.delay()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(p["n"]):
        noop.delay()
    elapsed, cpu = time.perf_counter() - t, time.process_time() - c
    return {"rate": p["n"] / elapsed, "cpu_us": cpu / p["n"] * 1e6}


def preload(p: dict[str, Any]) -> dict[str, Any]:
    from bench.peers import celery_app

    task = getattr(celery_app, p.get("job", "noop"))
    args = p.get("args", [])
    with celery_app.app.producer_or_acquire() as producer:
        for _ in range(p["n"]):
            task.apply_async(args, producer=producer)
    return {}


def latency(p: dict[str, Any]) -> dict[str, Any]:
    from bench.peers.celery_app import lat

    probe = LatencyProbe()
    env = dict(_env(p), BENCH_LAT_PORT=str(probe.port))
    worker = subprocess.Popen(worker_command(p), env=env, stdout=subprocess.DEVNULL)
    try:
        values = samples(lambda i: lat.delay(i), probe, p["n"], p.get("warmup", 50))
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    return latency_result(values)
