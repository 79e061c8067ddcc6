"""What the storage verbs take and return, beyond the domain's own types: worker rows, operator
patches, rescued jobs, heartbeat renewals, tick results, and the open sync and tick
transactions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, NamedTuple, Protocol

from onthedot.domain.ledger import DueRow, LedgerRow, SyncReport, TickPlan


class CallerConnection(Protocol):
    """A connection inside the caller's own open transaction (PostgreSQL: a psycopg
    Connection), for enqueueing jobs that commit or roll back with the caller's writes."""

    def cursor(self, *args: Any, **kwargs: Any) -> Any: ...


class Keep(Enum):
    """An operator-state field left as it is."""

    KEEP = "keep"


KEEP = Keep.KEEP


@dataclass(frozen=True, slots=True)
class OperatorPatch:
    """Operator state of one ledger row to change (pause, cursor, missed counters); a field
    left at KEEP keeps its value. None is a value (for example no pause end)."""

    paused: bool | Keep = KEEP
    paused_until: datetime | Keep | None = KEEP
    pause_note: str | Keep | None = KEEP
    paused_by: str | Keep | None = KEEP
    paused_at: datetime | Keep | None = KEEP
    cursor: datetime | Keep = KEEP
    next_due_at: datetime | Keep | None = KEEP
    missed_total: int | Keep = KEEP
    last_missed_from: datetime | Keep | None = KEEP
    last_missed_to: datetime | Keep | None = KEEP

    def changes(self) -> dict[str, Any]:
        """The fields to change, by name."""
        return {f: v for f in self.__slots__ if (v := getattr(self, f)) is not KEEP}


@dataclass(frozen=True, slots=True)
class RescuedJob:
    id: int
    name: str
    attempt: int
    requeued: bool  # False: it had no attempts left and is now failed
    queue: str = ""


@dataclass(frozen=True, slots=True)
class Renewal:
    """What a heartbeat did: the jobs whose leases it extended, and those of them with a
    cancel request."""

    renewed: frozenset[int]
    cancel: frozenset[int]


class EnqueuedSlot(NamedTuple):
    """A slot history row a tick wrote. A named tuple rather than a frozen dataclass: a burst
    returns one per slot (100k at once), and a tuple is two to three times cheaper to build."""

    key: str
    slot: datetime
    outcome: str
    job_id: int | None


@dataclass(frozen=True, slots=True)
class TickResult:
    """What one tick transaction did."""

    now: datetime
    rows: int  # due ledger rows examined
    recorded: list[EnqueuedSlot] = field(default_factory=list)  # history rows written
    conflicts: list[tuple[str, datetime]] = field(default_factory=list)  # slots already taken
    plans: list[TickPlan] = field(default_factory=list)
    fenced: bool = False
    # Nothing was due (or fenced): no transaction was opened; `next_due_at` is the ledger's
    # earliest next_due_at (None: none ever), so the caller knows how long to sleep, and
    # `watch_at` the earliest health check (storage/health.py), read in the same statement.
    idle: bool = False
    next_due_at: datetime | None = None
    watch_at: datetime | None = None


class SyncTransaction(Protocol):
    """An open sync transaction (see Storage.sync_declared)."""

    now: datetime  # the transaction's clock
    fenced: bool  # a newer generation is alive: nothing may be written
    rows: list[LedgerRow]  # the rows to plan from (empty when fenced)

    def apply(self, report: SyncReport, *, cancel_jobs_of: Sequence[str] = ()) -> dict[str, int]:
        """Write the report's inserts, restarts and removals (nothing when fenced), after
        cancelling the queued jobs of the removed keys in `cancel_jobs_of`, in the same
        transaction. Returns the number of jobs cancelled per key."""


class TickTransaction(Protocol):
    """An open tick (see Storage.tick)."""

    now: datetime  # the tick's clock
    done: TickResult | None  # set when there is nothing to decide: idle, fenced, nothing due

    def due_rows(self) -> Iterable[DueRow]:
        """The due rows this tick holds locked."""

    def apply(self, plans: Sequence[TickPlan]) -> TickResult:
        """Write the plans' slot history rows, their jobs and the new ledger state."""
