"""What every system's no-op job does, identically: nothing, except that the first job a
process runs writes the monotonic time to the run directory (the start of the drain window),
and latency jobs send one UDP datagram to the waiting producer."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

_first_done = False
_sock: socket.socket | None = None


def mark_first() -> None:
    global _first_done
    if _first_done:
        return
    _first_done = True
    run = os.environ.get("BENCH_RUN_DIR")
    if run:
        with open(os.path.join(run, f"first-{os.getpid()}-{time.monotonic_ns()}"), "w") as f:
            f.write(repr(time.monotonic()))


_last = 0.0
_last_fd: int | None = None


def mark_last() -> None:
    """At the end of a real-work job: the monotonic time it finished, overwritten in a file of
    the process (the latest wins), which closes the job window (first start -> last finish)."""
    global _last, _last_fd
    run = os.environ.get("BENCH_RUN_DIR")
    t = time.monotonic()
    if not run or t <= _last:
        return
    _last = t
    if _last_fd is None:
        _last_fd = os.open(os.path.join(run, f"last-{os.getpid()}"), os.O_WRONLY | os.O_CREAT)
    os.pwrite(_last_fd, f"{t:24.6f}".encode(), 0)


def burn(ms: float) -> None:
    """The CPU-bound job of every system: a pure-Python loop until this thread has used `ms`
    milliseconds of CPU. Counted in the thread's own CPU time, not the wall clock: a job
    preempted by another process, or waiting for the GIL behind another thread, still does its
    whole `ms` of work (a wall-clock loop would finish early and flatter threads)."""
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


def signal_started(sample: int) -> None:
    global _sock
    if _sock is None:
        _sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    port = int(os.environ["BENCH_LAT_PORT"])
    _sock.sendto(str(sample).encode(), ("127.0.0.1", port))


class LatencyProbe:
    """The producer side: a UDP socket the latency jobs report to."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]

    def wait(self, sample: int, timeout: float = 30.0) -> float:
        """Block until job `sample` started; return the monotonic time it was seen."""
        self.sock.settimeout(timeout)
        while True:
            data, _ = self.sock.recvfrom(64)
            if int(data) == sample:
                return time.perf_counter()


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _gap(i: int) -> float:
    return 0.005 + (i % 7) * 0.001  # the worker is idle again, waiting for its wake-up


def samples(enqueue: Any, probe: LatencyProbe, n: int, warmup: int) -> list[float]:
    """Sequential enqueue -> start samples in milliseconds (the first `warmup` discarded)."""
    out: list[float] = []
    for i in range(-warmup, n):
        time.sleep(_gap(i))
        t = time.perf_counter()
        enqueue(i)
        seen = probe.wait(i)
        if i >= 0:
            out.append((seen - t) * 1000.0)
    return out


async def asamples(enqueue: Any, probe: LatencyProbe, n: int, warmup: int) -> list[float]:
    """`samples` for async producers (the wait blocks the loop, which has nothing else to do)."""
    out: list[float] = []
    for i in range(-warmup, n):
        await asyncio.sleep(_gap(i))
        t = time.perf_counter()
        await enqueue(i)
        seen = probe.wait(i)
        if i >= 0:
            out.append((seen - t) * 1000.0)
    return out


def latency_result(values: list[float]) -> dict[str, Any]:
    return {
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": max(values),
        "n": len(values),
    }


def spawn_worker(system: str, params: dict[str, Any], probe: LatencyProbe) -> Any:
    """Start `bench.cell SYSTEM serve` with the probe's port; return once it printed READY."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "bench.cell", system, "serve", json.dumps(params)],
        env=dict(os.environ, BENCH_LAT_PORT=str(probe.port)),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    worker.stdout.readline()
    return worker


def stop_worker(worker: Any) -> None:
    worker.send_signal(signal.SIGTERM)
    try:
        worker.wait(30)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()
