"""Judging the runs of a schedule's slots (pure; see `assess.py` for the whole evaluation):

- overran: a running job past its `max_runtime` (or "auto"'s limit); resolved when it ends;
- failed: a job that failed for good; resolved by a success of its slot or a later one;
- deadline_missed: a slot's job not succeeded by its deadline; resolved by a success of this
  slot or a later one. A slot not meant to run (coalesced, missed, skipped) has no deadline:
  its lateness says why.

A success before a failed (or late-finishing) slot was even seen (`last_success_slot` past it)
means it is over already: no problem is raised for it.
"""

from __future__ import annotations

from onthedot.domain.expected import Entry, Evaluation, Finding, success_text
from onthedot.domain.watch import OpenProblem, ProblemKind


def overran(work: Evaluation) -> None:
    expect, now = work.subject.expect, work.now
    limit = expect.runtime_limit(work.facts.state.durations)
    current = work.open_of(ProblemKind.OVERRAN)
    if current is not None:
        fact = work.fact_at(current.slot)
        if fact is None or fact.state != "running":
            ended = fact.state if fact is not None and fact.state else "gone"
            work.resolved.append((current, f"its job is no longer running ({ended})"))
            current = None
        else:
            work.ongoing.append((current, Finding(ProblemKind.OVERRAN, Entry(fact.slot, fact))))
    for fact in work.job_facts():
        if fact.state != "running" or fact.started_at is None:
            continue
        work.wake.append(now + work.subject.follow)  # to see it end (success, durations)
        if limit is None:
            continue
        over = fact.started_at + limit
        if over > now:
            work.wake.append(over)
        elif current is None:
            work.opened.append(Finding(ProblemKind.OVERRAN, Entry(fact.slot, fact), limit=limit))
            current = OpenProblem(0, fact.slot, ProblemKind.OVERRAN, "", now)


def failed(work: Evaluation) -> None:
    current = work.open_of(ProblemKind.FAILED)
    success = work.success_from(current.slot if current else None)
    if current is not None:
        if success is not None:
            work.resolved.append((current, success_text(success)))
        return
    floor = work.facts.state.last_success_slot
    for fact in work.job_facts():
        if fact.state != "failed" or (floor is not None and fact.slot <= floor):
            continue
        later = work.success_from(fact.slot)
        resolution = success_text(later) if later is not None else None
        work.opened.append(Finding(ProblemKind.FAILED, Entry(fact.slot, fact), resolution))
        if resolution is None:
            return


def deadline_missed(work: Evaluation) -> None:
    deadline, tz, now = work.subject.expect.deadline, work.subject.tz, work.now
    current = work.open_of(ProblemKind.DEADLINE_MISSED)
    if current is not None:
        success = work.success_from(current.slot)
        if success is not None:
            work.resolved.append((current, success_text(success)))
            current = None
        else:
            entry = next((e for e in work.entries if e.slot == current.slot), Entry(current.slot))
            due = deadline.instant(current.slot, tz) if deadline else None
            work.ongoing.append(
                (current, Finding(ProblemKind.DEADLINE_MISSED, entry, None, None, due))
            )
    if deadline is None:
        return
    floor = work.facts.state.last_success_slot
    for entry in work.entries:
        if entry.gap or (entry.fact is not None and not entry.fact.has_job):
            continue  # not meant to run (coalesced, missed, skipped): late says why
        if floor is not None and entry.slot <= floor:
            continue
        due = deadline.instant(entry.slot, tz)
        fact = entry.fact
        on_time = (
            fact is not None
            and fact.state == "succeeded"
            and (fact.finished_at is not None and fact.finished_at <= due)
        )
        if on_time:
            continue
        if due > now:
            work.wake.append(due)
            continue
        if current is not None:
            continue
        success = work.success_from(entry.slot)
        resolution = success_text(success) if success is not None else None
        work.opened.append(Finding(ProblemKind.DEADLINE_MISSED, entry, resolution, None, due))
        if resolution is None:
            current = OpenProblem(0, entry.slot, ProblemKind.DEADLINE_MISSED, "", now)
