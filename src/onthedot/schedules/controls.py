"""Operator controls on every schedule, declared or runtime: pause, resume, skip, unskip,
trigger (run now), backfill, reset; each written to the audit log.

Operator state lives on the ledger row and in the slot history, never in code, so it survives
restarts and deploys; `reset` clears it back to what the code says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from onthedot.clock import Clock
from onthedot.domain.errors import ScheduleError
from onthedot.domain.fields import text_problem
from onthedot.domain.jobs import NewJob, iso
from onthedot.domain.ledger import AuditEntry, SlotOutcome, SlotRecord
from onthedot.domain.slots import slot_job
from onthedot.schedules.audit import check_operator_text, default_actor
from onthedot.storage.interface import OperatorPatch

if TYPE_CHECKING:
    from onthedot.domain.definitions import ScheduleDef
    from onthedot.domain.ledger import LedgerRow
    from onthedot.jobs import JobFunction
    from onthedot.schedules.audit import AuditTrail
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.schedules.views import ScheduleViews
    from onthedot.storage.interface import Storage

BACKFILL_BOUND = 1000  # a real backfill of more slots needs force=True


@dataclass(frozen=True, slots=True)
class BackfillResult:
    key: str
    start: datetime
    end: datetime
    dry_run: bool
    slots: list[datetime]  # slots that would be (or were) enqueued
    already: list[datetime]  # slots of the range already in the history: left alone
    beyond_history: bool  # part of the range is older than the oldest history row kept
    enqueued: list[int] = field(default_factory=list)  # job ids (real run)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "start": iso(self.start),
            "end": iso(self.end),
            "dry_run": self.dry_run,
            "slots": [iso(s) for s in self.slots],
            "already": [iso(s) for s in self.already],
            "beyond_history": self.beyond_history,
            "enqueued": self.enqueued,
        }


class OperatorControls:
    """The operator's verbs on any schedule; each action is audited."""

    def __init__(
        self,
        storage: Callable[[], Storage],
        clock: Clock,
        registry: ScheduleRegistry,
        audit: AuditTrail,
        views: ScheduleViews,
        jobs: Mapping[str, JobFunction[Any, Any]],
        enqueue: Callable[[Sequence[NewJob]], list[int]],
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._registry = registry
        self._audit = audit
        self._views = views
        self._jobs = jobs
        self._enqueue = enqueue

    def _row(self, key: str, note: str | None = None, actor: str | None = None) -> LedgerRow:
        """The schedule's ledger row, once the operator's `note` and `actor` are checked."""
        check_operator_text(note, actor)
        row = None if text_problem(key, "key") else self._storage().get_schedule_row(key)
        if row is None:
            if key in self._registry.declared():
                raise ScheduleError(
                    f"schedule {key!r} is declared in code but no worker has started with it "
                    "yet: start a worker (or run onthedot.testing.tick) first"
                )
            raise ScheduleError(f"no schedule with key {key!r}")
        return row

    def _definition(self, key: str, row: LedgerRow) -> ScheduleDef:
        registry = self._registry
        sched = (
            registry.declared().get(key) if row.source == "code" else registry.definition_for(row)
        )
        if sched is None:
            raise ScheduleError(f"schedule {key!r} is not valid in this code")
        return sched

    def pause(
        self,
        key: str,
        until: datetime | None = None,
        note: str | None = None,
        *,
        actor: str | None = None,
    ) -> dict[str, Any]:
        """No slot fires until resumed (or until `until`, when it resumes by itself). Slots
        falling in the pause are counted as missed."""
        self._row(key, note, actor)
        now = self._views.now()
        if until is not None:
            until = _aware(until, "until")
            if until <= now:
                raise ScheduleError(f"pause until {iso(until)} is not in the future")
        who = actor or default_actor()
        self._storage().update_operator_state(
            key,
            OperatorPatch(
                paused=True,
                paused_until=until,
                pause_note=note,
                paused_by=who,
                paused_at=now,
                next_due_at=until,
            ),
        )
        self._audit.record("paused", key, who, note, {"until": iso(until)})
        return self._views.get(key)

    def resume(
        self, key: str, *, catchup: bool = False, note: str | None = None, actor: str | None = None
    ) -> dict[str, Any]:
        """Resume a paused schedule. Its cursor restarts now (the pause's slots stay missed)
        unless `catchup=True`, which lets the catch-up policy and window handle them."""
        row = self._row(key, note, actor)
        if not row.paused:
            raise ScheduleError(f"schedule {key!r} is not paused")
        sched = self._definition(key, row)
        now = self._views.now()
        if catchup:
            changes = {**_UNPAUSED, "next_due_at": sched.spec.next_after(row.cursor, sched.tz)}
        else:
            changes = _end_pause(row, sched, now)
        self._storage().update_operator_state(key, OperatorPatch(**changes))
        self._audit.record("resumed", key, actor, note, {"catchup": catchup})
        return self._views.get(key)

    def skip(
        self,
        key: str,
        slot: datetime | None = None,
        note: str | None = None,
        *,
        actor: str | None = None,
    ) -> datetime:
        """Skip the next slot (or a named future slot): its history row is written ahead with
        outcome `skipped_operator`, and the unique key stops it from being enqueued."""
        row = self._row(key, note, actor)
        sched = self._definition(key, row)
        now = self._views.now()
        floor = max(now, row.cursor)
        if slot is None:
            taken = self._future_skips(key, floor)
            target = sched.spec.next_after(floor, sched.tz)
            while target is not None and target in taken:
                target = sched.spec.next_after(target, sched.tz)
            if target is None:
                raise ScheduleError(f"schedule {key!r} has no future slot to skip")
        else:
            target = self._check_future_slot(key, sched, _aware(slot, "slot"), floor)
        who = actor or default_actor()
        recorded = self._storage().record_slots(
            [
                SlotRecord(
                    key,
                    target,
                    SlotOutcome.SKIPPED_OPERATOR,
                    actor=who,
                    note=note,
                    recorded_at=self._clock.fixed_now(),
                )
            ],
            [None],
        )
        if not recorded:
            raise ScheduleError(f"slot {iso(target)} of {key!r} is already in the history")
        self._audit.record("skipped", key, who, note, {"slot": iso(target)})
        return target

    def unskip(
        self, key: str, slot: datetime, *, note: str | None = None, actor: str | None = None
    ) -> None:
        """Remove an operator skip while the slot is still in the future."""
        row = self._row(key, note, actor)
        slot = _aware(slot, "slot")
        if slot <= max(self._views.now(), row.cursor):
            raise ScheduleError(f"slot {iso(slot)} of {key!r} is not in the future any more")
        if not self._storage().delete_slot(key, slot, SlotOutcome.SKIPPED_OPERATOR):
            raise ScheduleError(f"slot {iso(slot)} of {key!r} is not skipped")
        self._audit.record("unskipped", key, actor, note, {"slot": iso(slot)})

    def trigger(self, key: str, *, note: str | None = None, actor: str | None = None) -> int:
        """Run now: enqueue the schedule's job at once, recorded as `manual`. Consumes no slot."""
        row = self._row(key, note, actor)
        sched = self._definition(key, row)
        job = replace(slot_job(sched, _EPOCH, self._jobs.get(sched.job)), slot=None, run_at=None)
        job_id = self._enqueue([job])[0]
        self._audit.record(SlotOutcome.MANUAL, key, actor, note, {"job_id": job_id})
        return job_id

    def backfill(
        self,
        key: str,
        start: datetime,
        end: datetime,
        *,
        dry_run: bool = True,
        force: bool = False,
        note: str | None = None,
        actor: str | None = None,
    ) -> BackfillResult:
        """Enqueue the slots of a past range [start, end] as `backfilled`. The dry run (the
        default) lists exactly which slots would be enqueued; slots already in the history are
        left alone, so a backfill can be repeated safely. More than BACKFILL_BOUND slots need
        force=True."""
        row = self._row(key, note, actor)
        sched = self._definition(key, row)
        start, end = _aware(start, "start"), _aware(end, "end")
        now = self._views.now()
        if end < start:
            raise ScheduleError("backfill end is before its start")
        if end > now:
            raise ScheduleError(
                f"backfill end {iso(end)} is in the future: only past slots can be backfilled"
            )
        candidates: list[datetime] = []
        first = sched.spec.next_after(start - _SECOND, sched.tz)
        if first is not None and first <= end:
            candidates.append(first)
            for slot in sched.spec.slots_between(first, end, sched.tz):
                candidates.append(slot)
                if len(candidates) > 100 * BACKFILL_BOUND:
                    raise ScheduleError(
                        f"backfill of {key!r} covers more than {100 * BACKFILL_BOUND} slots: "
                        "use a shorter range"
                    )
        existing = self._storage().existing_slots(key, start, end)
        todo = [s for s in candidates if s not in existing]
        already = [s for s in candidates if s in existing]
        oldest = self._storage().oldest_slot(key)
        beyond = oldest is None or start < oldest
        result = BackfillResult(key, start, end, dry_run, todo, already, beyond)
        if dry_run:
            return result
        if len(todo) > BACKFILL_BOUND and not force:
            raise ScheduleError(
                f"backfill of {key!r} would enqueue {len(todo)} slots, over the bound of "
                f"{BACKFILL_BOUND}: pass force=True (--force) to go ahead"
            )
        who = actor or default_actor()
        defaults = self._jobs.get(sched.job)
        records = [
            SlotRecord(
                key,
                s,
                SlotOutcome.BACKFILLED,
                actor=who,
                note=note,
                recorded_at=self._clock.fixed_now(),
            )
            for s in todo
        ]
        inserted = self._storage().record_slots(
            records, [_now_job(slot_job(sched, s, defaults)) for s in todo]
        )
        result = BackfillResult(
            key,
            start,
            end,
            False,
            [r.slot for r in inserted],
            already,
            beyond,
            [r.job_id for r in inserted if r.job_id is not None],
        )
        self._audit.record(
            "backfilled",
            key,
            who,
            note,
            {"start": iso(start), "end": iso(end), "enqueued": len(result.enqueued)},
        )
        return result

    def reset(self, key: str, *, note: str | None = None, actor: str | None = None) -> None:
        """Clear operator state (pause, future skips) back to what the code says."""
        row = self._row(key, note, actor)
        sched = self._definition(key, row)
        now = self._views.now()
        floor = max(now, row.cursor)
        removed = 0
        for slot in self._future_skips(key, floor):
            removed += self._storage().delete_slot(key, slot, SlotOutcome.SKIPPED_OPERATOR)
        changes = _end_pause(row, sched, now) if row.paused else dict(_UNPAUSED)
        self._storage().update_operator_state(key, OperatorPatch(**changes))
        self._audit.record(
            "reset", key, actor, note, {"unskipped": removed, "unpaused": row.paused}
        )

    def audit(self, key: str | None = None, *, limit: int = 100) -> list[AuditEntry]:
        """The audit log, newest first."""
        return self._audit.entries(key, limit=limit)

    def skipped(self, key: str) -> list[datetime]:
        """Future slots skipped by an operator."""
        row = self._row(key)
        return sorted(self._future_skips(key, max(self._views.now(), row.cursor)))

    # -- helpers ----------------------------------------------------------------------------
    def _future_skips(self, key: str, floor: datetime) -> set[datetime]:
        far = datetime(9999, 1, 1, tzinfo=UTC)
        return {
            r.slot
            for r in self._storage().slot_history(key, limit=10000)
            if r.outcome == SlotOutcome.SKIPPED_OPERATOR and floor < r.slot < far
        }

    @staticmethod
    def _check_future_slot(
        key: str, sched: ScheduleDef, slot: datetime, floor: datetime
    ) -> datetime:
        slot = slot.replace(microsecond=0)
        if slot <= floor:
            raise ScheduleError(f"slot {iso(slot)} of {key!r} is not in the future")
        real = sched.spec.next_after(slot - _SECOND, sched.tz)
        if real != slot:
            hint = f"; the next slot is {iso(real)}" if real else ""
            raise ScheduleError(f"{iso(slot)} is not a slot of {key!r}{hint}")
        return slot


_UNPAUSED: dict[str, Any] = {
    "paused": False,
    "paused_until": None,
    "pause_note": None,
    "paused_by": None,
    "paused_at": None,
}


def _end_pause(row: LedgerRow, sched: ScheduleDef, now: datetime) -> dict[str, Any]:
    """Ledger changes that end a pause now: the cursor restarts at now and the slots that fell
    in the pause are counted as missed (arithmetically)."""
    start = max(now, row.cursor)
    changes: dict[str, Any] = {
        **_UNPAUSED,
        "cursor": start,
        "next_due_at": sched.spec.next_after(start, sched.tz),
    }
    missed = sched.spec.count_between(row.cursor, now, sched.tz) if now > row.cursor else 0
    if missed:
        changes.update(
            missed_total=row.missed_total + missed,
            last_missed_from=sched.spec.next_after(row.cursor, sched.tz),
            last_missed_to=sched.spec.last_at_or_before(now, sched.tz, row.cursor),
        )
    return changes


def _aware(value: datetime, what: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ScheduleError(f"{what} must be an aware datetime (with a time zone), got {value!r}")
    return value.astimezone(UTC)


def _now_job(job: NewJob) -> NewJob:
    return replace(job, run_at=None)  # a backfilled slot runs now, not at its past instant


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
