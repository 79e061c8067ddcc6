"""The PostgreSQL tick's write: everything a tick decided in one statement (tick_write), its
input grouped so that a burst of 100k identical schedules costs a few arrays."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import JobTemplate, TickPlan
from onthedot.storage.interface import EnqueuedSlot
from onthedot.storage.sqlfile import load_queries

Q = load_queries("postgres")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _template_of(job: NewJob) -> JobTemplate:
    """A template for a planned job that came without one (not made by the decider)."""
    args_json, kwargs_json = job.encoded()
    return JobTemplate(
        name=job.name,
        queue=job.queue,
        priority=job.priority,
        max_attempts=job.max_attempts,
        timeout=job.timeout,
        args_json=args_json,
        kwargs_json=kwargs_json,
        limit_key=job.limit_key,
        limits=job.limits,
    )


def _extra(p: TickPlan) -> tuple[object, ...]:
    """The rarely set ledger values of a plan: unpause, remove and the repaired timing."""
    rep = p.repair
    if rep is None:
        return (p.unpause, p.remove, None, None, None, None)
    return (p.unpause, p.remove, rep.fingerprint, rep.spec, rep.timezone, rep.repaired_reason)


def _slot_group(i: int, g: tuple[Any, ...]) -> dict[str, object]:
    slot, outcome, t, run_at, lock_key = g
    return {
        "i": i,
        "slot": _iso(slot),
        "outcome": outcome,
        "name": t.name if t else None,
        "queue": t.queue if t else None,
        "priority": t.priority if t else None,
        "args": t.args_json if t else None,
        "kwargs": t.kwargs_json if t else None,
        "run_at": _iso(run_at),
        "max_attempts": t.max_attempts if t else None,
        "timeout": t.timeout if t else None,
        "lock_key": lock_key,
        "limit_key": t.limit_key if t else None,
        "limits": t.limits if t else None,
    }


def _plan_group(i: int, g: tuple[Any, ...]) -> dict[str, object]:
    cursor, next_due, missed, missed_from, missed_to, coalesced, extra = g
    unpause, remove, fingerprint, spec, timezone, reason = extra or (False, False, *[None] * 4)
    return {
        "i": i,
        "cursor": _iso(cursor),
        "next_due": _iso(next_due),
        "missed": missed,
        "missed_from": _iso(missed_from),
        "missed_to": _iso(missed_to),
        "coalesced": coalesced,
        "unpause": unpause,
        "remove": remove,
        "fingerprint": fingerprint,
        "spec": spec,
        "timezone": timezone,
        "reason": reason,
    }


def write_tick(
    conn: psycopg.Connection[Any],
    plans: Sequence[TickPlan],
    generation: int,
    now: datetime,
) -> tuple[list[EnqueuedSlot], list[tuple[str, datetime]]]:
    """Run tick_write: slots and plans are sent as (key, group index) pairs, each group
    once (see the query), so a burst costs two list appends per slot and per plan."""
    skeys: list[str] = []
    sgi: list[int] = []
    taken: list[tuple[str, datetime, str]] = []  # (key, slot, outcome) by input order
    sgroups: dict[tuple[object, ...], int] = {}
    pkeys: list[str] = []
    pgi: list[int] = []
    pni: list[int] = []  # ordinal (1-based) of each plan's newest slot, 0: none
    pgroups: dict[tuple[object, ...], int] = {}
    for p in plans:
        key = p.key
        newest, newest_slot = 0, None
        for ps in p.slots:
            template = ps.template
            if template is None and ps.job is not None:
                template = _template_of(ps.job)
            sg: tuple[object, ...] = (ps.slot, ps.outcome, template, ps.run_at, ps.lock_key)
            i = sgroups.get(sg)
            if i is None:
                i = sgroups[sg] = len(sgroups)
            skeys.append(key)
            sgi.append(i)
            taken.append((key, ps.slot, ps.outcome))
            if newest_slot is None or ps.slot > newest_slot:
                newest, newest_slot = len(taken), ps.slot
        extra = None if p.repair is None and not (p.unpause or p.remove) else _extra(p)
        pg = (p.cursor, p.next_due_at, p.missed, p.missed_from, p.missed_to, p.coalesced, extra)
        i = pgroups.get(pg)
        if i is None:
            i = pgroups[pg] = len(pgroups)
        pkeys.append(key)
        pgi.append(i)
        pni.append(newest)
    params = {
        "skeys": json.dumps(skeys),
        "sgi": json.dumps(sgi),
        "sgroups": json.dumps([_slot_group(i, g) for g, i in sgroups.items()]),
        "pkeys": json.dumps(pkeys),
        "pgi": json.dumps(pgi),
        "pni": json.dumps(pni),
        "pgroups": json.dumps([_plan_group(i, g) for g, i in pgroups.items()]),
        "generation": generation,
        "now": now,
    }
    done = conn.execute(Q["tick_write"], params, prepare=True).fetchall()
    recorded = []
    for ord_, job_id in done:
        key, slot, outcome = taken[ord_ - 1]
        recorded.append(EnqueuedSlot(key, slot, outcome, job_id))
    conflicts: list[tuple[str, datetime]] = []
    if len(done) < len(taken):
        inserted = {ord_ - 1 for ord_, _ in done}
        conflicts = [(k, s) for n, (k, s, _) in enumerate(taken) if n not in inserted]
    return recorded, conflicts
