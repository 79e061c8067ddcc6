"""The schedule ledger as data: rows, the plans a tick or a sync makes, history and audit."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from onthedot.domain.jobs import NewJob, iso


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
    definition: dict[str, Any] | None = None
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


@dataclass(frozen=True, slots=True)
class PlannedSlot:
    slot: datetime
    outcome: str  # enqueued | backfilled | skipped_overlap
    job: NewJob | None


@dataclass(frozen=True, slots=True)
class TickPlan:
    """What a tick decided for one due ledger row."""

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

    def to_json(self) -> dict[str, Any]:
        return {
            "slot": iso(self.slot),
            "outcome": self.outcome,
            "job_id": self.job_id,
            "job_state": self.job_state,
            "recorded_at": iso(self.recorded_at),
            "actor": self.actor,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class AuditEntry:
    actor: str
    action: str
    key: str | None = None
    note: str | None = None
    details: dict[str, Any] | None = None
    at: datetime | None = None
    id: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": iso(self.at),
            "actor": self.actor,
            "action": self.action,
            "key": self.key,
            "note": self.note,
            "details": self.details,
        }
