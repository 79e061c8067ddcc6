"""Render docs/benchmarks.md: machine, versions, targets (pass/fail), one table per workload,
then the hand-written notes of bench/NOTES.md (method, profiling, changes, analysis)."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.harness import REPO, Cell, Results, admin, has_pg_stat_statements
from bench.plan import Sizes

PG_SETTINGS = [
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "shared_buffers",
    "max_wal_size",
    "checkpoint_timeout",
    "jit",
    "shared_preload_libraries",
]
PACKAGES = [
    "onthedot",
    "pgqueuer",
    "asyncpg",
    "uvloop",
    "procrastinate",
    "celery",
    "kombu",
    "redis",
    "psycopg",
    "psycopg-pool",
    "py-spy",
]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


def _git() -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            text=True,
            capture_output=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "src"],
            cwd=REPO,
            text=True,
            capture_output=True,
            check=True,
        ).stdout.strip()
        return rev + (" + uncommitted changes in src/" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def machine_info() -> dict[str, Any]:
    mem = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "kernel": platform.release(),
        "memory": f"{int(mem) / 1024 / 1024:.1f} GiB",
        "python": platform.python_version(),
        "load_before": loadavg(),
        "onthedot_commit": _git(),
    }
    with admin() as conn:

        def show(name: str) -> str:
            row = conn.execute(f"SHOW {name}").fetchone()
            return str(row[0]) if row else "?"

        info["postgresql"] = show("server_version")
        info["pg_settings"] = {s: show(s) for s in PG_SETTINGS}
    info["pg_stat_statements"] = has_pg_stat_statements()
    try:
        out = subprocess.run(["redis-server", "--version"], text=True, capture_output=True)
        info["redis"] = out.stdout.split()[2].removeprefix("v=")
    except (OSError, IndexError):
        info["redis"] = "?"
    info["packages"] = {}
    for p in PACKAGES:
        try:
            info["packages"][p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            info["packages"][p] = "not installed"
    return info


def fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "n/a"
    if unit == "ms" or abs(v) < 10:
        return f"{v:,.2f}"
    return f"{v:,.0f}"


def _spread(c: Cell) -> str:
    if not c.values:
        return "failed" if c.errors else "n/a"
    lo, hi = min(c.values), max(c.values)
    return f"{fmt(lo, c.unit)}\u2013{fmt(hi, c.unit)}" if len(c.values) > 1 else "(1 run)"


def _advantage(ours: Cell | None, c: Cell) -> str:
    if ours is None or ours.median is None or c.median is None or c is ours or not c.median:
        return ""
    ratio = ours.median / c.median if c.higher_is_better else c.median / ours.median
    return f"{ratio:.2f}\u00d7"


def table(cells: list[Cell], ours: Cell | None, extra: list[tuple[str, str]]) -> list[str]:
    head = ["system", "configuration", "median", "min\u2013max", "runs", "onthedot \u00d7"]
    head += [title for _, title in extra]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        row = [
            c.system,
            c.config,
            f"**{fmt(c.median, c.unit)}** {c.unit}",
            _spread(c),
            str(len(c.values)),
            _advantage(ours, c),
        ]
        row += [fmt(c.extra_median(k)) for k, _ in extra]
        lines.append("| " + " | ".join(row) + " |")
    for c in cells:
        for e in c.errors:
            lines.append(f"\n_{c.system} [{c.config}] failed:_ `{e[:300]}`")
    return lines


def _best(res: Results, workload: str, metric: str, system: str) -> Cell | None:
    cells = [c for c in res.of(workload) if c.metric == metric and c.system == system and c.values]
    if not cells:
        return None
    return max(cells, key=lambda c: (c.median or 0) * (1 if c.higher_is_better else -1))


def _target(name: str, value: float | None, goal: float, shown: str, ok_if_at_least: bool) -> str:
    if value is None:
        return f"| {name} | n/a | {shown} | not measured |"
    ok = value >= goal if ok_if_at_least else value <= goal
    return f"| {name} | {value:,.2f} | {shown} | {'PASS' if ok else '**FAIL**'} |"


def targets(res: Results) -> list[str]:
    def med(w: str, m: str, s: str, cfg: str | None = None) -> float | None:
        c = res.find(w, m, s, cfg) if cfg else _best(res, w, m, s)
        return c.median if c else None

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    ours_drain = med("drain", "throughput", "onthedot")
    floors = [c for c in res.of("drain") if c.system == "SQL floor" and c.values]
    ack_floor = next((c.median for c in floors if "ack" in c.config), None)
    pgq_bulk = (
        max(
            [
                v
                for v in (
                    med("enqueue", "bulk", "pgqueuer (default)"),
                    med("enqueue", "bulk", "pgqueuer (tuned)"),
                )
                if v
            ]
            or [0]
        )
        or None
    )
    rows = ["| target | measured | goal | result |", "|---|---|---|---|"]
    rows.append(
        _target(
            "drain: onthedot ÷ pgqueuer (tuned)",
            ratio(ours_drain, med("drain", "throughput", "pgqueuer (tuned)")),
            2.0,
            "≥ 2\u00d7",
            True,
        )
    )
    defaults_drain = next(
        (
            c.median
            for c in res.of("defaults")
            if c.metric == "drain" and c.system == "onthedot" and "--processes" not in c.config
        ),
        None,
    )
    rows.append(
        _target(
            "drain, defaults (`onthedot worker --burst`) ÷ pgqueuer (tuned)",
            ratio(defaults_drain, med("drain", "throughput", "pgqueuer (tuned)")),
            2.0,
            "≥ 2\u00d7",
            True,
        )
    )
    io_cells = [c for c in res.of("defaults") if c.metric == "io 5 ms" and c.system == "onthedot"]
    io = io_cells[0] if io_cells else None
    rows.append(
        _target(
            "5 ms I/O jobs, defaults: throughput ÷ ideal",
            io.extra_median("of_ideal") if io else None,
            0.9,
            "≥ 0.90",
            True,
        )
    )
    rows.append(
        _target(
            "drain: onthedot ÷ SQL floor (claim + batched ack)",
            ratio(ours_drain, ack_floor),
            0.25,
            "≥ 0.25",
            True,
        )
    )
    rows.append(
        _target(
            "single enqueue: onthedot ÷ single-INSERT floor",
            ratio(med("enqueue", "single", "onthedot"), med("enqueue", "single", "SQL floor")),
            0.8,
            "≥ 0.80",
            True,
        )
    )
    rows.append(
        _target(
            "bulk enqueue: onthedot ÷ pgqueuer bulk",
            ratio(med("enqueue", "bulk", "onthedot"), pgq_bulk),
            3.0,
            "≥ 3\u00d7",
            True,
        )
    )
    rows.append(
        _target(
            "bulk enqueue: onthedot ÷ COPY floor",
            ratio(med("enqueue", "bulk", "onthedot"), med("enqueue", "bulk", "SQL floor")),
            0.3,
            "≥ 0.30",
            True,
        )
    )
    rows.append(
        _target(
            "idle latency p50 (PostgreSQL), ms",
            med("latency", "p50", "onthedot"),
            2.0,
            "≤ 2 ms",
            False,
        )
    )
    rows.append(
        _target(
            "idle latency p99 (PostgreSQL), ms",
            med("latency", "p99", "onthedot"),
            3.0,
            "≤ 3 ms",
            False,
        )
    )
    idle = [c for c in res.of("scheduler") if c.metric == "idle tick" and c.values]
    rows.append(
        _target(
            "scheduler idle tick, worst N, ms",
            max((c.median or 0) for c in idle) if idle else None,
            1.0,
            "< 1 ms",
            False,
        )
    )
    for config, label in (
        ("100,000 schedules", "100k slots due at once: all enqueued, s"),
        ("100,000 schedules, distinct specs", "100k slots due at once, every spec distinct, s"),
    ):
        burst = res.find("scheduler", "burst", "onthedot", config)
        median = burst.median if burst and burst.values else None
        rows.append(_target(label, median, 5.0, "≤ 5 s", False))
    bursts = [c for c in res.of("scheduler") if c.metric == "burst" and c.values]
    dup = sum(sum(c.extra.get("duplicates", [])) + sum(c.extra.get("misses", [])) for c in bursts)
    rows.append(
        _target("scheduler duplicates + misses (all runs)", dup if bursts else None, 0, "0", False)
    )
    crash = res.find("crash", "lost", "onthedot")
    rows.append(
        _target(
            "jobs lost after SIGKILL (all runs)",
            sum(crash.values) if crash and crash.values else None,
            0,
            "0",
            False,
        )
    )
    return rows


def render(res: Results, m: dict[str, Any], mode: str, sizes: Sizes, elapsed: float) -> str:
    out = [
        "# Benchmarks",
        "",
        "_Generated by `python -m bench --"
        + mode
        + "` on "
        + m["date"]
        + f" in {elapsed / 60:.1f} min; every table is rewritten by the next run._",
        "",
        "Reproduce the final numbers with `python -m bench --full` from the repository root "
        "(an idle machine; 30 to 50 min). The harness and its method are described in "
        "[bench/README.md](../bench/README.md); the notes below the tables are kept in "
        "`bench/NOTES.md`.",
        "",
    ]
    if mode == "quick":
        out += [
            "> **Quick mode**: small sizes and one round, to validate the harness. "
            "Numbers are indicative only; the final figures come from `--full`.",
            "",
        ]
    out += ["## Targets", "", *targets(res), ""]
    out += [
        "Results of this run only; how robust each one is across runs on this machine is "
        "discussed under _Still below target, and why_ in the notes.",
        "",
    ]
    out += [
        "## Machine and versions",
        "",
        f"- {m['nproc']} cores, {m['cpu']}, {m['memory']} RAM, kernel {m['kernel']}",
        f"- load average before / after the run: {m['load_before']} / "
        f"{m.get('load_after', '?')} (the load after includes the run itself; on a shared "
        "machine other work adds noise)",
        f"- PostgreSQL {m['postgresql']} on 127.0.0.1 (TCP loopback): "
        + ", ".join(f"`{k}={v}`" for k, v in m["pg_settings"].items()),
        f"- Redis {m['redis']} started by the harness for Celery: no persistence "
        "(`--save '' --appendonly no`), which is weaker durability than PostgreSQL's",
        f"- Python {m['python']}; onthedot at {m['onthedot_commit']}",
        "- " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()),
        f"- sizes ({mode}): " + ", ".join(f"{k}={v}" for k, v in sizes.__dict__.items()),
        "",
    ]
    out += _workloads(res, m)
    notes = REPO / "bench" / "NOTES.md"
    if notes.exists():
        out += ["", notes.read_text().strip(), ""]
    return "\n".join(out) + "\n"


def _workloads(res: Results, m: dict[str, Any]) -> list[str]:
    out: list[str] = []

    def section(
        title: str,
        workload: str,
        metric: str,
        intro: str,
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        cells = [c for c in res.of(workload) if c.metric == metric]
        if not cells:
            return
        ours = _best(res, workload, metric, "onthedot")
        out.extend([f"### {title}", "", intro, "", *table(cells, ours, extra or []), ""])

    out += [
        "## Results",
        "",
        "Medians of the interleaved rounds. _onthedot \u00d7_ is how many "
        "times faster (or lower, for latencies) onthedot on PostgreSQL is than that line.",
        "",
    ]
    section(
        "1a. Single enqueue",
        "enqueue",
        "single",
        "One job per call, sequentially, from one process (one transaction each). "
        "Client CPU: the producer process only.",
        [("cpu_us", "client CPU µs/job")],
    )
    section(
        "1b. Bulk enqueue",
        "enqueue",
        "bulk",
        "Batches through each system's batch API (Celery has none).",
        [("cpu_us", "client CPU µs/job")],
    )
    stmt = (
        "statements/job from pg_stat_statements"
        if m.get("pg_stat_statements")
        else "statements/job: n/a, pg_stat_statements is not in shared_preload_libraries on this "
        "shared server (enabling it needs a restart); transactions/job and rows written/job "
        "come from pg_stat_database, WAL bytes/job is cluster-wide"
    )
    extra = [
        ("cpu_us_per_job", "CPU µs/job"),
        ("worker_cpu_us", "worker µs"),
        ("db_cpu_us", "PG (or Redis) µs"),
        ("cores_busy", "cores busy"),
        ("xacts_per_job", "xacts/job"),
        ("rows_per_job", "rows/job"),
        ("wal_bytes_per_job", "WAL B/job"),
    ]
    if m.get("pg_stat_statements"):
        extra.insert(4, ("statements_per_job", "statements/job"))
    section(
        "2. Drain pre-loaded no-op jobs",
        "drain",
        "throughput",
        f"Jobs/s from the first job run to the last outcome persisted. CPU: worker processes "
        f"plus the database's backends, from /proc. {stmt}.",
        extra,
    )
    section(
        "3a. Idle latency, p50",
        "latency",
        "p50",
        "Sequential enqueue → job start against an idle worker (5\u201311 ms apart).",
        [("p90", "p90 ms"), ("max", "max ms")],
    )
    section("3b. Idle latency, p99", "latency", "p99", "Same samples.")
    section(
        "4a. Scheduler idle tick",
        "scheduler",
        "idle tick",
        "One loop iteration while nothing is due (one tick, which also returns the next due "
        "instant), wall ms.",
        [("cpu_ms", "CPU ms"), ("p99_ms", "p99 ms"), ("sync_s", "first sync s")],
    )
    section(
        "4b. Scheduler burst",
        "scheduler",
        "burst",
        "Every schedule due at the same instant; two scheduler processes; seconds until "
        "every slot is enqueued.",
        [
            ("slots_per_s", "slots/s"),
            ("cpu_us_per_slot", "scheduler CPU µs/slot"),
            ("duplicates", "duplicates"),
            ("misses", "misses"),
        ],
    )
    section(
        "5. Worker killed mid-drain",
        "crash",
        "lost",
        "SIGKILL at ~40 % drained, then a new worker; lost jobs must be 0.",
        [("rerun", "ran twice"), ("done_at_kill", "done at kill"), ("recovery_s", "recovery s")],
    )
    section(
        "6a. Defaults: drain with a plain `onthedot worker --burst`",
        "defaults",
        "drain",
        "Workload 2's no-op drain by the command a user runs, nothing tuned (compare with "
        "the best rows of table 2). RSS: the whole process tree (supervisor and children), "
        "sampled every 100 ms.",
        [("rss_peak_mib", "peak RSS MiB")],
    )
    section(
        "6b. Defaults: idle worker memory",
        "defaults",
        "idle RSS",
        "`onthedot worker` on an empty queue, every process registered: RSS of the tree.",
    )
    section(
        "6c. Real work: jobs that wait 5 ms on I/O",
        "defaults",
        "io 5 ms",
        "5 ms of waiting per job (`time.sleep` in sync workers, `asyncio.sleep` in async ones; "
        "see the configuration). Own ideal: processes \u00d7 concurrency \u00f7 5 ms (none for "
        "no cap on jobs in flight); machine reference: cores \u00d7 4 \u00f7 5 ms, the ideal "
        "of `onthedot worker`'s defaults.",
        [
            ("ideal", "own ideal jobs/s"),
            ("of_ideal", "\u00f7 own ideal"),
            ("of_machine", "\u00f7 machine ref"),
            ("job_window_rate", "jobs/s, first start \u2192 last finish"),
            ("cores_busy", "cores busy"),
            ("rss_peak_mib", "peak RSS MiB"),
        ],
    )
    section(
        "6d. Real work: jobs that burn 2 ms of CPU",
        "defaults",
        "cpu 2 ms",
        "The same pure-Python loop for every system, until the job's thread used 2 ms of CPU. "
        "Own ideal: min(processes, cores) \u00f7 2 ms (threads share one GIL per process; "
        "onthedot's two default rows keep cores \u00f7 2 ms); machine reference: cores "
        "\u00f7 2 ms.",
        [
            ("ideal", "own ideal jobs/s"),
            ("of_ideal", "\u00f7 own ideal"),
            ("of_machine", "\u00f7 machine ref"),
            ("job_window_rate", "jobs/s, first start \u2192 last finish"),
            ("cores_busy", "cores busy"),
            ("cpu_ms_job", "command CPU ms/job"),
            ("rss_peak_mib", "peak RSS MiB"),
        ],
    )
    section(
        "7a. Many processes: drain",
        "many",
        "drain",
        "N `onthedot worker --processes 1` processes (scheduler on) on a private cluster, "
        "already up and idle; the no-op jobs enqueued in one transaction; commit to last success.",
        [
            ("startup_s", "start-up s"),
            ("statements_per_job", "statements/job"),
            ("cpu_us_per_job", "worker CPU µs/job"),
        ],
    )
    section(
        "7b. Many processes: idle statements",
        "many",
        "idle",
        "The same fleet on an empty queue: `pg_stat_statements` calls per process and second "
        "(10 s window); transactions from `pg_stat_database`.",
        [("xacts_per_proc", "tx/s/proc"), ("cpu_ms_per_s", "CPU ms/s/proc")],
    )
    for metric in ("queue_stats", "queued_by_name"):
        section(
            f"8{'ab'[metric == 'queued_by_name']}. Queue statistics: `{metric}()`",
            "stats",
            metric,
            "Wall ms per call on a database holding the stored jobs (bench/stats_cells.py); "
            "CPU ms per call: the client process plus the PostgreSQL backends; "
            "read from the job counts table; _before_: the schema-3 statement that counted "
            "every stored job, on the same data.",
            [
                ("min_ms", "min ms"),
                ("max_ms", "max ms"),
                ("cpu_ms", "CPU ms"),
                ("before_ms", "before ms"),
                ("before_cpu_ms", "before CPU ms"),
            ],
        )
    return out
