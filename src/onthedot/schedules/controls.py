"""Operator controls on every schedule, declared or runtime: pause, resume, skip, unskip,
trigger (run now), backfill, reset; each written to the audit log.

Operator state lives on the ledger row and in the slot history, never in code, so it survives
restarts and deploys; `reset` clears it back to what the code says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from onthedot.clock import Clock
from onthedot.domain.errors import ScheduleError
from onthedot.domain.fields import text_problem
from onthedot.domain.jobs import MANUAL_PREFIX, NewJob, iso
from onthedot.domain.ledger import AuditAction, AuditEntry, SlotOutcome, SlotRecord
from onthedot.domain.payload import JsonObject
from onthedot.domain.slots import slot_job
from onthedot.schedules.audit import check_operator_text, default_actor
from onthedot.schedules.backfill import (
    BACKFILL_BOUND,
    BackfillResult,
    backfill_candidates,
    history_pruned,
)
from onthedot.storage.interface import OperatorPatch

if TYPE_CHECKING:
    from onthedot.domain.definitions import ScheduleDef
    from onthedot.domain.ledger import LedgerRow
    from onthedot.jobs import JobFunction
    from onthedot.schedules.audit import AuditTrail
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.schedules.views import ScheduleView, ScheduleViews
    from onthedot.storage.interface import Storage


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
        sync: Callable[[], object] | None = None,
        retention: timedelta | None = None,
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._registry = registry
        self._audit = audit
        self._views = views
        self._jobs = jobs
        self._enqueue = enqueue
        self._retention = retention  # how long the slot history is kept (None: for ever)
        self._sync = sync  # the scheduler's sync: creates the ledger rows of the declarations

    def require_row(self, key: str, note: str | None = None, actor: str | None = None) -> LedgerRow:
        """The ledger row of `key` (see `_row`), for the other operator peers."""
        return self._row(key, note, actor)

    def _row(self, key: str, note: str | None = None, actor: str | None = None) -> LedgerRow:
        """The schedule's ledger row, once the operator's `note` and `actor` are checked; a
        declared schedule no worker has synced yet gets its row made on demand."""
        check_operator_text(note, actor)
        if text_problem(key, "key"):
            row = None
        else:
            row = next(iter(self._storage().list_schedule_rows([key])), None)
            if row is None and self._sync is not None and key in self._registry.declared():
                self._sync()  # declared in this code: its row is made as a worker would make it
                row = next(iter(self._storage().list_schedule_rows([key])), None)
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
            errors = [] if row.source == "code" else registry.dynamic_problems(row)
            reason = next((p.message for p in errors if p.level == "error"), None)
            raise ScheduleError(
                f"schedule {key!r} is not valid in this code" + (f": {reason}" if reason else "")
            )
        return sched

    def pause(
        self,
        key: str,
        until: datetime | None = None,
        note: str | None = None,
        *,
        actor: str | None = None,
    ) -> ScheduleView:
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
        self._audit.record(AuditAction.PAUSED, key, who, note, {"until": iso(until)})
        return self._views.get(key)

    def resume(
        self, key: str, *, catchup: bool = False, note: str | None = None, actor: str | None = None
    ) -> ScheduleView:
        """Resume a paused schedule. Its cursor restarts now (the pause's slots stay missed)
        unless `catchup=True`, which lets the catch-up policy and window handle them."""
        row = self._row(key, note, actor)
        if not row.paused:
            raise ScheduleError(f"schedule {key!r} is not paused")
        sched = self._definition(key, row)
        now = self._views.now()
        if catchup:
            patch = replace(_UNPAUSED, next_due_at=sched.spec.next_after(row.cursor, sched.tz))
        else:
            patch = _end_pause(row, sched, now)
        self._storage().update_operator_state(key, patch)
        self._storage().recheck_health([key])
        self._audit.record(AuditAction.RESUMED, key, actor, note, {"catchup": catchup})
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
        self._audit.record(AuditAction.SKIPPED, key, who, note, {"slot": iso(target)})
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
        self._audit.record(AuditAction.UNSKIPPED, key, actor, note, {"slot": iso(slot)})

    def trigger(self, key: str, *, note: str | None = None, actor: str | None = None) -> int:
        """Run now: enqueue the schedule's job at once. Its slot is the instant it was asked for
        (to the second) and `current_job().manual` is True; the slot history records it as
        `manual`. It moves no cursor; a run now in the very second of a due slot stands for
        that slot (the history holds one row per instant)."""
        row = self._row(key, note, actor)
        sched = self._definition(key, row)
        at = self._views.now().replace(microsecond=0)
        job = replace(
            slot_job(sched, at, self._jobs.get(sched.job)),
            run_at=None,
            unique_key=f"{MANUAL_PREFIX}{key}:{iso(at)}",
        )
        who = actor or default_actor()
        record = SlotRecord(
            key, at, SlotOutcome.MANUAL, actor=who, note=note, recorded_at=self._clock.fixed_now()
        )
        inserted = self._storage().record_slots([record], [job])
        if not inserted or inserted[0].job_id is None:
            raise ScheduleError(
                f"{key!r} already has a run at {iso(at)} in its slot history: try again in a second"
            )
        job_id = inserted[0].job_id
        self._audit.record(AuditAction.MANUAL, key, who, note, {"job_id": job_id})
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
        candidates = backfill_candidates(sched, row, start, end)
        storage = self._storage()
        existing = {r.slot for r in storage.slot_history(key, start=start, end=end, limit=None)}
        todo = [s for s in candidates if s not in existing]
        already = [s for s in candidates if s in existing]
        # The newest slot kept at or before `start`: none means older ones may be pruned.
        kept = storage.slot_history(key, end=start, limit=1)
        oldest = kept[0].slot if kept else None
        beyond = history_pruned(row, start, now, self._retention, oldest)
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
            AuditAction.BACKFILLED,
            key,
            who,
            note,
            {"start": iso(start), "end": iso(end), "enqueued": len(result.enqueued)},
        )
        return result

    def reset(self, key: str, *, note: str | None = None, actor: str | None = None) -> None:
        """Clear operator state (pause, future skips, expectation overrides) back to what the
        code says."""
        row = self._row(key, note, actor)
        sched = self._definition(key, row)
        now = self._views.now()
        floor = max(now, row.cursor)
        removed = 0
        for slot in self._future_skips(key, floor):
            removed += self._storage().delete_slot(key, slot, SlotOutcome.SKIPPED_OPERATOR)
        patch = _end_pause(row, sched, now) if row.paused else _UNPAUSED
        self._storage().update_operator_state(key, patch)
        expected = any(h.overrides for h in self._storage().health_states([key]))
        if expected:  # expectations overridden by an operator: back to the code's
            self._storage().set_expectations(key, None, actor=actor or default_actor())
        details: JsonObject = {
            "unskipped": removed,
            "unpaused": row.paused,
            "expectations": expected,
        }
        self._audit.record(AuditAction.RESET, key, actor, note, details)

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


_UNPAUSED = OperatorPatch(
    paused=False, paused_until=None, pause_note=None, paused_by=None, paused_at=None
)


def _end_pause(row: LedgerRow, sched: ScheduleDef, now: datetime) -> OperatorPatch:
    """Ledger changes that end a pause now: the cursor restarts at now and the slots that fell
    in the pause are counted as missed (arithmetically)."""
    start = max(now, row.cursor)
    patch = replace(_UNPAUSED, cursor=start, next_due_at=sched.spec.next_after(start, sched.tz))
    missed = sched.spec.count_between(row.cursor, now, sched.tz) if now > row.cursor else 0
    if missed:
        patch = replace(
            patch,
            missed_total=row.missed_total + missed,
            last_missed_from=sched.spec.next_after(row.cursor, sched.tz),
            last_missed_to=sched.spec.last_at_or_before(now, sched.tz, row.cursor),
        )
    return patch


def _aware(value: datetime, what: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ScheduleError(f"{what} must be an aware datetime (with a time zone), got {value!r}")
    return value.astimezone(UTC)


def _now_job(job: NewJob) -> NewJob:
    return replace(job, run_at=None)  # a backfilled slot runs now, not at its past instant


_SECOND = timedelta(seconds=1)
