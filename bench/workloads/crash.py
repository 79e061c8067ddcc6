"""Workload 5: SIGKILL a worker mid-drain, start another: no job may be lost.

The killed worker's jobs are leased; the new worker's keeper rescues them once the lease
(2 s here) expires. Jobs in flight at the kill may run twice (at-least-once): counted.
"""

from __future__ import annotations

import signal
import time

from bench.harness import CellFailed, kill_group, log, result_of, run_cell, spawn
from bench.plan import Context
from bench.systems import OURS, remaining


def run(ctx: Context) -> None:
    if not ctx.wants(OURS):
        return
    n = ctx.sizes.crash
    for r in range(ctx.sizes.rounds):
        cell = ctx.results.cell(
            "crash", "lost", OURS.key, "SIGKILL at ~40%, lease 2 s", "jobs", higher=False
        )
        log(f"crash n={n} round {r + 1}")
        try:
            cell.add(**_once(ctx, n))
        except CellFailed as exc:
            log(f"  failed: {exc}")
            cell.errors.append(str(exc))


def _once(ctx: Context, n: int) -> dict[str, float]:
    url = ctx.fresh_url(OURS)
    run_cell("onthedot", "preload", {"url": url, "n": n}, timeout=300)
    params = {
        "url": url,
        "concurrency": 4,
        "batch_size": 100,
        "prefetch": 100,
        "lease": 2.0,
        "burst": False,
        "signals": True,
    }
    first = spawn("onthedot", "drain_worker", params)
    deadline = time.monotonic() + 300
    while remaining(OURS, url) > n * 0.6:
        if time.monotonic() > deadline or first.poll() is not None:
            kill_group(first)
            raise CellFailed("the first worker did not get going")
        time.sleep(0.01)
    kill_group(first, signal.SIGKILL)
    first.wait()
    at_kill = n - remaining(OURS, url)
    restarted = time.monotonic()
    second = spawn("onthedot", "drain_worker", params)
    try:
        while remaining(OURS, url) > 0:
            if time.monotonic() > deadline or second.poll() is not None:
                raise CellFailed(f"{remaining(OURS, url)} jobs never finished")
            time.sleep(0.02)
        recovery = time.monotonic() - restarted
        second.send_signal(signal.SIGTERM)
        result_of(second, timeout=60)
    finally:
        kill_group(second)
    check = run_cell("onthedot", "crash_verify", {"url": url, "n": n}, timeout=60)
    return {
        "value": check["lost"],
        "rerun": check["rerun"],
        "done_at_kill": at_kill,
        "recovery_s": recovery,
        "unfinished": check["unfinished"],
    }
