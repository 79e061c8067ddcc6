"""What a backfill covers: the slots of a past range the schedule really had (none before it
existed), and whether part of the range is older than the slot history still kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from onthedot.domain.errors import ScheduleError
from onthedot.domain.jobs import iso
from onthedot.domain.payload import JsonObject, JsonValue

if TYPE_CHECKING:
    from onthedot.domain.definitions import ScheduleDef
    from onthedot.domain.ledger import LedgerRow

BACKFILL_BOUND = 1000  # a real backfill of more slots needs force=True
_SECOND = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class BackfillResult:
    key: str
    start: datetime
    end: datetime
    dry_run: bool
    slots: list[datetime]  # slots that would be (or were) enqueued
    already: list[datetime]  # slots of the range already in the history: left alone
    beyond_history: bool  # part of the range is older than the history kept, which was pruned
    enqueued: list[int] = field(default_factory=list)  # job ids (real run)

    def to_json(self) -> JsonObject:
        return {
            "key": self.key,
            "start": iso(self.start),
            "end": iso(self.end),
            "dry_run": self.dry_run,
            "slots": [iso(s) for s in self.slots],
            "already": [iso(s) for s in self.already],
            "beyond_history": self.beyond_history,
            "enqueued": list[JsonValue](self.enqueued),
        }


def backfill_candidates(
    sched: ScheduleDef, row: LedgerRow, start: datetime, end: datetime
) -> list[datetime]:
    """The slots of `sched` in [start, end]; for a runtime schedule only those after it was
    created (a slot from before it never was one). A schedule declared in code may backfill
    slots from before a worker first saw it (it may take over from an older scheduler)."""
    after = start - _SECOND
    if row.source == "dynamic" and row.created_at is not None:
        after = max(after, row.created_at.replace(microsecond=0))
    candidates: list[datetime] = []
    first = sched.spec.next_after(after, sched.tz)
    if first is None or first > end:
        return candidates
    candidates.append(first)
    for slot in sched.spec.slots_between(first, end, sched.tz):
        candidates.append(slot)
        if len(candidates) > 100 * BACKFILL_BOUND:
            raise ScheduleError(
                f"backfill of {sched.key!r} covers more than {100 * BACKFILL_BOUND} slots: "
                "use a shorter range"
            )
    return candidates


def history_pruned(
    row: LedgerRow,
    start: datetime,
    now: datetime,
    retention: timedelta | None,
    oldest: datetime | None,
) -> bool:
    """Whether part of [start, ...] may have lost its history rows to pruning: only when the
    schedule is older than the retention, the range starts before the retention horizon, and
    before the oldest row kept."""
    if retention is None:
        return False
    horizon = now - retention
    if row.created_at is not None and row.created_at >= horizon:
        return False  # younger than the retention: nothing of it was pruned
    return start < horizon and (oldest is None or start < oldest)
