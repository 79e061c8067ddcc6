"""What fires at a tick: a pure function of the ledger row, the definition and the database's
`now`. It never reads a clock and never touches storage. The rules are those of the contract
(`SCHEDULING.md`, "Deciding what fires")."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import LedgerRow, PlannedSlot, SlotOutcome, SyncReport, TickPlan
from onthedot.domain.schedule import ScheduleDef


def jitter_offset(key: str, slot: datetime, jitter: timedelta) -> timedelta:
    """A deterministic offset in [0, jitter) derived from (key, slot): every worker agrees."""
    digest = hashlib.sha256(f"{key}\x00{int(slot.timestamp())}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return timedelta(seconds=int(jitter.total_seconds() * fraction))


def lock_key_for(key: str) -> str:
    return f"schedule:{key}"


def slot_job(sched: ScheduleDef, slot: datetime, job_defaults: Any) -> NewJob:
    """The job enqueued for a slot; arguments, queue and priority are read from the current
    definition at fire time."""
    run_at = None
    if sched.jitter is not None:
        run_at = slot + jitter_offset(sched.key, slot, sched.jitter)
    queue = sched.queue or (job_defaults.queue if job_defaults is not None else "default")
    priority = sched.priority
    if priority is None:
        priority = job_defaults.priority if job_defaults is not None else 0
    return NewJob(
        name=sched.job,
        args=list(sched.args),
        kwargs=dict(sched.kwargs),
        queue=queue,
        priority=priority,
        run_at=run_at,
        max_attempts=job_defaults.max_attempts if job_defaults is not None else 1,
        timeout=job_defaults.timeout if job_defaults is not None else None,
        schedule_key=sched.key,
        slot=slot,
        lock_key=lock_key_for(sched.key) if sched.overlap == "serialize" else None,
    )


def decide(
    row: LedgerRow,
    sched: ScheduleDef | None,
    now: datetime,
    *,
    job_defaults: Any = None,
) -> TickPlan:
    """Decide one due ledger row at `now` (the database clock)."""
    if sched is None:
        # The newest live code does not declare it: it stops here; the row is kept for the
        # retention period so re-adding it resumes from this cursor.
        return TickPlan(row.key, row.cursor, row.cursor, None, remove=True)

    spec, tz = sched.spec, sched.tz
    if row.fingerprint != sched.fingerprint:
        # Timing changed (or another code version wrote the row): restart at now, no phantom run.
        # The cursor never moves backwards, even under a clock behind the one that wrote it.
        repaired = _with_timing(row, sched, reason="timing changed")
        start = max(now, row.cursor)
        return TickPlan(row.key, row.cursor, start, spec.next_after(start, tz), repair=repaired)

    cursor = row.cursor
    missed = 0
    missed_from: datetime | None = None
    missed_to: datetime | None = None
    unpause = False

    if row.paused:
        until = row.paused_until
        if until is None or until > now:
            # Still paused: nothing fires and the cursor stays; slots of the pause are counted
            # as missed when it ends (resume or paused_until), arithmetically.
            return TickPlan(row.key, cursor, cursor, until)
        # paused_until has passed: slots until then were missed; resume from that moment.
        n = spec.count_between(cursor, until, tz)
        if n:
            missed, missed_from = n, spec.next_after(cursor, tz)
            missed_to = spec.last_at_or_before(until, tz, cursor)
        cursor = max(cursor, until)
        unpause = True

    # Slots older than the catch-up window (or the grace period for policy "none") are missed;
    # a slot exactly one window (grace) late is still in time. Slots are whole seconds, so the
    # missed ones are those at or before the last whole second before now - horizon.
    horizon = sched.grace if sched.catchup == "none" else sched.catchup_window
    floor = _second_before(now - horizon)
    if floor > cursor:
        n = spec.count_between(cursor, floor, tz)
        if n:
            first = spec.next_after(cursor, tz)
            last = spec.last_at_or_before(floor, tz, cursor)
            missed += n
            missed_from = first if missed_from is None else missed_from
            missed_to = last
        cursor = floor

    fire: list[datetime] = []
    coalesced = 0
    new_cursor = cursor
    if sched.catchup == "latest":
        last = spec.last_at_or_before(now, tz, cursor)
        if last is not None:
            coalesced = spec.count_between(cursor, last, tz) - 1
            fire.append(last)
            new_cursor = last
        else:
            new_cursor = max(cursor, row.cursor)
    else:  # "all" and "none": every slot inside the horizon, oldest first, bounded per tick
        for slot in spec.slots_between(cursor, now, tz):
            fire.append(slot)
            if len(fire) >= sched.max_per_tick:
                break
        new_cursor = fire[-1] if fire else max(cursor, row.cursor)

    active = row.active_jobs > 0
    planned: list[PlannedSlot] = []
    for slot in fire:
        if sched.overlap == "skip" and active:
            planned.append(PlannedSlot(slot, SlotOutcome.SKIPPED_OVERLAP, None))
            continue
        planned.append(PlannedSlot(slot, SlotOutcome.ENQUEUED, slot_job(sched, slot, job_defaults)))
        active = True

    # When "all" stopped at its per-tick bound, the next slot is already due: the next tick
    # picks it up at once.
    return TickPlan(
        row.key,
        row.cursor,
        new_cursor,
        spec.next_after(new_cursor, tz),
        slots=tuple(planned),
        missed=missed,
        missed_from=missed_from,
        missed_to=missed_to,
        coalesced=max(coalesced, 0),
        unpause=unpause,
    )


def _second_before(t: datetime) -> datetime:
    """The last whole second strictly before `t`."""
    whole = t.replace(microsecond=0)
    return whole - timedelta(seconds=1) if whole == t else whole


def _with_timing(row: LedgerRow, sched: ScheduleDef, *, reason: str) -> LedgerRow:
    return LedgerRow(
        key=row.key,
        source=row.source,
        fingerprint=sched.fingerprint,
        spec=sched.spec.canonical(),
        timezone=sched.timezone,
        cursor=row.cursor,
        next_due_at=row.next_due_at,
        repaired_reason=reason,
    )


def plan_sync(
    now: datetime,
    rows: Sequence[LedgerRow],
    declared: Mapping[str, ScheduleDef],
    generation: int,
) -> SyncReport:
    """Reconcile the ledger with the code's declarations at `now`.

    - first sight: the cursor starts at now (earlier slots never fire);
    - timing changed: the cursor restarts at now;
    - re-added within the retention period with the same timing: resume from the old cursor
      (the catch-up window still applies at the next tick);
    - no longer declared: marked removed (kept for the retention period, then pruned).
    """
    existing = {r.key: r for r in rows}
    inserts: list[LedgerRow] = []
    restarts: list[LedgerRow] = []
    conflicts: list[str] = []
    for key, sched in declared.items():
        row = existing.get(key)
        fp = sched.fingerprint
        if row is None:
            inserts.append(_fresh(sched, now, generation, reason="first sight"))
        elif row.source != "code":
            conflicts.append(key)
        elif row.fingerprint != fp:
            start = max(now, row.cursor)  # the cursor never moves backwards
            restarts.append(_fresh(sched, start, generation, reason="timing changed", base=row))
        elif row.removed_at is not None:
            restarts.append(
                _fresh(sched, row.cursor, generation, reason="declared again", base=row)
            )
    removals = tuple(
        r.key for r in rows if r.source == "code" and r.key not in declared and r.removed_at is None
    )
    return SyncReport(tuple(inserts), tuple(restarts), removals, tuple(conflicts))


def _fresh(
    sched: ScheduleDef,
    cursor: datetime,
    generation: int,
    *,
    reason: str,
    base: LedgerRow | None = None,
) -> LedgerRow:
    cursor = cursor.astimezone(UTC)
    nxt = sched.spec.next_after(cursor, sched.tz)
    if base is not None and base.paused:
        nxt = base.paused_until  # a paused row wakes only to resume by itself
    return LedgerRow(
        key=sched.key,
        source="code",
        fingerprint=sched.fingerprint,
        spec=sched.spec.canonical(),
        timezone=sched.timezone,
        cursor=cursor,
        next_due_at=nxt,
        generation=generation,
        repaired_reason=reason,
    )
