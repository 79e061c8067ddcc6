"""Typed events. The core emits them; subscribers (logging, metrics, user code) react.

Emitting costs almost nothing when nobody listens to an event type: `bus.wants(Type)` is a
dict lookup, checked before an event object is even built on hot paths.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, TypeVar

from onthedot.domain.fields import UNSAFE, printable

log = logging.getLogger("onthedot.events")


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event. `level` is the logging level of its line."""

    level = logging.INFO

    @property
    def name(self) -> str:
        return _snake(type(self).__name__)

    def fields(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# -- jobs -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class JobEnqueued(Event):
    job_id: int
    job: str
    queue: str
    schedule_key: str | None = None
    slot: datetime | None = None
    level = logging.DEBUG


@dataclass(frozen=True, slots=True)
class JobStarted(Event):
    """`waited`: seconds from the job's ready instant to this start (None when unknown)."""

    job_id: int
    job: str
    attempt: int
    worker_id: str
    queue: str = ""
    schedule_key: str | None = None
    slot: datetime | None = None
    waited: float | None = None
    level = logging.DEBUG


@dataclass(frozen=True, slots=True)
class JobSucceeded(Event):
    job_id: int
    job: str
    attempt: int
    duration: float
    queue: str = ""
    schedule_key: str | None = None
    slot: datetime | None = None
    level = logging.DEBUG


@dataclass(frozen=True, slots=True)
class JobRetried(Event):
    job_id: int
    job: str
    attempt: int
    error: str
    retry_in: float
    queue: str = ""
    schedule_key: str | None = None
    slot: datetime | None = None
    duration: float | None = None
    level = logging.WARNING


@dataclass(frozen=True, slots=True)
class JobFailed(Event):
    job_id: int
    job: str
    attempt: int
    error: str
    queue: str = ""
    schedule_key: str | None = None
    slot: datetime | None = None
    duration: float | None = None
    level = logging.ERROR


@dataclass(frozen=True, slots=True)
class JobCancelled(Event):
    job_id: int
    job: str
    queue: str = ""
    attempt: int | None = None
    schedule_key: str | None = None
    slot: datetime | None = None


@dataclass(frozen=True, slots=True)
class JobRescued(Event):
    job_id: int
    job: str
    attempt: int
    requeued: bool
    queue: str = ""
    level = logging.WARNING


# -- workers ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WorkerStarted(Event):
    """A worker runs jobs from now on, with these settings (None: sized by itself)."""

    worker_id: str
    queues: str
    concurrency: int
    scheduler: bool
    batch_size: int | None = None
    prefetch: int | None = None
    grace: float | None = None
    burst: bool = False


@dataclass(frozen=True, slots=True)
class WorkerHeartbeat(Event):
    """The keeper extended this worker's leases (every lease / 3 seconds)."""

    worker_id: str
    held: int
    level = logging.DEBUG


@dataclass(frozen=True, slots=True)
class WorkerStopped(Event):
    worker_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class WorkerProcessRestarted(Event):
    """A supervised worker process died; it is started again after `delay` seconds."""

    process: int  # its slot under the supervisor, 0..processes-1
    exit: str  # "exit code 1", "signal SIGKILL"
    delay: float
    level = logging.WARNING


@dataclass(frozen=True, slots=True)
class WorkerProcessKilled(Event):
    """The supervisor killed a worker process that stopped beating (a job holding the GIL, or
    the process frozen); it is started again like one that died."""

    process: int  # its slot under the supervisor
    pid: int
    reason: str
    level = logging.ERROR


@dataclass(frozen=True, slots=True)
class LimitHeld(Event):
    """A claim left `count` ready jobs queued because limit `limit` was full (docs/limits.md)."""

    limit: str
    queue: str
    count: int
    level = logging.DEBUG


@dataclass(frozen=True, slots=True)
class LimitSaturated(Event):
    """A claim filled a limit key to its concurrency: its next jobs wait for one to end (said
    at most once a minute per key by each worker)."""

    limit: str
    key: str
    concurrency: int


@dataclass(frozen=True, slots=True)
class DatabaseError(Event):
    where: str
    error: str
    retry_in: float
    level = logging.ERROR


@dataclass(frozen=True, slots=True)
class DatabaseCreated(Event):
    """An enqueue created the SQLite file it wrote to: a new, empty database no worker has
    used. `relative_to`: the current folder a relative URL was resolved from (another folder
    gives another file), else None."""

    path: str
    relative_to: str | None
    hint: str
    level = logging.WARNING

    @classmethod
    def of(cls, path: str, relative_to: str | None) -> DatabaseCreated:
        if relative_to is None:
            return cls(path, None, "no worker has used it yet: check that workers use this URL")
        return cls(
            path,
            relative_to,
            f"a worker started from another folder than {relative_to} uses another file and "
            f"never sees these jobs: give the URL an absolute path (sqlite:///{path}), or start "
            "workers and enqueuers from the same folder",
        )


# -- web admin ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WebLoginFailed(Event):
    """Wrong credentials at the web admin; `blocked_for` > 0 when this failure started a block
    of 429s for that many seconds, `blocked` saying whose: the client's `address`, the
    claimed `account` (from any address), or `everyone`."""

    client: str
    user: str
    failures: int
    blocked_for: float
    blocked: str | None = None
    level = logging.WARNING


# -- schedules ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SlotEnqueued(Event):
    key: str
    slot: datetime
    job_id: int | None
    outcome: str


@dataclass(frozen=True, slots=True)
class SlotSkipped(Event):
    key: str
    slot: datetime
    reason: str


@dataclass(frozen=True, slots=True)
class SlotsMissed(Event):
    key: str
    count: int
    first: datetime | None
    last: datetime | None
    level = logging.WARNING


@dataclass(frozen=True, slots=True)
class SlotsCoalesced(Event):
    key: str
    count: int


@dataclass(frozen=True, slots=True)
class LedgerRepaired(Event):
    key: str
    reason: str
    level = logging.WARNING


@dataclass(frozen=True, slots=True)
class ScheduleChanged(Event):
    """An operator or API action: created, updated, deleted, paused, resumed, skipped,
    unskipped, triggered, backfilled, reset."""

    key: str
    action: str
    actor: str
    note: str | None = None


@dataclass(frozen=True, slots=True)
class SchedulerFenced(Event):
    worker_id: str
    generation: int
    fenced: bool


# -- schedule health (docs/health.md): emitted once per problem, by the process that raised it --
@dataclass(frozen=True, slots=True)
class ScheduleProblem(Event):
    """A problem of a schedule's slot (the base of the four kinds); `cause` is a Cause value,
    `detail` its sentence."""

    key: str
    slot: datetime
    cause: str
    detail: str
    problem_id: int
    level = logging.WARNING


@dataclass(frozen=True, slots=True)
class ScheduleLate(ScheduleProblem):
    """The slot's job had not started `grace` after its slot."""


@dataclass(frozen=True, slots=True)
class ScheduleOverran(ScheduleProblem):
    """Its job still ran `max_runtime` after it started."""


@dataclass(frozen=True, slots=True)
class ScheduleDeadlineMissed(ScheduleProblem):
    """Its job had not succeeded by the deadline."""


@dataclass(frozen=True, slots=True)
class ScheduleFailed(ScheduleProblem):
    """Its job failed for good."""

    level = logging.ERROR


@dataclass(frozen=True, slots=True)
class ScheduleRecovered(Event):
    """A problem of `kind` ended; `resolution` says how."""

    key: str
    slot: datetime
    kind: str
    resolution: str
    problem_id: int


E = TypeVar("E", bound=Event)
Subscriber = Callable[[Any], None]


class EventBus:
    """Synchronous fan-out. A subscriber that raises is logged and never breaks the emitter."""

    def __init__(self) -> None:
        self._subs: dict[type[Event], list[Subscriber]] = {}
        self._all: list[Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Subscriber, *types: type[Event]) -> Callable[[], None]:
        """Call `fn(event)` for events of `types` (all events when none given). Returns an
        unsubscribe function."""
        with self._lock:
            if types:
                for t in types:
                    self._subs.setdefault(t, []).append(fn)
            else:
                self._all.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                for t in types:
                    if fn in self._subs.get(t, []):
                        self._subs[t].remove(fn)
                if not types and fn in self._all:
                    self._all.remove(fn)

        return unsubscribe

    def wants(self, event_type: type[Event]) -> bool:
        if self._subs.get(event_type):
            return True
        for fn in self._all:
            accepts = getattr(fn, "accepts", None)
            if accepts is None or accepts(event_type):
                return True
        return False

    def emit(self, event: Event) -> None:
        for fn in (*self._subs.get(type(event), ()), *self._all):
            accepts = getattr(fn, "accepts", None)
            if accepts is not None and not accepts(type(event)):
                continue
            try:
                fn(event)
            except Exception:  # a broken subscriber must never break a worker
                log.exception("event subscriber %r failed on %s", fn, event.name)


class LoggingSubscriber:
    """Writes one structured line per event: `event=name key=value ...` (fields that are None
    left out). The event itself travels in the record's `onthedot_event` attribute, for
    formatters that write fields (`onthedot.observability.logjson`)."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger("onthedot")

    def accepts(self, event_type: type[Event]) -> bool:
        return self.logger.isEnabledFor(event_type.level)

    def __call__(self, event: Event) -> None:
        parts = [f"event={event.name}"]
        for key, value in event.fields().items():
            if value is None:
                continue  # an absent field is left out, never `note=None`
            if isinstance(value, datetime):
                value = value.isoformat().replace("+00:00", "Z")
            elif isinstance(value, float):
                value = f"{value:.3f}".rstrip("0").rstrip(".")  # 0.612, not 0.6124658761292123
            text = str(value)
            if not text or any(c in text for c in ' "=') or UNSAFE.search(text):
                text = '"' + printable(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'
            parts.append(f"{key}={text}")
        self.logger.log(event.level, " ".join(parts), extra={"onthedot_event": event})


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)
