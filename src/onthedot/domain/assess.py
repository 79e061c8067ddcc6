"""Evaluating one schedule's expectations against what the database knows (pure; the rules of
docs/health.md). The expected runs are the spec's slots after the health row's `watch_slot`:
the slot history says which were enqueued or skipped, the ledger's cursor which were handled
without a row (coalesced, missed), and a slot after the cursor that is due was not handled.

- late: no job of this slot or a later one started within `grace` of the slot (plus the
  jitter). One problem per incident: the first late slot; every later late slot belongs to it
  until a job of a slot at or after it starts, which resolves it. Each slot is decided once
  (the `decided_slot` frontier), so an incident is never raised twice.
- overran: a running job past its `max_runtime` (or "auto"'s limit); resolved when it ends.
- deadline_missed: a slot's job not succeeded by its deadline; resolved by a success of this
  slot or a later one.
- failed: a slot's job failed for good; resolved by a success of this slot or a later one.

A slot is settled (the `watch_slot` moves past it) once nothing about it can change any more.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache

from onthedot.domain.durations import format_duration
from onthedot.domain.expectations import DURATIONS_KEPT, Expectations
from onthedot.domain.expected import (
    PAGE,
    SECOND,
    Entry,
    Evaluation,
    Finding,
    Subject,
    started,
)
from onthedot.domain.jobs import iso
from onthedot.domain.payload import JsonObject
from onthedot.domain.runs import deadline_missed, failed, overran
from onthedot.domain.specs import Spec
from onthedot.domain.watch import HealthState, OpenProblem, ProblemKind, SlotFact, WatchFacts


@dataclass(frozen=True, slots=True)
class Assessment:
    state: HealthState
    opened: tuple[Finding, ...] = ()
    resolved: tuple[tuple[OpenProblem, str], ...] = ()
    ongoing: tuple[tuple[OpenProblem, Finding], ...] = ()  # open ones, with their situation
    unwatched: bool = False


def assess(facts: WatchFacts, subject: Subject | None, now: datetime) -> Assessment:
    """What the facts of one schedule mean at `now`: problems to open and to resolve, and its
    next health row (when to look again, what is settled, what was learned)."""
    state, row = facts.state, facts.row
    if subject is None or row.removed_at is not None:
        why = "the schedule was removed" if row.removed_at else "the schedule is not watched"
        return Assessment(
            replace(state, check_at=None, fingerprint=row.fingerprint),
            resolved=tuple((p, why) for p in facts.open),
            unwatched=True,
        )
    restart = state.fingerprint is not None and state.fingerprint != row.fingerprint
    watch = row.cursor if restart or state.watch_slot is None else state.watch_slot
    decided = row.cursor if restart or state.decided_slot is None else state.decided_slot
    decided = max(decided, watch)
    work = Evaluation(facts, subject, now, _entries(facts, subject, watch, now), watch, decided)
    _late(work)
    overran(work)
    failed(work)
    deadline_missed(work)
    learned = _learn(state, facts)
    new_state = replace(
        learned,
        watch_slot=_settled(work),
        decided_slot=work.decided,
        fingerprint=row.fingerprint,
        check_at=_next_check(work),
        expect=_applied(subject),
        ping=subject.expect.ping,
    )
    return Assessment(new_state, tuple(work.opened), tuple(work.resolved), tuple(work.ongoing))


# -- the expected slots ------------------------------------------------------------------------
def _entries(facts: WatchFacts, subject: Subject, watch: datetime, now: datetime) -> list[Entry]:
    spec, tz, row = subject.spec, subject.tz, facts.row
    out: list[Entry] = []
    prev = watch
    rows = [f for f in facts.slots if f.slot > watch]
    for fact in rows:
        first = spec.next_after(prev, tz)
        if first is not None and first < fact.slot:
            out.append(Entry(first, gap=True, until=fact.slot, handled_at=fact.recorded_at))
        out.append(Entry(fact.slot, fact=fact))
        prev = fact.slot
    if len(facts.slots) >= PAGE:
        return out  # more rows than a page: the rest is read once these are settled
    nxt = spec.next_after(prev, tz)
    if nxt is not None and nxt <= row.cursor:
        out.append(Entry(nxt, gap=True, until=None, handled_at=row.updated_at))
        nxt = spec.next_after(max(prev, row.cursor), tz)
    if nxt is not None and nxt <= now:
        out.append(Entry(nxt))
    return out


def _starts(work: Evaluation) -> list[SlotFact]:
    """Facts whose job started (it ran, or runs, or is waiting for a retry), by slot; with the
    ledger's newest slot when it is past every row read."""
    found = [e.fact for e in work.entries if e.fact is not None and started(e.fact)]
    newest = work.facts.newest
    last = work.entries[-1].slot if work.entries else work.watch
    if newest is not None and newest.slot > last and started(newest):
        found.append(newest)
    return found


