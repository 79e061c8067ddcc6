"""The SQLite tick's write: row by row inside the BEGIN IMMEDIATE transaction, so one tick at a
time holds the write lock and no two schedulers decide the same row at once."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from onthedot.domain.ledger import TickPlan
from onthedot.storage.interface import EnqueuedSlot
from onthedot.storage.sqlfile import load_queries
from onthedot.storage.sqlite.insert import insert_job
from onthedot.storage.sqlite.timeconv import opt_ts, slot_ts, to_ts

Q = load_queries("sqlite")


def write_tick(
    conn: sqlite3.Connection, plans: Sequence[TickPlan], generation: int, ts: float
) -> tuple[list[EnqueuedSlot], list[tuple[str, datetime]]]:
    recorded: list[EnqueuedSlot] = []
    conflicts: list[tuple[str, datetime]] = []
    for plan in plans:
        last: tuple[datetime, str, int | None] | None = None
        for ps in plan.slots:
            slot = slot_ts(ps.slot)
            inserted = conn.execute(
                Q["record_slot"],
                {
                    "key": plan.key,
                    "slot": slot,
                    "outcome": ps.outcome,
                    "job_id": None,
                    "now": ts,
                    "actor": None,
                    "note": None,
                },
            ).fetchone()
            if inserted is None:
                conflicts.append((plan.key, ps.slot))
                last = (ps.slot, "skipped_operator", None)
                continue
            job_id = None
            if ps.job is not None:
                job_id = insert_job(conn, ps.job, ts)
                conn.execute(Q["set_slot_job"], {"key": plan.key, "slot": slot, "job_id": job_id})
            recorded.append(EnqueuedSlot(plan.key, ps.slot, ps.outcome, job_id))
            last = (ps.slot, ps.outcome, job_id)
        conn.execute(Q["tick_update"], _ledger_params(plan, last, generation, ts))
    return recorded, conflicts


def _ledger_params(
    p: TickPlan, last: tuple[datetime, str, int | None] | None, generation: int, now: float
) -> dict[str, object]:
    rep = p.repair
    return {
        "key": p.key,
        "cursor": to_ts(p.cursor),
        "next_due_at": opt_ts(p.next_due_at),
        "missed": p.missed,
        "missed_from": opt_ts(p.missed_from),
        "missed_to": opt_ts(p.missed_to),
        "coalesced": p.coalesced,
        "unpause": int(p.unpause),
        "remove": int(p.remove),
        "fingerprint": rep.fingerprint if rep else None,
        "spec": rep.spec if rep else None,
        "timezone": rep.timezone if rep else None,
        "reason": rep.repaired_reason if rep else None,
        "last_slot": opt_ts(last[0]) if last else None,
        "last_outcome": last[1] if last else None,
        "last_job_id": last[2] if last else None,
        "generation": generation,
        "now": now,
    }
