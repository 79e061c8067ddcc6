"""Jobs: states, the rows the storage hands out, and the outcomes a worker reports."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from onthedot.domain.payload import JsonObject, JsonValue


class JobState(StrEnum):
    QUEUED = "queued"  # includes jobs delayed to a future run_at
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in FINISHED_STATES


FINISHED_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})


class JobAction(StrEnum):
    """An operator's action on a job (one job, or every job a filter matches)."""

    RETRY = "retry"  # a failed or cancelled job, queued again now with fresh attempts
    CANCEL = "cancel"  # a queued job cancelled, a running one asked to stop
    DELETE = "delete"  # a job that is not running, removed

    @property
    def done(self) -> str:
        """What happened to the jobs, as a message says it."""
        return _DONE[self]

    @property
    def eligible(self) -> str:
        """Which jobs the action applies to."""
        return _ELIGIBLE[self]


_DONE = {
    JobAction.RETRY: "queued again",
    JobAction.CANCEL: "cancelled",
    JobAction.DELETE: "deleted",
}
_ELIGIBLE = {
    JobAction.RETRY: "failed or cancelled",
    JobAction.CANCEL: "queued",
    JobAction.DELETE: "not running",
}


@dataclass(slots=True)
class NewJob:
    """A job about to be enqueued. `args`/`kwargs` are already validated JSON values.

    Read-only by convention (change one with `dataclasses.replace`), not a frozen dataclass:
    a frozen one costs 3.4 us to build against 1.0, paid once per job of a bulk enqueue and
    once per slot of a scheduler burst."""

    name: str
    args: list[JsonValue]
    kwargs: JsonObject
    queue: str = "default"
    priority: int = 0
    run_at: datetime | None = None  # None: as soon as possible (the database clock's now)
    max_attempts: int = 3
    timeout: float | None = None  # seconds
    unique_key: str | None = None
    schedule_key: str | None = None
    slot: datetime | None = None
    lock_key: str | None = None  # at most one running job per lock key
    args_json: str | None = None  # `args` already encoded (by validation), or None
    kwargs_json: str | None = None
    limit_key: str | None = None  # the first of `limits`: where the claim finds the job
    limits: str | None = None  # the limit keys it sits under, a JSON array (domain/limits.py)

    def encoded(self) -> tuple[str, str]:
        """The JSON text of args and kwargs (encoded once)."""
        return (
            self.args_json if self.args_json is not None else json.dumps(self.args),
            self.kwargs_json if self.kwargs_json is not None else json.dumps(self.kwargs),
        )


# The unique key of an operator's "run now" job: MANUAL_PREFIX + schedule key + ":" + instant.
MANUAL_PREFIX = "onthedot:manual:"


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job a worker claimed: state `running`, leased to that worker."""

    id: int
    name: str
    args: list[JsonValue]
    kwargs: JsonObject
    queue: str
    attempt: int  # 1 for the first run
    max_attempts: int
    timeout: float | None
    schedule_key: str | None
    slot: datetime | None
    run_at: datetime | None = None  # when it became ready (None: the backend does not say)
    manual: bool = False  # an operator's "run now" (its unique key starts with MANUAL_PREFIX)
    # Why its stored arguments could not be decoded (then args/kwargs are empty): it fails.
    unreadable: str | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """A job as shown to users (API, CLI, UI)."""

    id: int
    name: str
    queue: str
    state: JobState
    priority: int
    args: list[JsonValue]
    kwargs: JsonObject
    attempts: int
    max_attempts: int
    run_at: datetime
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    timeout: float | None = None
    unique_key: str | None = None
    schedule_key: str | None = None
    slot: datetime | None = None
    worker_id: str | None = None
    result: JsonValue = None
    error: str | None = None
    traceback: str | None = None
    cancel_requested: bool = False
    errors: list[JsonObject] = field(default_factory=list)
    began: bool = True  # False: running, but still waiting in its worker (claimed, not started)

    @property
    def shown_state(self) -> str:
        """The state as listings show it: `claimed` for a running job not yet started."""
        return "claimed" if self.state is JobState.RUNNING and not self.began else str(self.state)

    def to_json(self) -> JsonObject:
        """The JSON object shown by `jobs list --json` and `jobs show`. `began` (the attempt
        started executing) and `cancel_requested` (an operator asked it to stop) describe a
        running attempt: null in any other state, where the state, attempts and errors tell
        what happened (a job cancelled on request ends `cancelled`, error `cancelled on
        request`)."""
        running = self.state is JobState.RUNNING
        return {
            "id": self.id,
            "name": self.name,
            "queue": self.queue,
            "state": str(self.state),
            "priority": self.priority,
            "args": self.args,
            "kwargs": self.kwargs,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "run_at": iso(self.run_at),
            "created_at": iso(self.created_at),
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "timeout": self.timeout,
            "unique_key": self.unique_key,
            "schedule_key": self.schedule_key,
            "slot": iso(self.slot),
            "worker_id": self.worker_id,
            "result": self.result,
            "error": self.error,
            "traceback": self.traceback,
            "cancel_requested": self.cancel_requested if running else None,
            "errors": list[JsonValue](self.errors),
            "began": self.began if running else None,
        }


class OutcomeKind(StrEnum):
    SUCCEEDED = "succeeded"
    RETRY = "retry"  # failed this attempt, runs again at `retry_at`
    FAILED = "failed"  # failed for good
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one execution of a claimed job came to; the worker persists it in batches."""

    job_id: int
    kind: OutcomeKind
    result: JsonValue = None
    error: str | None = None
    traceback: str | None = None
    retry_in: float | None = None  # seconds from the database clock's now, for RETRY
    attempt: int = 0  # the attempt it is for (0: whichever runs); a later one is left alone


@dataclass(frozen=True, slots=True)
class JobFilter:
    state: JobState | None = None
    states: tuple[JobState, ...] = ()  # any of these states (empty: any state)
    queue: str | None = None
    name: str | None = None
    schedule_key: str | None = None
    search: str | None = None  # substring of arguments or error
    before_id: int | None = None  # keyset pagination: ids strictly below this one
    limit: int = 50


@dataclass(frozen=True, slots=True)
class JobCount:
    """How many jobs match a filter: `exact`, or estimated by the database's statistics (shown
    as "about N"): counts of a queue, job name and state come exact from the counts kept with
    the jobs; other filters are counted up to a cap, and estimated beyond it on PostgreSQL."""

    n: int
    exact: bool = True

    def __str__(self) -> str:
        text = f"{self.n:,}".replace(",", "\u202f")
        return text if self.exact else f"about {text}"


@dataclass(frozen=True, slots=True)
class QueueStats:
    queue: str
    queued: int
    running: int
    succeeded: int
    failed: int
    cancelled: int
    ready: int  # queued jobs whose run_at has come
    oldest_ready_age: float | None  # seconds
    paused: bool = False

    def to_json(self) -> JsonObject:
        return {
            "queue": self.queue,
            "queued": self.queued,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "ready": self.ready,
            "oldest_ready_age": self.oldest_ready_age,
            "paused": self.paused,
        }


def iso(value: datetime | None) -> str | None:
    """UTC ISO-8601 with a `Z`, second precision unless the value carries microseconds."""
    if value is None:
        return None
    text = value.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")
