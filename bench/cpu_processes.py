"""`python -m bench.cpu_processes [ROUNDS]`: only the CPU (GIL) question of workload 6, quickly.

1,000 jobs that each burn 2 ms of CPU, drained by `onthedot worker --burst` with the default
process count and the variants of `realwork.processes_round`, on PostgreSQL and SQLite,
interleaved for ROUNDS rounds (default 3); prints medians and ranges. Run it on bench/.venv's
python after a first `python -m bench` created it (same BENCH_PG as the bench).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from bench.harness import CellFailed, Results, drop_database, fresh_database, log, run_cell
from bench.plan import FULL, Context
from bench.systems import OURS, OURS_SQLITE
from bench.workloads.defaults import CPU_MS, CPU_N, drain_cli
from bench.workloads.realwork import cores


def variants() -> list[tuple[str, object, list[str]]]:
    k = str(cores())
    return [
        ("PostgreSQL, default (one process per core, c=4)", OURS, []),
        ("PostgreSQL, --processes 1 (c=4)", OURS, ["--processes", "1"]),
        (f"PostgreSQL, --processes {k} -c 1", OURS, ["--processes", k, "-c", "1"]),
        ("SQLite, default (one process, c=4)", OURS_SQLITE, []),
        (f"SQLite, --processes {k} (c=4)", OURS_SQLITE, ["--processes", k]),
        (f"SQLite, --processes {k} -c 1", OURS_SQLITE, ["--processes", k, "-c", "1"]),
    ]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    workdir = Path(tempfile.mkdtemp(prefix="onthedot-bench-"))
    ctx = Context(FULL, Results(), workdir, "", 0, {OURS.key, OURS_SQLITE.key})
    url = fresh_database(OURS.db or "")
    run_cell("onthedot", "setup", {"url": url}, timeout=300)
    out: dict[str, list[dict[str, float]]] = {}
    try:
        for r in range(rounds):
            for label, system, flags in variants():
                log(f"cpu {label} round {r + 1}")
                try:
                    res = drain_cli(ctx, system, "cpu", [CPU_MS], CPU_N, flags)  # type: ignore[arg-type]
                    out.setdefault(label, []).append(res)
                except CellFailed as exc:
                    log(f"  failed: {exc}")
    finally:
        drop_database(OURS.db or "")
    print("| configuration | jobs/s, command | jobs/s, job window | CPU ms/job, command |")
    print("|---|---|---|---|")
    for label, runs in out.items():
        cells = []
        for key, fmt in (("rate", ",.0f"), ("job_window_rate", ",.0f"), ("cpu_ms_job", ".2f")):
            vals = [x[key] for x in runs if key in x]
            cells.append(
                f"{statistics.median(vals):{fmt}} ({min(vals):{fmt}}\u2013{max(vals):{fmt}})"
                if vals
                else "n/a"
            )
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
