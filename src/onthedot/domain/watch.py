"""Schedule health as data: what the database knows of a watched schedule (its health row, its
ledger row, its unsettled slots with their jobs, its open problems), the problems, and what an
evaluation decided. The rules are in `domain/assess.py` and `domain/causes.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from onthedot.domain.jobs import iso
from onthedot.domain.ledger import LedgerRow
from onthedot.domain.payload import JsonObject


class ProblemKind(StrEnum):
    LATE = "late"  # the slot's job had not started `grace` after its slot
    OVERRAN = "overran"  # still running `max_runtime` after it started
    DEADLINE_MISSED = "deadline_missed"  # not succeeded by the deadline
    FAILED = "failed"  # the slot's job failed for good


class Cause(StrEnum):
    """Why a slot did not run as expected, from what the database knows."""

    NO_LIVE_WORKER = "no_live_worker"  # nothing ran the scheduler (or any worker at all)
    QUEUE_UNSERVED = "queue_unserved"  # live workers, none serving the job's queue
    JOB_UNKNOWN = "job_unknown"  # live workers, none knowing the job's name
    PAUSED = "paused"  # the schedule is paused (by whom, until when)
    SKIPPED_BY_OPERATOR = "skipped_by_operator"
    FENCED = "fenced"  # a deploy: the newest code cannot run it, older code is fenced
    OVERLAP_SKIPPED = "overlap_skipped"  # overlap="skip" and a previous run was active
    SERIALIZED = "serialized"  # overlap="serialize": waits for the previous run to end
    COALESCED = "coalesced"  # the catch-up policy folded it into a later slot
    MISSED = "missed"  # past the catch-up window (or catchup="none"'s grace)
    QUEUE_PAUSED = "queue_paused"
    BACKLOG = "backlog"  # waiting behind ready jobs of its queue
    HELD_BY_LIMIT = "held_by_limit"  # a concurrency or rate limit holds its job
    FAILED = "failed"  # an attempt failed (error and attempt)
    RUNNING = "running"  # still running
    CANCELLED = "cancelled"  # its job was cancelled or deleted before it succeeded
    INVALID = "invalid"  # its definition is invalid in the code evaluating it
    NOT_FIRED = "not_fired"  # live schedulers, not fired yet: no other reason known
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Explanation:
    """A cause with its sentence and the facts it rests on."""

    cause: Cause
    detail: str
    facts: JsonObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HealthState:
    """A schedule's health row."""

    key: str
    check_at: datetime | None = None
    watch_slot: datetime | None = None  # slots at or before it are settled
    decided_slot: datetime | None = None  # slots at or before it were judged late or on time
    fingerprint: str | None = None  # the timing `watch_slot` belongs to
    last_success_slot: datetime | None = None
    last_success_at: datetime | None = None
    durations: tuple[float, ...] = ()  # recent successful run times (s), oldest first
    expect: JsonObject | None = None  # the expectations last applied (grace always set)
    ping: str | None = None
    overrides: JsonObject | None = None  # an operator's expectations, over the code's
    overrides_by: str | None = None
    overrides_at: datetime | None = None
    overrides_note: str | None = None
    checked_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SlotFact:
    """A slot history row with its job as it is now (`state` None: no job, or it is gone)."""

    slot: datetime
    outcome: str
    recorded_at: datetime | None = None
    actor: str | None = None
    note: str | None = None
    job_id: int | None = None
    state: str | None = None
    name: str | None = None
    queue: str | None = None
    run_at: datetime | None = None
    attempts: int = 0
    max_attempts: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    worker_id: str | None = None
    lock_key: str | None = None

    @property
    def has_job(self) -> bool:
        return self.job_id is not None

    @property
    def started(self) -> bool:
        return self.started_at is not None

    @property
    def final(self) -> bool:
        """Its job will not change by itself any more (finished, or gone)."""
        return self.job_id is None or self.state in (None, "succeeded", "failed", "cancelled")


@dataclass(frozen=True, slots=True)
class OpenProblem:
    id: int
    slot: datetime
    kind: ProblemKind
    cause: str
    opened_at: datetime


@dataclass(frozen=True, slots=True)
class WatchFacts:
    """Everything an evaluation of one schedule reads, in one statement's rows."""

    state: HealthState
    row: LedgerRow
    slots: tuple[SlotFact, ...] = ()  # after watch_slot, due, oldest first, at most a page
    newest: SlotFact | None = None  # the ledger's newest slot with its job
    open: tuple[OpenProblem, ...] = ()


@dataclass(frozen=True, slots=True)
class ProblemRecord:
    """A problem as stored."""

    id: int
    key: str
    slot: datetime
    kind: ProblemKind
    cause: str
    detail: str
    opened_at: datetime
    facts: JsonObject | None = None
    resolved_at: datetime | None = None
    resolution: str | None = None

    @property
    def open(self) -> bool:
        return self.resolved_at is None

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "schedule": self.key,
            "slot": iso(self.slot),
            "kind": str(self.kind),
            "cause": self.cause,
            "detail": self.detail,
            "facts": self.facts,
            "opened_at": iso(self.opened_at),
            "resolved_at": iso(self.resolved_at),
            "resolution": self.resolution,
        }


@dataclass(frozen=True, slots=True)
class NewProblem:
    """A problem to raise; with `resolution`, it is over already (found after the fact)."""

    slot: datetime
    kind: ProblemKind
    why: Explanation
    resolution: str | None = None


@dataclass(frozen=True, slots=True)
class Resolution:
    problem: OpenProblem
    resolution: str  # one line: what ended it


@dataclass(frozen=True, slots=True)
class WatchDecision:
    """What one evaluation of a schedule decided: problems to open, to resolve, the causes of
    open ones to refresh, and the new health row (`check_at` None: not watched any more)."""

    key: str
    state: HealthState
    opened: tuple[NewProblem, ...] = ()
    resolved: tuple[Resolution, ...] = ()
    refreshed: tuple[tuple[OpenProblem, Explanation], ...] = ()


@dataclass(frozen=True, slots=True)
class AlertRecord:
    """An alert claimed for delivery: the problem it is about, and which event."""

    id: int
    event: str  # "problem" | "recovered"
    attempts: int
    problem: ProblemRecord


@dataclass(frozen=True, slots=True)
class WatchResult:
    """What one health check did: how many schedules it evaluated, the problems it raised and
    resolved."""

    evaluated: int = 0
    problems: tuple[ProblemRecord, ...] = ()
