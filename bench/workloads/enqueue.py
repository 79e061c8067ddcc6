"""Workload 1: single enqueue (one job per call, sequential) and bulk enqueue (batches)."""

from __future__ import annotations

from bench.harness import CellFailed, log, run_cell
from bench.plan import Context
from bench.systems import ALL

SINGLE = {
    "onthedot": "enqueue_single",
    "floor": "insert_single",
    "pgqueuer": "enqueue_single",
    "procrastinate": "enqueue_single",
    "celery": "enqueue_single",
}
BULK = {
    "onthedot": "enqueue_bulk",
    "floor": "copy",
    "pgqueuer": "enqueue_bulk",
    "procrastinate": "enqueue_bulk",
}


def run(ctx: Context) -> None:
    s = ctx.sizes
    for r in range(s.rounds):
        for system in ALL:
            if not ctx.wants(system):
                continue
            cfg = "INSERT per transaction" if system.cell == "floor" else "enqueue() per job"
            cell = ctx.results.cell("enqueue", "single", system.key, cfg, "jobs/s")
            url = ctx.fresh_url(system)
            log(f"enqueue single {system.key} round {r + 1}")
            try:
                res = run_cell(
                    system.cell,
                    SINGLE[system.cell],
                    ctx.params(
                        url,
                        n=min(s.single, s.bulk_slow) if system.slow_bulk else s.single,
                        profile=ctx.profile("enqueue_single"),
                    ),
                    timeout=600,
                )
                cell.add(res["rate"], cpu_us=res.get("cpu_us"))
            except CellFailed as exc:
                cell.errors.append(str(exc))
        for system in ALL:
            if not ctx.wants(system) or system.cell not in BULK:
                continue
            copy = system.cell == "floor" or (system.cell == "onthedot" and not system.sqlite)
            cfg = f"batches of {s.batch}" + (" (COPY)" if copy else "")
            cell = ctx.results.cell("enqueue", "bulk", system.key, cfg, "jobs/s")
            url = ctx.fresh_url(system)
            log(f"enqueue bulk {system.key} round {r + 1}")
            try:
                n = s.bulk_slow if system.slow_bulk else s.bulk
                res = run_cell(
                    system.cell,
                    BULK[system.cell],
                    ctx.params(url, n=n, batch=s.batch, profile=ctx.profile("enqueue_bulk")),
                    timeout=900,
                )
                cell.add(res["rate"], cpu_us=res.get("cpu_us"))
            except CellFailed as exc:
                cell.errors.append(str(exc))
