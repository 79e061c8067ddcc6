"""What fires at a tick: a pure function of the ledger row, the definition and the database's
`now`. It never reads a clock and never touches storage. The rules are those of docs/scheduling.md,
"What fires at a tick"."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from onthedot.domain.definitions import JobDefaults, ScheduleDef
from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import (
    JobTemplate,
    LedgerRow,
    PlannedSlot,
    SlotOutcome,
    SyncReport,
    TickPlan,
    TickRow,
)


def jitter_offset(key: str, slot: datetime, jitter: timedelta) -> timedelta:
    """A deterministic offset in [0, jitter) derived from (key, slot): every worker agrees."""
    digest = hashlib.sha256(f"{key}\x00{int(slot.timestamp())}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return timedelta(seconds=int(jitter.total_seconds() * fraction))


def lock_key_for(key: str) -> str:
    return f"schedule:{key}"


# JobTemplate's fields: name, queue, priority, max_attempts, timeout, args and kwargs JSON,
# limit key and limit keys.
_Content = tuple[str, str, int, int, float | None, str, str, str | None, str | None]


def slot_job(sched: ScheduleDef, slot: datetime, job_defaults: JobDefaults | None) -> NewJob:
    """The job enqueued for a slot; arguments, queue and priority are read from the current
    definition at fire time."""
    return _template(sched, job_defaults).job(sched, slot, _run_at(sched, slot), _lock_key(sched))


def _template(sched: ScheduleDef, job_defaults: JobDefaults | None) -> JobTemplate:
    return JobTemplate(*_template_content(sched, job_defaults))


def _template_content(sched: ScheduleDef, job_defaults: JobDefaults | None) -> _Content:
    """The fields of the job template, in JobTemplate's order (no arguments: no encoding)."""
    queue = sched.queue or (job_defaults.queue if job_defaults is not None else "default")
    priority = sched.priority
    if priority is None:
        priority = job_defaults.priority if job_defaults is not None else 0
    # A slot's job sits under its job's limits like any other (docs/limits.md): its keys come
    # from the schedule's arguments, the same for every slot.
    limits = getattr(job_defaults, "slot_limits", None)
    limit_key, keys = limits(sched.args, sched.kwargs) if limits is not None else (None, None)
    return (
        sched.job,
        queue,
        priority,
        job_defaults.max_attempts if job_defaults is not None else 1,
        job_defaults.timeout if job_defaults is not None else None,
        json.dumps(list(sched.args)) if sched.args else "[]",
        json.dumps(dict(sched.kwargs)) if sched.kwargs else "{}",
        limit_key,
        keys,
    )


def _run_at(sched: ScheduleDef, slot: datetime) -> datetime | None:
    if sched.jitter is None:
        return None
    return slot + jitter_offset(sched.key, slot, sched.jitter)


def _lock_key(sched: ScheduleDef) -> str | None:
    return lock_key_for(sched.key) if sched.overlap == "serialize" else None


def decide(
    row: TickRow,
    sched: ScheduleDef | None,
    now: datetime,
    *,
    job_defaults: JobDefaults | None = None,
) -> TickPlan:
    """Decide one due ledger row at `now` (the database clock)."""
    return Decider()(row, sched, now, job_defaults=job_defaults)


@dataclass(frozen=True, slots=True)
class _Timing:
    """What the timing alone decides for a cursor at `now`: the same for every schedule sharing
    spec, zone, catch-up policy and cursor (a burst of identical schedules computes it once)."""

    fire: tuple[datetime, ...]
    cursor: datetime
    next_due_at: datetime | None
    missed: int
    missed_from: datetime | None
    missed_to: datetime | None
    coalesced: int


# What a definition (with its job's defaults) derives, once per definition: (index of the job
# defaults in Decider._defaults, fingerprint, timing id, index of the job template, lock key,
# whether it has jitter). Plain values only: the garbage collector stops tracking such tuples,
# so caching 100k definitions adds nothing to its full collections.
_Derived = tuple[int, str, int, int, str | None, bool]


