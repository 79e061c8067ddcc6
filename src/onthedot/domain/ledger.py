"""The schedule ledger as data: rows, the plans a tick or a sync makes, history and audit."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from onthedot.domain.definitions import ScheduleDef
from onthedot.domain.jobs import NewJob, iso
from onthedot.domain.payload import JsonObject


class SlotOutcome:
    ENQUEUED = "enqueued"
    BACKFILLED = "backfilled"
    SKIPPED_OVERLAP = "skipped_overlap"
    SKIPPED_OPERATOR = "skipped_operator"
    MANUAL = "manual"


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One schedule's row: the cursor (last slot handled), its timing and operator state."""

    key: str
    source: str  # "code" | "dynamic"
    fingerprint: str
    spec: str
    timezone: str
    cursor: datetime
    next_due_at: datetime | None
    generation: int = 0
    definition: JsonObject | None = None
    removed_at: datetime | None = None
    paused: bool = False
    paused_until: datetime | None = None
    paused_at: datetime | None = None
    paused_by: str | None = None
    pause_note: str | None = None
    missed_total: int = 0
    coalesced_total: int = 0
    last_missed_from: datetime | None = None
    last_missed_to: datetime | None = None
    last_slot: datetime | None = None
    last_outcome: str | None = None
    last_job_id: int | None = None
    repaired_reason: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    active_jobs: int = 0  # queued or running jobs of this schedule (filled by the tick)


class DueRow(NamedTuple):
    """A due ledger row as a tick reads it: only the columns deciding needs. A named tuple
    rather than a dataclass: a burst builds one per due schedule (100k at once), and this is
    about thirty times cheaper to build than the 25-field frozen LedgerRow."""

    key: str
    source: str
    fingerprint: str
    spec: str
    timezone: str
    cursor: datetime
    next_due_at: datetime | None
    paused: bool
    paused_until: datetime | None
    definition: JsonObject | None
    active_jobs: int = 0  # queued or running jobs of this schedule (for overlap "skip")

    def ledger_row(self) -> LedgerRow:
        """The same row as a LedgerRow (the columns a tick does not read keep their defaults)."""
        return LedgerRow(
            key=self.key,
            source=self.source,
            fingerprint=self.fingerprint,
            spec=self.spec,
            timezone=self.timezone,
            cursor=self.cursor,
            next_due_at=self.next_due_at,
            definition=self.definition,
            paused=self.paused,
            paused_until=self.paused_until,
            active_jobs=self.active_jobs,
        )


TickRow = LedgerRow | DueRow  # what `decide` reads: either carries the columns it needs


@dataclass(frozen=True, slots=True, eq=False)
class JobTemplate:
    """What every job of a schedule shares (all but its key, arguments, slot, run-at and lock
    key), with the arguments encoded once. Equal templates are one object (the decider interns
    them), so a storage can group a burst's slots by identity and send each template once."""

    name: str
    queue: str
    priority: int
    max_attempts: int
    timeout: float | None
    args_json: str
    kwargs_json: str
    limit_key: str | None = None  # the limits its jobs sit under (domain/limits.py)
    limits: str | None = None

    def job(
        self,
        sched: ScheduleDef,
        slot: datetime,
        run_at: datetime | None,
        lock_key: str | None,
    ) -> NewJob:
        """The job of `sched` for `slot`; its arguments are copied from the definition."""
        return NewJob(
            name=self.name,
            args=list(sched.args),
            kwargs=dict(sched.kwargs),
            queue=self.queue,
            priority=self.priority,
            run_at=run_at,
            max_attempts=self.max_attempts,
            timeout=self.timeout,
            schedule_key=sched.key,
            slot=slot,
            lock_key=lock_key,
            limit_key=self.limit_key,
            limits=self.limits,
        )


