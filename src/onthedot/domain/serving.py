"""Which queued jobs no live worker can run: a rolling deploy that adds a job type leaves its
jobs queued (workers claim only the names they know) until a worker that knows it runs."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass


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