class Decider:
    """`decide` with the memory a scheduler keeps between rows and ticks: what a definition
    derives (fingerprint, job template, encoded arguments) once per definition, and the timing
    of a (spec, zone, policy, cursor, now) once, so a burst of 100k schedules sharing a spec
    and a cursor evaluates the spec once. The rules are `decide`'s (which is a Decider used
    once); only repeated work is skipped. The planned jobs are built when first read. Caches
    are bounded (all cleared when full); not thread-safe (one per scheduler, under a lock)."""

    LIMIT = 1 << 18

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._derived: dict[int, _Derived] = {}  # by id() of the definition
        self._alive: list[ScheduleDef] = []  # keeps those ids unique while cached
        self._defaults: list[JobDefaults | None] = []
        self._defaults_index: dict[int, int] = {}  # id() of job defaults -> index
        self._templates: dict[_Content, int] = {}  # content -> index in _template_list
        self._template_list: list[JobTemplate] = []
        self._policies: dict[
            tuple[object, ...], tuple[int, str]
        ] = {}  # -> (timing id, fingerprint)
        self._next_id = itertools.count()
        # Timings of the current `now` only: a key holds `now`, so an entry of an earlier tick
        # can never be hit again, and keeping them would only grow the memo tick after tick.
        self._memo: dict[tuple[int, datetime], _Timing] = {}
        self._memo_now: datetime | None = None
        self._last: tuple[int, datetime, datetime, _Timing] | None = None

    def __call__(
        self,
        row: TickRow,
        sched: ScheduleDef | None,
        now: datetime,
        *,
        job_defaults: JobDefaults | None = None,
    ) -> TickPlan:
        if sched is None:
            # The newest live code does not declare it: it stops here; the row is kept for the
            # retention period so re-adding it resumes from this cursor.
            return TickPlan(row.key, row.cursor, row.cursor, None, remove=True)
        d = self._derived.get(id(sched))
        if d is None or self._defaults[d[0]] is not job_defaults:
            d = self._derive(sched, job_defaults)
        _, fingerprint, timing_id, template_index, lock_key, jitter = d

        if row.fingerprint != fingerprint:
            # Timing changed (or another code version wrote the row): restart at now, no
            # phantom run. The cursor never moves backwards, even under a clock behind the one
            # that wrote it.
            repaired = _with_timing(row, sched, reason="timing changed")
            start = max(now, row.cursor)
            return TickPlan(
                row.key, row.cursor, start, sched.spec.next_after(start, sched.tz), repair=repaired
            )

        cursor = row.cursor
        missed, missed_from, missed_to = 0, None, None
        unpause = False
        if row.paused:
            until = row.paused_until
            if until is None or until > now:
                # Still paused: nothing fires and the cursor stays; slots of the pause are
                # counted as missed when it ends (resume or paused_until), arithmetically.
                return TickPlan(row.key, cursor, cursor, until)
            # paused_until has passed: slots until then were missed; resume from that moment.
            spec, tz = sched.spec, sched.tz
            missed = spec.count_between(cursor, until, tz)
            if missed:
                missed_from = spec.next_after(cursor, tz)
                missed_to = spec.last_at_or_before(until, tz, cursor)
            cursor = max(cursor, until)
            unpause = True

        last = self._last  # rows in a burst come in runs of one timing and one cursor
        if last is not None and last[0] == timing_id and last[2] is now and last[1] == cursor:
            t = last[3]
        else:
            if now != self._memo_now:
                self._memo.clear()
                self._memo_now = now
            memo_key = (timing_id, cursor)
            found = self._memo.get(memo_key)
            if found is None:
                if len(self._memo) >= self.LIMIT:
                    self._memo.clear()
                found = self._memo[memo_key] = _timing(sched, cursor, now)
            t = found
            self._last = (timing_id, cursor, now, t)
        if t.missed:
            missed += t.missed
            missed_from = t.missed_from if missed_from is None else missed_from
            missed_to = t.missed_to

        planned: list[PlannedSlot] = []
        if t.fire:
            template = self._template_list[template_index]
            active = row.active_jobs > 0
            skip = sched.overlap == "skip"
            for slot in t.fire:
                if skip and active:
                    planned.append(PlannedSlot(slot, SlotOutcome.SKIPPED_OVERLAP))
                    continue
                # The job itself is built when first read (a storage needs only these parts).
                run_at = _run_at(sched, slot) if jitter else None
                planned.append(
                    PlannedSlot(slot, SlotOutcome.ENQUEUED, None, template, sched, run_at, lock_key)
                )
                active = True

        # When "all" stopped at its per-tick bound, the next slot is already due: the next tick
        # picks it up at once.
        return TickPlan(
            row.key,
            row.cursor,
            t.cursor,
            t.next_due_at,
            slots=tuple(planned),
            missed=missed,
            missed_from=missed_from,
            missed_to=missed_to,
            coalesced=t.coalesced,
            unpause=unpause,
        )

    def learn(self, sched: ScheduleDef, job_defaults: JobDefaults | None) -> None:
        """Derive what deciding `sched` needs now (a scheduler does it at start, so that the
        first burst does not pay for it)."""
        d = self._derived.get(id(sched))
        if d is None or self._defaults[d[0]] is not job_defaults:
            self._derive(sched, job_defaults)

    def _derive(self, sched: ScheduleDef, job_defaults: JobDefaults | None) -> _Derived:
        if len(self._alive) >= self.LIMIT:
            self._reset()  # every cache at once: ids and indexes stay consistent
        defaults = self._defaults_index.get(id(job_defaults))
        if defaults is None or self._defaults[defaults] is not job_defaults:
            defaults = self._defaults_index[id(job_defaults)] = len(self._defaults)
            self._defaults.append(job_defaults)
        content = _template_content(sched, job_defaults)
        template = self._templates.get(content)
        if template is None:
            template = self._templates[content] = len(self._template_list)
            self._template_list.append(JobTemplate(*content))
        horizon = sched.enqueue_grace if sched.catchup == "none" else sched.catchup_window
        policy = (sched.spec, sched.tz, sched.catchup, horizon, sched.max_per_tick)
        known = self._policies.get(policy)
        if known is None:
            known = self._policies[policy] = (next(self._next_id), sched.fingerprint)
        d = (defaults, known[1], known[0], template, _lock_key(sched), sched.jitter is not None)
        self._alive.append(sched)
        self._derived[id(sched)] = d
        return d


