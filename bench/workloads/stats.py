"""Workload 8: queue statistics on a large table. A fresh database is filled with N stored jobs
by plain SQL (`bench/stats_cells.py`: mostly finished history, 5 % queued, 1 % running, a
queued job in 50 not yet due, 5 queues, 10 job names), then `queue_stats()` and
`queued_by_name()` are timed through the storage (wall ms per call after a warm-up, and CPU
ms per call: this process plus the PostgreSQL backends, steadier on a loaded machine), and so
are the statements of schema version 3 that counted every stored job (the "before", on the
same data with version 4's index dropped inside a rolled-back transaction). onthedot only."""

from __future__ import annotations

from bench.harness import CellFailed, log, run_cell
from bench.plan import Context
from bench.systems import OURS, OURS_SQLITE


def run(ctx: Context) -> None:
    n = ctx.sizes.stats
    systems = [s for s in (OURS, OURS_SQLITE) if ctx.wants(s)]
    for r in range(ctx.sizes.rounds):
        for system in systems:
            label = f"{n:,} stored jobs"
            log(f"stats {system.key} n={n} round {r + 1}")
            try:
                res = run_cell(
                    "stats", "stats", ctx.params(ctx.fresh_url(system), n=n), timeout=1800
                )
            except CellFailed as exc:
                for metric in ("queue_stats", "queued_by_name"):
                    ctx.results.cell("stats", metric, system.key, label, "ms").errors.append(
                        str(exc)
                    )
                continue
            for metric in ("queue_stats", "queued_by_name"):
                now, before = res[metric], res[f"before_{metric}"]
                cell = ctx.results.cell("stats", metric, system.key, label, "ms", higher=False)
                cell.add(
                    now["median"],
                    min_ms=now["min"],
                    max_ms=now["max"],
                    cpu_ms=now["cpu_ms"],
                    before_ms=before["median"],
                    before_cpu_ms=before["cpu_ms"],
                    fill_s=res["fill_s"],
                )
