"""The systems under test, their configurations, and how to tell that a drain finished."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import psycopg

from bench.harness import pg_url


@dataclass(frozen=True)
class System:
    key: str  # a line of the report: "onthedot", "pgqueuer (default)", ...
    cell: str  # the module bench.cell runs: onthedot | floor | pgqueuer | procrastinate | celery
    db: str | None  # PostgreSQL database (None: not PostgreSQL)
    setup: dict[str, Any] = field(default_factory=dict)
    sqlite: bool = False
    slow_bulk: bool = False  # its batch API inserts hundreds of jobs/s: a smaller N

    def url(self, sqlite_path: str = "") -> str:
        if self.sqlite:
            return f"sqlite:///{sqlite_path}"
        assert self.db is not None
        return pg_url(self.db)


# $BENCH_DB_SUFFIX: runs sharing one server (two checkouts benchmarking at once) keep apart
_DB = os.environ.get("BENCH_DB_SUFFIX", "")

OURS = System("onthedot", "onthedot", "bench_onthedot" + _DB)
OURS_SQLITE = System("onthedot (SQLite)", "onthedot", None, sqlite=True)
FLOOR = System("SQL floor", "floor", "bench_floor" + _DB)
PGQ_DEFAULT = System("pgqueuer (default)", "pgqueuer", "bench_pgq_default" + _DB)
PGQ_TUNED = System(
    "pgqueuer (tuned)",
    "pgqueuer",
    "bench_pgq_tuned" + _DB,
    {"durability": "balanced", "autovac": True},
)
PROCRASTINATE = System(
    "procrastinate", "procrastinate", "bench_procrastinate" + _DB, slow_bulk=True
)
CELERY = System("celery+redis", "celery", None)

ALL = [OURS, OURS_SQLITE, FLOOR, PGQ_DEFAULT, PGQ_TUNED, PROCRASTINATE, CELERY]
PEERS = [PGQ_DEFAULT, PGQ_TUNED, PROCRASTINATE, CELERY]


@dataclass(frozen=True)
class DrainConfig:
    """One way to run the drain: `procs` worker processes with these parameters."""

    system: System
    label: str  # shown in the report
    procs: int
    params: dict[str, Any]
    slow: bool = False  # drains a smaller N (hundreds of jobs/s: 100k would take minutes)


# The best settings found for each system on this 2-core machine (see docs/benchmarks.md for
# the sweep); `--sweep` runs the alternatives too.
DRAIN = [
    DrainConfig(
        OURS,
        "2 proc x c=4, batch 200, prefetch 400",
        2,
        {"concurrency": 4, "batch_size": 200, "prefetch": 400},
    ),
    DrainConfig(
        OURS_SQLITE,
        "1 proc x c=4, batch 200, prefetch 400",
        1,
        {"concurrency": 4, "batch_size": 200, "prefetch": 400},
    ),
    DrainConfig(FLOOR, "claim+delete, batch 200, 2 proc", 2, {"batch": 200, "ack": "none"}),
    DrainConfig(FLOOR, "claim+batched ack, batch 200, 2 proc", 2, {"batch": 200, "ack": "batch"}),
    DrainConfig(PGQ_DEFAULT, "1 proc, batch 10", 1, {"batch_size": 10}, slow=True),
    DrainConfig(PGQ_TUNED, "2 proc, batch 200, balanced+autovac", 2, {"batch_size": 200}),
    DrainConfig(
        PROCRASTINATE, "2 proc x c=10, delete_jobs=always", 2, {"concurrency": 10}, slow=True
    ),
    DrainConfig(
        CELERY,
        "prefork c=2, prefetch x4, acks_late",
        1,
        {"pool": "prefork", "concurrency": 2, "prefetch": 4},
        slow=True,
    ),
]

SWEEP = [
    DrainConfig(
        OURS,
        f"{procs} proc x c={c}, batch {b}, prefetch {pf}",
        procs,
        {"concurrency": c, "batch_size": b, "prefetch": pf},
    )
    for procs, c, b, pf in [
        (1, 4, 20, 4),
        (1, 8, 100, 100),
        (1, 4, 200, 400),
        (2, 4, 100, 100),
        (2, 8, 200, 400),
        (2, 2, 500, 1000),
    ]
] + [
    DrainConfig(PGQ_TUNED, "1 proc, batch 100, balanced+autovac", 1, {"batch_size": 100}),
    DrainConfig(PGQ_TUNED, "2 proc, batch 100, balanced+autovac", 2, {"batch_size": 100}),
    DrainConfig(
        CELERY,
        "threads c=10, prefetch x4, acks_late",
        1,
        {"pool": "threads", "concurrency": 10, "prefetch": 4},
        slow=True,
    ),
    DrainConfig(
        PROCRASTINATE, "1 proc x c=10, delete_jobs=always", 1, {"concurrency": 10}, slow=True
    ),
]

# For the idle-latency cell: each system's worker with its default wake-up path.
LATENCY: list[tuple[System, dict[str, Any]]] = [
    (OURS, {"concurrency": 4}),
    (OURS_SQLITE, {"concurrency": 4}),
    (FLOOR, {}),
    (PGQ_DEFAULT, {"batch_size": 10}),
    (PROCRASTINATE, {"concurrency": 10}),
    (CELERY, {"pool": "threads", "concurrency": 10, "prefetch": 4}),
]


def remaining(system: System, url: str, redis: Any = None) -> int:
    """Jobs not yet finished (0 once a drain is complete)."""
    if system.cell == "celery":
        return int(redis.llen("bench")) + int(redis.hlen("unacked"))
    if system.sqlite:
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            row = conn.execute(
                "SELECT count(*) FROM onthedot_jobs WHERE state <> 'succeeded'"
            ).fetchone()
        return int(row[0])
    sql = {
        "onthedot": "SELECT count(*) FROM onthedot_jobs WHERE state <> 'succeeded'",
        "floor": "SELECT count(*) FROM floor_jobs",
        "pgqueuer": "SELECT count(*) FROM pgqueuer",
        "procrastinate": "SELECT count(*) FROM procrastinate_jobs",
    }[system.cell]
    with psycopg.connect(url) as conn:
        r = conn.execute(sql).fetchone()
    return int(r[0]) if r else -1