def _timing(sched: ScheduleDef, cursor: datetime, now: datetime) -> _Timing:
    """The slots due in (cursor, now] under the catch-up policy, and what was missed."""
    spec, tz = sched.spec, sched.tz
    missed = 0
    missed_from: datetime | None = None
    missed_to: datetime | None = None
    # Slots older than the catch-up window (or the grace period for policy "none") are missed;
    # a slot exactly one window (grace) late is still in time. Slots are whole seconds, so the
    # missed ones are those at or before the last whole second before now - horizon.
    horizon = sched.enqueue_grace if sched.catchup == "none" else sched.catchup_window
    floor = _second_before(now - horizon)
    if floor > cursor:
        missed = spec.count_between(cursor, floor, tz)
        if missed:
            missed_from = spec.next_after(cursor, tz)
            missed_to = spec.last_at_or_before(floor, tz, cursor)
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
    else:  # "all" and "none": every slot inside the horizon, oldest first, bounded per tick
        for slot in spec.slots_between(cursor, now, tz):
            fire.append(slot)
            if len(fire) >= sched.max_per_tick:
                break
        if fire:
            new_cursor = fire[-1]
    return _Timing(
        tuple(fire),
        new_cursor,
        spec.next_after(new_cursor, tz),
        missed,
        missed_from,
        missed_to,
        max(coalesced, 0),
    )


def _second_before(t: datetime) -> datetime:
    """The last whole second strictly before `t`."""
    whole = t.replace(microsecond=0)
    return whole - timedelta(seconds=1) if whole == t else whole


def _with_timing(row: TickRow, sched: ScheduleDef, *, reason: str) -> LedgerRow:
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
