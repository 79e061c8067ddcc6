"""Sizes of the two modes and the context every workload receives."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import Results, reset_database
from bench.systems import System


@dataclass(frozen=True)
class Sizes:
    rounds: int
    single: int  # jobs enqueued one by one
    bulk: int  # jobs enqueued in batches
    batch: int  # batch size of the bulk enqueue
    bulk_slow: int  # single and bulk enqueue for a system doing a few hundred jobs per second
    drain: int  # pre-loaded jobs drained
    drain_slow: int  # ... for systems that drain hundreds of jobs per second
    latency: int  # sequential enqueue -> start samples
    schedules: tuple[int, ...]
    crash: int
    # The large-table workloads (bigtable, prune): rows loaded, no-op jobs drained on top.
    big_finished: int = 1_000_000
    big_queued: int = 100_000
    big_drain: int = 20_000
    stats: int = 1_000_000  # stored jobs under the queue statistics


QUICK = Sizes(
    rounds=1,
    single=2_000,
    bulk=20_000,
    batch=1_000,
    bulk_slow=2_000,
    drain=20_000,
    drain_slow=1_000,
    latency=150,
    schedules=(1_000, 10_000),
    crash=5_000,
)
FULL = Sizes(
    rounds=3,
    single=20_000,
    bulk=200_000,
    batch=1_000,
    bulk_slow=10_000,
    drain=100_000,
    drain_slow=10_000,
    latency=1_000,
    schedules=(1_000, 10_000, 100_000),
    crash=20_000,
    big_finished=10_000_000,
    big_queued=1_000_000,
)


@dataclass
class Context:
    sizes: Sizes
    results: Results
    workdir: Path
    redis_url: str
    redis_pid: int
    systems: set[str]  # keys of the systems to run
    profile_dir: Path | None = None
    sweep: bool = False
    workloads: list[str] = field(default_factory=list)  # the ones this run was asked for
    notes: list[str] = field(default_factory=list)
    _sqlite_n: int = 0

    def wants(self, system: System) -> bool:
        return system.key in self.systems

    def fresh_url(self, system: System) -> str:
        """The system's database emptied (PostgreSQL) or a new file (SQLite)."""
        if system.sqlite:
            self._sqlite_n += 1
            path = self.workdir / f"onthedot-{self._sqlite_n}.db"
            for suffix in ("", "-wal", "-shm"):
                p = Path(f"{path}{suffix}")
                if p.exists():
                    p.unlink()
            return system.url(str(path))
        if system.db is None:  # Celery: an empty Redis
            import redis

            redis.Redis.from_url(self.redis_url).flushdb()
            return self.redis_url
        url = system.url()
        reset_database(url)
        return url

    def params(self, url: str, **kw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"url": url, **kw}
        return out

    def profile(self, name: str) -> str | None:
        if self.profile_dir is None:
            return None
        return str(self.profile_dir / name)
