"""Which workers are alive, and which queued jobs no live worker can run: a rolling deploy that
adds a job type leaves its jobs queued (workers claim only the names they know) until a worker
that knows it runs.

"Is this worker alive?" is written here once, as two questions:

- `alive`: its heartbeat is at most a lease old (by the database clock). Its process runs and
  its leases hold: nobody rescues its jobs. Liveness checks (`onthedot check`), the
  `workers_alive`/`workers_stale` gauges and the web admin's workers page ask this; a worker
  draining after a stop signal is still alive (a health check must not kill it mid-drain).
- `serving`: alive and not stopping. A stopping worker finishes what it holds and claims
  nothing more, so it serves no queue and no job name: "which jobs will run", "why did this
  schedule not fire" and "no live worker" ask this.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar


class Heartbeating(Protocol):
    """A registered worker as the database shows it (`WorkerRow`, `FleetWorker`)."""

    @property
    def heartbeat_age(self) -> float: ...

    @property
    def stopping(self) -> bool: ...


W = TypeVar("W", bound=Heartbeating)


def alive(worker: Heartbeating, lease: float) -> bool:
    """Its heartbeat is at most `lease` seconds old: its jobs are not rescued."""
    return worker.heartbeat_age <= lease


def serving(worker: Heartbeating, lease: float) -> bool:
    """Alive and not stopping: it claims new jobs of its queues and job names."""
    return alive(worker, lease) and not worker.stopping


def serving_workers(workers: Sequence[W], lease: float) -> list[W]:
    """The workers of `workers` that claim new jobs (`serving`)."""
    return [w for w in workers if serving(w, lease)]


@dataclass(frozen=True, slots=True)
class Unserved:
    name: str
    queued: int

    def message(self) -> str:
        jobs, wait = ("job", "waits") if self.queued == 1 else ("jobs", "wait")
        return f"{self.queued} {jobs} of `{self.name}` {wait} and no live worker knows it"


@dataclass(frozen=True, slots=True)
class UnservedQueue:
    queue: str
    ready: int

    def message(self) -> str:
        jobs, wait = ("job", "waits") if self.ready == 1 else ("jobs", "wait")
        return (
            f"{self.ready} ready {jobs} {wait} in queue `{self.queue}` and no live worker serves"
            f" it: start one with -q {self.queue} (a plain worker serves the queues its app names)"
        )


def unserved_queues(
    ready: Mapping[str, int],
    paused: Collection[str],
    live_workers_queues: Iterable[Collection[str]],
) -> list[UnservedQueue]:
    """The queues with ready jobs that none of the live workers serves (paused queues aside:
    they wait on purpose). Empty when no worker is alive: `unserved` already names every job."""
    served: set[str] = set()
    alive = False
    for queues in live_workers_queues:
        alive = True
        served.update(queues)
    if not alive:
        return []
    return [
        UnservedQueue(q, n)
        for q, n in sorted(ready.items())
        if n and q not in served and q not in paused
    ]


def unserved(
    queued: Mapping[str, int], live_workers_jobs: Iterable[Collection[str]]
) -> list[Unserved]:
    """The job names with queued jobs that none of the live workers (their known names) can
    run, by name."""
    known: set[str] = set()
    for names in live_workers_jobs:
        known.update(names)
    return [Unserved(n, c) for n, c in sorted(queued.items()) if c and n not in known]


@dataclass(frozen=True, slots=True)
class UnknownHere:
    """Ready jobs in a queue a worker serves whose names its app does not register: it never
    claims them (a newer deploy's job, or a name enqueued by another app)."""

    queue: str
    names: tuple[tuple[str, int], ...]  # (name, queued jobs of it there) it does not know

    def message(self) -> str:
        listed = ", ".join(f"`{name}` ({queued} queued)" for name, queued in self.names)
        return (
            f"jobs are ready in queue {self.queue} under name(s) this worker does not know: "
            f"{listed}; run a worker whose app registers them"
        )
