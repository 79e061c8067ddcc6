"""Workload 6, real work beside the peers: the 5 ms I/O and 2 ms CPU jobs of `defaults.py`
drained by PgQueuer (default and tuned), Procrastinate and Celery, each written and run the way
its docs say for such jobs, plus onthedot's process-count cells for the CPU (GIL) question.

How each system runs them (`how` in the report's configuration column):

- I/O, 5 ms: the async systems await `asyncio.sleep(0.005)` (PgQueuer's entrypoints must be
  async; Procrastinate's async tasks); the sync workers call `time.sleep(0.005)` (onthedot's
  threads, Celery). Celery runs its default prefork pool (one child per core) and, as its docs
  advise for I/O-bound tasks, a thread pool (`-P threads -c 10`; eventlet/gevent are not
  installed). onthedot runs them once more as async jobs (`asyncio.sleep`), the async way.
- CPU, 2 ms: the same pure-Python loop for everyone (`bench.jobs.burn`). PgQueuer runs it with
  `asyncio.to_thread`, as its error for a blocking entrypoint says to; Procrastinate as a sync
  task (its worker runs those in a thread); Celery in its prefork children.

Every cell states processes x concurrency and gets two ratios: to its own ideal (its slots / 5
ms for I/O; min(processes, cores) / 2 ms for CPU, since one process runs Python on one core at a
time) and to the same machine reference (I/O: cores x 4 / 5 ms, the ideal of `onthedot worker`'s
defaults; CPU: cores / 2 ms).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from bench.harness import CellFailed, log
from bench.plan import Context
from bench.systems import (
    CELERY,
    OURS,
    OURS_SQLITE,
    PGQ_DEFAULT,
    PGQ_TUNED,
    PROCRASTINATE,
    DrainConfig,
)

IO_MS, IO_N = 5.0, 10_000
CPU_MS, CPU_N = 2.0, 1_000


def cores() -> int:
    return len(os.sched_getaffinity(0))


def machine_ideal(metric: str) -> float:
    """The reference every row of a real-work table is also divided by."""
    if metric.startswith("io"):
        return cores() * 4 / (IO_MS / 1000)
    return cores() / (CPU_MS / 1000)


def machine_ratio(metric: str, rate: float) -> dict[str, float]:
    ref = machine_ideal(metric)
    return {"machine_ideal": ref, "of_machine": rate / ref}


@dataclass(frozen=True)
class Real:
    cfg: DrainConfig
    procs: int  # processes running jobs
    slots: int | None  # jobs in flight at most (processes x concurrency); None: no cap

    def ideal(self, metric: str) -> float | None:
        if metric.startswith("io"):
            return self.slots / (IO_MS / 1000) if self.slots else None
        return min(self.procs, cores()) / (CPU_MS / 1000)


def _cfg(system: Any, label: str, procs: int, params: dict[str, Any]) -> DrainConfig:
    return DrainConfig(system, label, procs, params)


def io_configs() -> list[Real]:
    n = cores()
    return [
        Real(
            _cfg(
                PGQ_DEFAULT,
                "1 proc, batch 10, no cap in flight; async entrypoint, asyncio.sleep",
                1,
                {"batch_size": 10},
            ),
            1,
            None,
        ),
        Real(
            _cfg(
                PGQ_TUNED,
                f"{n} proc, batch 200, no cap in flight, balanced+autovac; asyncio.sleep",
                n,
                {"batch_size": 200},
            ),
            n,
            None,
        ),
        Real(
            _cfg(
                PROCRASTINATE,
                f"{n} proc x c=10 = {n * 10} slots; async task, asyncio.sleep",
                n,
                {"concurrency": 10},
            ),
            n,
            n * 10,
        ),
        Real(
            _cfg(
                CELERY,
                f"prefork c={n} (default: cores) = {n} slots, acks_late; time.sleep",
                1,
                {"pool": "prefork", "concurrency": n, "prefetch": 4},
            ),
            n,
            n,
        ),
        Real(
            _cfg(
                CELERY,
                "threads c=10 = 10 slots (its I/O advice), acks_late; time.sleep",
                1,
                {"pool": "threads", "concurrency": 10, "prefetch": 4},
            ),
            1,
            10,
        ),
    ]


def cpu_configs() -> list[Real]:
    n = cores()
    return [
        Real(
            _cfg(PGQ_DEFAULT, "1 proc, batch 10; asyncio.to_thread(burn)", 1, {"batch_size": 10}),
            1,
            None,
        ),
        Real(
            _cfg(
                PGQ_TUNED,
                f"{n} proc, batch 200, balanced+autovac; asyncio.to_thread(burn)",
                n,
                {"batch_size": 200},
            ),
            n,
            None,
        ),
        Real(
            _cfg(PROCRASTINATE, f"{n} proc x c=10; sync task (a thread)", n, {"concurrency": 10}),
            n,
            n * 10,
        ),
        Real(
            _cfg(
                CELERY,
                f"prefork c={n} (default: cores), acks_late",
                1,
                {"pool": "prefork", "concurrency": n, "prefetch": 4},
            ),
            n,
            n,
        ),
    ]


def run_round(ctx: Context, r: int, scale: int) -> None:
    """One interleaved round of the peers' real-work cells and onthedot's process counts."""
    from bench.workloads.drain import drain_once

    cells = [("io 5 ms", IO_N // scale, IO_MS, c) for c in io_configs()]
    cells += [("cpu 2 ms", CPU_N // scale, CPU_MS, c) for c in cpu_configs()]
    for metric, n, ms, real in cells:
        system = real.cfg.system
        if not ctx.wants(system):
            continue
        cell = ctx.results.cell("defaults", metric, system.key, real.cfg.label, "jobs/s")
        log(f"defaults {system.key} {metric} [{real.cfg.label}] n={n} round {r + 1}")
        try:
            res = drain_once(ctx, real.cfg, n, {"job": metric[:3].strip(), "args": [ms]})
            rate = res.pop("rate")
            ideal = real.ideal(metric)
            if ideal:
                res["ideal"] = ideal
                res["of_ideal"] = rate / ideal
            res.update(machine_ratio(metric, rate))
            cell.add(rate, **res)
        except CellFailed as exc:
            log(f"  failed: {exc}")
            cell.errors.append(str(exc))
    async_io_round(ctx, r, scale)
    processes_round(ctx, r, scale)


def async_io_round(ctx: Context, r: int, scale: int) -> None:
    """The 5 ms I/O jobs written as onthedot async jobs (`asyncio.sleep`, the way of the async
    systems), by the same plain `onthedot worker --burst`: async jobs take no executor thread,
    so only the jobs a worker holds (concurrency + prefetch) bound them."""
    from bench.workloads.defaults import drain_cli, processes

    n = IO_N // scale
    for system in (OURS, OURS_SQLITE):
        if not ctx.wants(system):
            continue
        procs = processes(system)
        label = f"`onthedot worker --burst`, async job: asyncio.sleep ({procs} proc, no thread cap)"
        cell = ctx.results.cell("defaults", "io 5 ms", system.key, label, "jobs/s")
        log(f"defaults {system.key} io 5 ms async n={n} round {r + 1}")
        try:
            res = drain_cli(ctx, system, "aio", [IO_MS], n)
            rate = res.pop("rate")
            res.update(machine_ratio("io 5 ms", rate))
            cell.add(rate, **res)
        except CellFailed as exc:
            log(f"  failed: {exc}")
            cell.errors.append(str(exc))


def processes_round(ctx: Context, r: int, scale: int) -> None:
    """2 ms CPU jobs by `onthedot worker --burst --processes N` for the N its default does not
    already run: 1 on PostgreSQL (the default is one per core), one per core on SQLite (default
    1); and one per core with one executor thread each (`-c 1`: no GIL shared by threads)."""
    from bench.workloads.defaults import CONCURRENCY, drain_cli

    n, k = CPU_N // scale, cores()
    variants = [(OURS, 1, CONCURRENCY), (OURS, k, 1), (OURS_SQLITE, k, CONCURRENCY)]
    variants.append((OURS_SQLITE, k, 1))
    for system, procs, conc in variants:
        if not ctx.wants(system):
            continue
        flags = ["--processes", str(procs)] + (["-c", str(conc)] if conc != CONCURRENCY else [])
        label = f"`onthedot worker --burst {' '.join(flags)}` ({procs} proc x c={conc})"
        cell = ctx.results.cell("defaults", "cpu 2 ms", system.key, label, "jobs/s")
        log(f"defaults {system.key} cpu 2 ms {' '.join(flags)} n={n} round {r + 1}")
        try:
            res = drain_cli(ctx, system, "cpu", [CPU_MS], n, flags)
            rate = res.pop("rate")
            res["ideal"] = min(procs, cores()) / (CPU_MS / 1000)
            res["of_ideal"] = rate / res["ideal"]
            res.update(machine_ratio("cpu 2 ms", rate))
            cell.add(rate, **res)
        except CellFailed as exc:
            log(f"  failed: {exc}")
            cell.errors.append(str(exc))
