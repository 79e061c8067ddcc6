"""`schedules explain`: why a schedule did or did not fire, in plain words."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from onthedot.commandline import CommandLine
from onthedot.domain.durations import format_duration
from onthedot.domain.errors import ScheduleError
from onthedot.domain.jobs import JobFilter, JobState, iso
from onthedot.domain.serving import serving_workers

if TYPE_CHECKING:
    from onthedot.domain.definitions import ScheduleDef
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.storage.interface import Storage, WorkerRow


_ACTIVE = (JobState.QUEUED, JobState.RUNNING)


def explain(
    registry: ScheduleRegistry,
    storage: Storage,
    now: datetime,
    key: str,
    lease: float = 30.0,
    commands: CommandLine | None = None,
) -> str:
    """The explanation of schedule `key` at `now`: its definition, ledger row, next slots,
    recent history, and a verdict (`commands` words its hints)."""
    declared = registry.declared()
    row = next(iter(storage.list_schedule_rows([key])), None)
    sched = declared.get(key)
    if row is not None and row.source == "dynamic":
        sched = registry.definition_for(row)
    if row is None and sched is None:
        raise ScheduleError(f"no schedule with key {key!r} in the code or the database")

    lines = [f"schedule {key!r}"]
    reasons: list[str] = []
    if sched is not None:
        lines.append(
            f"  spec:        {sched.spec.canonical()} ({sched.describe()}), "
            f"time zone {sched.timezone}"
        )
        lines.append(
            f"  job:         {sched.job} args={json.dumps(list(sched.args))} "
            f"kwargs={json.dumps(dict(sched.kwargs))}"
        )
        window = format_duration(sched.catchup_window) if sched.catchup_window else "none"
        jitter = format_duration(sched.jitter) if sched.jitter else "none"
        lines.append(
            f"  policies:    catchup={sched.catchup} window={window} "
            f"overlap={sched.overlap} jitter={jitter}"
        )
    elif row is not None and row.source == "code":
        lines.append("  definition:  not declared by this code")
        reasons.append("the code no longer declares it, so it does not fire")
    elif row is not None:
        problems = "; ".join(p.message for p in registry.dynamic_problems(row))
        lines.append(f"  definition:  INVALID runtime schedule: {problems}")
        reasons.append(f"its stored definition is invalid here ({problems})")

    if row is None:
        lines.append("  ledger:      no row yet (no worker has started with this code)")
        reasons.append("no worker running the scheduler has seen it yet; start a worker")
    else:
        match = sched is not None and row.fingerprint == sched.fingerprint
        lines.append(f"  source:      {row.source}")
        lines.append(f"  cursor:      {iso(row.cursor)} (last slot handled or timing start)")
        lines.append(
            f"  fingerprint: {row.fingerprint} "
            f"({'matches the code' if match else 'DIFFERS from this code'})"
        )
        if sched is not None and not match:
            reasons.append(
                "the ledger holds another timing (a different code version wrote it); "
                "the next tick restarts it at that moment"
            )
        lines.append(f"  next due:    {iso(row.next_due_at) or '-'}")
        lines.append(
            f"  last slot:   {iso(row.last_slot) or '-'} ({row.last_outcome or '-'}, "
            f"job {row.last_job_id or '-'})"
        )
        lines.append(
            f"  missed:      {row.missed_total} total"
            + (
                f", last {iso(row.last_missed_from)} .. {iso(row.last_missed_to)}"
                if row.last_missed_from
                else ""
            )
        )
        lines.append(f"  coalesced:   {row.coalesced_total} total")
        if row.repaired_reason:
            lines.append(f"  last repair: {row.repaired_reason}")
        if row.removed_at is not None:
            lines.append(f"  removed:     {iso(row.removed_at)}")
            reasons.append("it was removed from code; its row is kept for the retention period")
        if row.paused:
            until = f" until {iso(row.paused_until)}" if row.paused_until else ""
            lines.append(
                f"  paused:      yes{until} by {row.paused_by or '?'}"
                + (f": {row.pause_note}" if row.pause_note else "")
            )
            reasons.append(f"it is paused{until}; slots in the pause are counted as missed")
        else:
            lines.append("  paused:      no")
        active = storage.count_jobs(JobFilter(schedule_key=key, states=_ACTIVE))
        lines.append(f"  active jobs: {active} queued or running")
        if sched is not None and sched.overlap == "skip" and active:
            reasons.append("overlap=skip and a job of it is still queued or running")

    if sched is not None and row is not None and row.paused and not row.paused_until:
        lines.append("  next slots:  none while paused (resume it to fire again)")
    elif sched is not None:
        t = now if row is None or row.cursor < now else row.cursor
        if row is not None and row.paused and row.paused_until and row.paused_until > t:
            t = row.paused_until
        nexts = []
        for _ in range(5):
            n = sched.spec.next_after(t, sched.tz)
            if n is None:
                break
            nexts.append(iso(n) or "")
            t = n
        lines.append(f"  next slots:  {', '.join(nexts) or 'none (the spec never fires again)'}")
        if not nexts:
            reasons.append("the spec has no future slot")

    history = storage.slot_history(key, limit=5)
    if history:
        lines.append("  recent slots:")
        for r in history:
            job = f" job {r.job_id} ({r.job_state})" if r.job_id else ""
            lines.append(f"    {iso(r.slot)}  {r.outcome}{job}")
    overdue = row is not None and row.next_due_at is not None and row.next_due_at <= now
    if not reasons:
        due = row.next_due_at if row is not None and overdue else None
        hints = commands or CommandLine()
        reasons += _unserved(registry, sched, _live(storage, lease), due, hints)
    if not reasons:
        reasons.append("nothing holds it back: it fires at its next slot")
    lines.append("verdict: " + "; ".join(reasons))
    return "\n".join(lines)


def _live(storage: Storage, lease: float) -> list[WorkerRow]:
    """The workers serving now (`domain.serving.serving`: alive and not stopping)."""
    return serving_workers(storage.list_workers(), lease)


def _unserved(
    registry: ScheduleRegistry,
    sched: ScheduleDef | None,
    live: list[WorkerRow],
    due: datetime | None,
    commands: CommandLine,
) -> list[str]:
    """Why no live worker fires it, or runs the jobs it enqueues (none: one would)."""
    late = f"it was due at {iso(due)} but " if due is not None else ""
    if not any(w.scheduler for w in live):
        return [
            f"{late}no live worker runs the scheduler, so it does not fire until one starts: "
            f"start `{commands('worker')}` (without --no-scheduler)"
        ]
    if sched is None:
        return []
    if not any(sched.job in w.jobs for w in live):
        return [
            f"no live worker knows its job `{sched.job}`: its slots are enqueued, and their "
            "jobs wait until a worker whose app registers it runs"
        ]
    queue = registry.queue_of(sched)
    if not any(queue in w.queues for w in live):
        return [
            f"no live worker serves its queue `{queue}`: its slots are enqueued, and their jobs "
            f"wait until one does (start one with -q {queue})"
        ]
    return []