# -- late ----------------------------------------------------------------------------------
def _late(work: Evaluation) -> None:
    grace, now = work.subject.grace, work.now
    starts = _starts(work)

    def first_start(slot: datetime) -> SlotFact | None:
        after = [s for s in starts if s.slot >= slot]
        return min(after, key=_start_time) if after else None

    current = work.open_of(ProblemKind.LATE)
    if current is not None:
        start = first_start(current.slot)
        if start is not None:
            work.resolved.append((current, _started_text(start)))
            work.decided = max(work.decided, start.slot)
            current = None
        else:
            work.ongoing.append((current, Finding(ProblemKind.LATE, _blocking(work, current.slot))))
    if current is not None:
        return  # every later late slot belongs to the open incident
    for entry in work.entries:
        if entry.slot <= work.decided:
            continue
        if entry.slot + grace > now:
            work.wake.append(entry.slot + grace)
            return
        start = first_start(entry.slot)
        if start is not None and _start_time(start) <= entry.slot + grace:
            if not entry.unhandled:
                work.decided = _end_of(entry, work)  # on time
            continue
        resolution = None
        if start is not None:  # it did start, too late: found after the fact
            resolution = _started_text(start)
            work.decided = max(work.decided, start.slot)
        else:
            work.decided = max(work.decided, _end_of(entry, work))
        work.opened.append(Finding(ProblemKind.LATE, entry, resolution))
        if resolution is None:
            return


def _start_time(fact: SlotFact) -> datetime:
    return fact.started_at or fact.run_at or fact.slot


def _started_text(fact: SlotFact) -> str:
    job = f"job {fact.job_id}" if fact.job_id is not None else "its job"
    return f"{job} of slot {iso(fact.slot)} started at {iso(_start_time(fact))}"


def _end_of(entry: Entry, work: Evaluation) -> datetime:
    """The last slot an entry stands for: a gap covers the slots up to its `until`."""
    if entry.gap:
        return entry.until - SECOND if entry.until is not None else work.facts.row.cursor
    if entry.unhandled:
        return work.decided  # never decided on its own: the tick has not handled it yet
    return entry.slot


def _blocking(work: Evaluation, since: datetime) -> Entry:
    """The first expected slot at or after `since` whose job has not started: what an open
    late problem is waiting for now."""
    for entry in work.entries:
        if entry.slot >= since and (entry.fact is None or not started(entry.fact)):
            return entry
    return Entry(since)


# -- overran, failed, deadline ----------------------------------------------------------------


# -- what is settled, learned, and when to look again -----------------------------------------
def _settled(work: Evaluation) -> datetime:
    """The newest slot up to which nothing can change any more."""
    still_open = {p.slot for p in work.facts.open if p.id not in {r.id for r, _ in work.resolved}}
    still_open |= {f.entry.slot for f in work.opened if f.resolution is None}
    deadline, tz = work.subject.expect.deadline, work.subject.tz
    watch = work.watch
    for entry in work.entries:
        if entry.unhandled or entry.slot > work.decided or entry.slot in still_open:
            break
        fact = entry.fact
        if fact is not None and fact.has_job:
            if not fact.final:
                break
            due = deadline.instant(fact.slot, tz) if deadline is not None else None
            if due is not None and fact.state != "succeeded" and due > work.now:
                break  # a deadline still to come for a job that did not succeed
        watch = _end_of(entry, work) if entry.gap else entry.slot
    return watch


def _learn(state: HealthState, facts: WatchFacts) -> HealthState:
    """The last success and the recent run times, from the successes not seen before."""
    last_slot, last_at = state.last_success_slot, state.last_success_at
    durations = list(state.durations)
    seen = [f for f in facts.slots if f.state == "succeeded"]
    if facts.newest is not None and facts.newest.state == "succeeded":
        seen.append(facts.newest)
    for fact in sorted(seen, key=lambda f: f.slot):
        if last_slot is not None and fact.slot <= last_slot:
            continue
        last_slot, last_at = fact.slot, fact.finished_at
        if fact.started_at is not None and fact.finished_at is not None:
            durations.append(round((fact.finished_at - fact.started_at).total_seconds(), 3))
    return replace(
        state,
        last_success_slot=last_slot,
        last_success_at=last_at,
        durations=tuple(durations[-DURATIONS_KEPT:]),
    )


def _next_check(work: Evaluation) -> datetime | None:
    subject, now, row = work.subject, work.now, work.facts.row
    wake = list(work.wake)
    last = max([work.watch, row.cursor, *(e.slot for e in work.entries)])
    nxt = subject.spec.next_after(max(last, now), subject.tz)
    if nxt is not None:
        # The next slot: late after its grace, overrunning after its limit at the earliest.
        limit = subject.expect.runtime_limit(work.facts.state.durations)
        wake.append(nxt + (min(subject.grace, limit) if limit is not None else subject.grace))
    pending = any(f.resolution is None for f in work.opened) or len(work.ongoing) > 0
    if pending and not row.paused:
        wake.append(now + subject.follow)
    if any(e.fact is not None and e.fact.has_job and not e.fact.final for e in work.entries):
        wake.append(now + subject.follow)
    if not wake:
        return None
    return max(min(wake), now + SECOND)


def _applied(subject: Subject) -> JsonObject:
    """The expectations applied, as stored on the health row (grace resolved)."""
    return _applied_of(subject.expect, subject.spec)


@lru_cache(maxsize=4096)
def _applied_of(expect: Expectations, spec: Spec) -> JsonObject:
    # Shared between evaluations (read only): a burst of like schedules encodes it once.
    return {**expect.to_json(), "grace": format_duration(expect.late_after(spec))}
