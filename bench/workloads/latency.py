"""Workload 3: idle latency, 1,000 sequential enqueue -> start samples against an idle worker."""

from __future__ import annotations

from bench.harness import CellFailed, log, run_cell
from bench.plan import Context
from bench.systems import LATENCY


def run(ctx: Context) -> None:
    s = ctx.sizes
    for r in range(s.rounds):
        for system, params in LATENCY:
            if not ctx.wants(system):
                continue
            cfg = ", ".join(f"{k}={v}" for k, v in params.items()) or "LISTEN + claim-by-delete"
            p50 = ctx.results.cell("latency", "p50", system.key, cfg, "ms", higher=False)
            p99 = ctx.results.cell("latency", "p99", system.key, cfg, "ms", higher=False)
            url = ctx.fresh_url(system)
            log(f"latency {system.key} round {r + 1}")
            try:
                res = run_cell(
                    system.cell, "latency", ctx.params(url, n=s.latency, **params), timeout=600
                )
                p50.add(res["p50"], p90=res["p90"], max=res["max"])
                p99.add(res["p99"])
            except CellFailed as exc:
                p50.errors.append(str(exc))
