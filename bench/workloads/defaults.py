"""Workload 6: onthedot as a user runs it, nothing tuned: a plain `onthedot worker --burst`.

- drain: the no-op drain of workload 2, by `python -m onthedot --app bench.ours:cli_app worker
  --burst` (on PostgreSQL one process per core under the supervisor, the claim batch and the
  prefetch sized by themselves); the peak RSS of the whole process tree is sampled during it;
- idle RSS: the same command without `--burst` on an empty queue, once every worker registered;
- real work: 10k jobs that each sleep 5 ms (I/O) and 1k jobs that each burn 2 ms of CPU,
  drained the same way. The ideal is processes x concurrency / 5 ms for I/O and cores / 2 ms
  for CPU; the report gives the ratio to it.

The window is the same as workload 2's: from the first job run to the command's exit.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading
import time
from typing import Any

import psycopg

from bench.harness import (
    REPO,
    CellFailed,
    _process_tree,
    cell_env,
    first_marks,
    job_window,
    kill_group,
    log,
    python,
    run_cell,
    run_dir,
    wait_no_backends,
)
from bench.plan import Context
from bench.systems import OURS, OURS_SQLITE, System, remaining
from bench.workloads import realwork

CONCURRENCY = 4  # onthedot worker's default
IO_MS, IO_N = 5.0, 10_000
CPU_MS, CPU_N = 2.0, 1_000


def cores() -> int:
    return len(os.sched_getaffinity(0))


def processes(system: System) -> int:
    return 1 if system.sqlite else cores()  # the default of `onthedot worker`


def run(ctx: Context) -> None:
    systems = [s for s in (OURS, OURS_SQLITE) if ctx.wants(s)]
    scale = 1 if ctx.sizes.rounds > 1 else 4  # --quick: a quarter of the real-work jobs
    for r in range(ctx.sizes.rounds):
        for system in systems:
            procs = processes(system)
            label = f"`onthedot worker --burst` ({procs} proc x c={CONCURRENCY}, sized itself)"
            cells: list[tuple[str, str, int, list[float], float]] = [
                ("drain", "noop", ctx.sizes.drain, [], 0.0),
                ("io 5 ms", "io", IO_N // scale, [IO_MS], procs * CONCURRENCY / (IO_MS / 1000)),
                ("cpu 2 ms", "cpu", CPU_N // scale, [CPU_MS], cores() / (CPU_MS / 1000)),
            ]
            for metric, job, n, args, ideal in cells:
                cell = ctx.results.cell("defaults", metric, system.key, label, "jobs/s")
                log(f"defaults {system.key} {metric} n={n} round {r + 1}")
                try:
                    res = drain_cli(ctx, system, job, args, n)
                    if ideal:
                        res["ideal"] = ideal
                        res["of_ideal"] = res["rate"] / ideal
                        res.update(realwork.machine_ratio(metric, res["rate"]))
                    cell.add(res.pop("rate"), **res)
                except CellFailed as exc:
                    log(f"  failed: {exc}")
                    cell.errors.append(str(exc))
            idle = f"`onthedot worker`, idle ({procs} proc x c={CONCURRENCY})"
            cell = ctx.results.cell("defaults", "idle RSS", system.key, idle, "MiB", False)
            try:
                cell.add(idle_rss(ctx, system))
            except CellFailed as exc:
                cell.errors.append(str(exc))
            if procs > 1:  # one process, for the one-process-each comparison
                one = f"`onthedot worker --burst --processes 1` (c={CONCURRENCY}, sized itself)"
                cell = ctx.results.cell("defaults", "drain", system.key, one, "jobs/s")
                try:
                    res = drain_cli(ctx, system, "noop", [], ctx.sizes.drain, ["--processes", "1"])
                    cell.add(res.pop("rate"), **res)
                except CellFailed as exc:
                    cell.errors.append(str(exc))
        realwork.run_round(ctx, r, scale)  # the peers and the process counts, same round


def _command(extra: list[str]) -> list[str]:
    return [python(), "-m", "onthedot", "--app", "bench.ours:cli_app", "worker", *extra]


def _spawn(url: str, extra: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _command(extra),
        cwd=REPO,
        env=cell_env({**env, "ONTHEDOT_DATABASE_URL": url}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def tree_rss_mib(root: int) -> float:
    total = 0
    for pid in _process_tree([root]):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20


def drain_cli(
    ctx: Context,
    system: System,
    job: str,
    args: list[float],
    n: int,
    extra: list[str] | None = None,
) -> dict[str, Any]:
    url = ctx.fresh_url(system)
    run_cell("onthedot", "preload", {"url": url, "n": n, "job": job, "args": args}, timeout=600)
    if system.db:
        wait_no_backends(system.db)
    rd = run_dir()
    peak = [0.0]
    cpu0 = _children_cpu()
    proc = _spawn(url, ["--burst", *(extra or [])], {"BENCH_RUN_DIR": str(rd)})
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            peak[0] = max(peak[0], tree_rss_mib(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        _, err = proc.communicate(timeout=1200)
        end = time.monotonic()
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise CellFailed("timed out") from None
    finally:
        done.set()
        sampler.join()
    if proc.returncode != 0:
        raise CellFailed(f"exit {proc.returncode}: {(err or '')[-800:]}")
    marks = first_marks(rd)
    if not marks:
        raise CellFailed("no job ran")
    left = remaining(system, url, None)
    if left:
        raise CellFailed(f"{left} jobs left after the drain")
    cpu_ms = (_children_cpu() - cpu0) * 1000 / n  # the command's tree, from its start to exit
    out = {"rate": n / (end - min(marks)), "rss_peak_mib": peak[0], "n": n, "cpu_ms_job": cpu_ms}
    return {**out, **job_window(rd, n)}


def _children_cpu() -> float:
    """User + system CPU seconds of the waited-for children (the command, and the children
    its supervisor waited for)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def idle_rss(ctx: Context, system: System) -> float:
    url = ctx.fresh_url(system)
    proc = _spawn(url, [], {})
    want = processes(system)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _registered(url) >= want:
                break
            if proc.poll() is not None:
                raise CellFailed(f"worker exited {proc.returncode}")
            time.sleep(0.2)
        time.sleep(1.0)  # past the first heartbeat and schedule sync
        return tree_rss_mib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            kill_group(proc)


def _registered(url: str) -> int:
    if url.startswith("sqlite"):
        import sqlite3

        path = url.removeprefix("sqlite:///")
        try:
            with sqlite3.connect(path) as conn:
                return int(conn.execute("SELECT count(*) FROM onthedot_workers").fetchone()[0])
        except sqlite3.Error:
            return 0
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM onthedot_workers").fetchone()
            return int(row[0]) if row else 0
    except psycopg.Error:
        return 0
