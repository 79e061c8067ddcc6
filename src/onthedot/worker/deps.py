"""What a worker needs from the application around it, as narrow types: the App builds a
`WorkerDeps` and the worker never sees the App itself."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from onthedot.clock import Clock
from onthedot.domain.retention import Retention
from onthedot.domain.retry import Backoff
from onthedot.observability.events import EventBus
from onthedot.observability.hooks import Instrumentation
from onthedot.storage.interface import Storage
from onthedot.wakeups import JobsListener


class RunnableJob(Protocol):
    """A registered job as the executor sees it."""

    @property
    def fn(self) -> Callable[..., Any]: ...

    @property
    def is_async(self) -> bool: ...

    @property
    def backoff(self) -> Backoff: ...


class SchedulerLike(Protocol):
    """The scheduler a worker runs beside its jobs (on its own thread)."""

    def prepare(self) -> int:
        """Validate the declarations; return this code's generation."""
        ...

    def sync(self) -> object:
        """Reconcile the ledger with the declarations."""
        ...

    def run(self) -> None:
        """Tick until stopped."""
        ...

    def stop(self) -> None: ...


# (worker id, the worker's stopping event) -> a scheduler that stops when that event is set.
SchedulerFactory = Callable[[str, threading.Event], SchedulerLike]


class JobsWakeups(Protocol):
    """Where a worker registers for in-process enqueue notifications (`WakeupHub`)."""

    def on_jobs(self, listener: JobsListener) -> Callable[[], None]: ...


@dataclass(frozen=True, slots=True)
class WorkerDeps:
    """Everything a worker takes from its application.

    - `storage`: opened but not schema-checked (`check_schema` runs in `Worker.run`, retried
      while the database is down);
    - `jobs`: the live registry (by name), `resolve`: the same, raising JobNotRegistered;
    - `scheduler`: builds the scheduler a worker runs unless told not to (None: never);
    - `instrumentation`: hooks wrapping each job function (tracing), none by default.
    """

    storage: Storage
    clock: Clock
    events: EventBus
    jobs: Mapping[str, RunnableJob]
    resolve: Callable[[str], RunnableJob]
    check_schema: Callable[[], None]
    lease: float
    retention: Retention  # how long finished jobs are kept, per state and job
    wakeups: JobsWakeups
    scheduler: SchedulerFactory | None = None
    instrumentation: Instrumentation | None = None
    audit_retention: timedelta | None = None  # None: the audit log is kept forever
    # Records the limits the code declares (docs/limits.md), at the worker's start.
    sync_limits: Callable[[], None] | None = None