class PlannedSlot:
    """A slot a tick acts on, with its outcome and (unless skipped) the job to enqueue.

    Read-only by convention rather than a frozen dataclass: a burst plans one per due schedule,
    and a slot planned by the decider builds its `NewJob` only when `job` is first read (a
    storage writing the slot reads `template`, `run_at` and `lock_key` instead)."""

    __slots__ = ("_job", "_sched", "lock_key", "outcome", "run_at", "slot", "template")

    def __init__(
        self,
        slot: datetime,
        outcome: str,  # enqueued | backfilled | skipped_overlap
        job: NewJob | None = None,
        template: JobTemplate | None = None,
        sched: ScheduleDef | None = None,
        run_at: datetime | None = None,
        lock_key: str | None = None,
    ) -> None:
        self.slot = slot
        self.outcome = outcome
        self.template = template  # the job's shared part, when the decider made it
        self._job = job
        self._sched = sched if template is not None else None  # builds the job when read
        self.run_at = job.run_at if job is not None else run_at
        self.lock_key = job.lock_key if job is not None else lock_key

    @property
    def job(self) -> NewJob | None:
        if self._job is None and self._sched is not None and self.template is not None:
            self._job = self.template.job(self._sched, self.slot, self.run_at, self.lock_key)
        return self._job

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PlannedSlot):
            return NotImplemented
        return (self.slot, self.outcome, self.job) == (other.slot, other.outcome, other.job)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PlannedSlot(slot={self.slot!r}, outcome={self.outcome!r}, job={self.job!r})"


@dataclass(slots=True)
class TickPlan:
    """What a tick decided for one due ledger row. Not frozen, though never changed: a burst
    makes one per due schedule, and a frozen dataclass costs about four times as much to build
    (one `object.__setattr__` call per field)."""

    key: str
    old_cursor: datetime
    cursor: datetime
    next_due_at: datetime | None
    slots: tuple[PlannedSlot, ...] = ()
    missed: int = 0
    missed_from: datetime | None = None
    missed_to: datetime | None = None
    coalesced: int = 0
    unpause: bool = False
    remove: bool = False  # a code schedule the newest code no longer declares
    repair: LedgerRow | None = None  # timing/fingerprint rewritten from the code (read-repair)


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What reconciling the ledger with the code's declarations decided (and did)."""

    inserts: tuple[LedgerRow, ...] = ()
    restarts: tuple[LedgerRow, ...] = ()  # rewritten from the code, with repaired_reason
    removals: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()  # declared keys owned by runtime schedules
    fenced: bool = False


@dataclass(frozen=True, slots=True)
class SlotRecord:
    key: str
    slot: datetime
    outcome: str
    job_id: int | None = None
    recorded_at: datetime | None = None
    actor: str | None = None
    note: str | None = None
    job_state: str | None = None

    def to_json(self) -> JsonObject:
        return {
            "slot": iso(self.slot),
            "outcome": self.outcome,
            "job_id": self.job_id,
            "job_state": self.job_state,
            "recorded_at": iso(self.recorded_at),
            "actor": self.actor,
            "note": self.note,
        }


class AuditAction(StrEnum):
    """What an audit entry records (the audit log's `action` column)."""

    CREATED = "created"  # a runtime schedule
    UPDATED = "updated"
    DELETED = "deleted"
    PAUSED = "paused"
    RESUMED = "resumed"
    SKIPPED = "skipped"  # one slot
    UNSKIPPED = "unskipped"
    MANUAL = "manual"  # a run triggered now (a slot of outcome `manual`)
    BACKFILLED = "backfilled"
    RESET = "reset"
    EXPECTED = "expected"  # an operator's expectation overrides
    REMOVED = "removed"  # a declared schedule gone from the code
    LIMIT_SET = "limit_set"  # an operator's override of a limit (docs/limits.md)
    LIMIT_RESET = "limit_reset"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    actor: str
    action: str
    key: str | None = None
    note: str | None = None
    details: JsonObject | None = None
    at: datetime | None = None
    id: int | None = None

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "at": iso(self.at),
            "actor": self.actor,
            "action": self.action,
            "key": self.key,
            "note": self.note,
            "details": self.details,
        }
