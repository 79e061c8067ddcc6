"""Scheduler verbs of the SQLite backend. Write transactions are BEGIN IMMEDIATE, so one tick at
a time holds the database's write lock: no two schedulers can decide the same row at once."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import (
    AuditEntry,
    DueRow,
    LedgerRow,
    SlotRecord,
    SyncReport,
    TickPlan,
)
from onthedot.storage.interface import Decide, EnqueuedSlot, TickResult
from onthedot.storage.sqlfile import load_queries
from onthedot.storage.sqlite.timeconv import from_ts, opt_dt, opt_ts, slot_ts, to_ts

Q = load_queries("sqlite")
_LEDGER_COLUMNS = (
    Q["ledger_columns"].removeprefix("SELECT").removesuffix("FROM onthedot_schedules").strip()
)


def ledger_row(r: Sequence[Any], active: int = 0) -> LedgerRow:
    return LedgerRow(
        key=r[0],
        source=r[1],
        fingerprint=r[2],
        spec=r[3],
        timezone=r[4],
        cursor=from_ts(r[5]),
        next_due_at=opt_dt(r[6]),
        generation=r[7],
        definition=None if r[8] is None else json.loads(r[8]),
        removed_at=opt_dt(r[9]),
        paused=bool(r[10]),
        paused_until=opt_dt(r[11]),
        paused_at=opt_dt(r[12]),
        paused_by=r[13],
        pause_note=r[14],
        missed_total=r[15],
        coalesced_total=r[16],
        last_missed_from=opt_dt(r[17]),
        last_missed_to=opt_dt(r[18]),
        last_slot=opt_dt(r[19]),
        last_outcome=r[20],
        last_job_id=r[21],
        repaired_reason=r[22],
        created_at=opt_dt(r[23]),
        updated_at=opt_dt(r[24]),
        active_jobs=active,
    )


def due_row(r: Sequence[Any]) -> DueRow:
    return DueRow(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        from_ts(r[5]),
        opt_dt(r[6]),
        bool(r[7]),
        opt_dt(r[8]),
        None if r[9] is None else json.loads(r[9]),
        int(r[10]),
    )


def _timing_params(row: LedgerRow, generation: int, now: float) -> dict[str, Any]:
    return {
        "key": row.key,
        "fingerprint": row.fingerprint,
        "spec": row.spec,
        "timezone": row.timezone,
        "cursor": to_ts(row.cursor),
        "next_due_at": opt_ts(row.next_due_at),
        "reason": row.repaired_reason,
        "generation": generation,
        "now": now,
    }


def insert_job(conn: sqlite3.Connection, job: NewJob, now: float) -> int:
    """Insert one job; a taken unique_key yields the id of the job holding it."""
    args, kwargs = job.encoded()
    row = conn.execute(
        Q["enqueue_one"],
        {
            "name": job.name,
            "queue": job.queue,
            "priority": job.priority,
            "args": args,
            "kwargs": kwargs,
            "run_at": opt_ts(job.run_at),
            "now": now,
            "max_attempts": job.max_attempts,
            "timeout": job.timeout,
            "unique_key": job.unique_key,
            "schedule_key": job.schedule_key,
            "slot": None if job.slot is None else slot_ts(job.slot),
            "lock_key": job.lock_key,
        },
    ).fetchone()
    if row is None:
        row = conn.execute(Q["find_unique"], {"unique_key": job.unique_key}).fetchone()
    return int(row[0])


class SqliteLedger:
    _conn: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _tx: Callable[[], AbstractContextManager[sqlite3.Connection]]

    @staticmethod
    def _now(now: datetime | None) -> float:
        return now.timestamp() if now is not None else time.time()

    def code_generation(self, code_hash: str) -> int:
        with self._tx() as conn:
            conn.execute(Q["add_generation"], {"hash": code_hash, "now": time.time()})
            row = conn.execute(Q["generation_of"], {"hash": code_hash}).fetchone()
        return int(row[0])

    @staticmethod
    def _fenced(conn: sqlite3.Connection, generation: int, ttl: float, now: float) -> bool:
        row = conn.execute(Q["fence"], {"generation": generation, "ttl": ttl, "now": now})
        return bool(row.fetchone()[0])

    def sync_declared(
        self,
        *,
        generation: int,
        fence_ttl: float,
        plan: Callable[[datetime, Sequence[LedgerRow]], SyncReport],
        now: datetime | None = None,
        keys: Sequence[str] = (),
    ) -> SyncReport:
        ts = self._now(now)
        with self._tx() as conn:
            if self._fenced(conn, generation, fence_ttl, ts):
                return SyncReport(fenced=True)
            rows = [
                ledger_row(r)
                for r in conn.execute(Q["sync_rows"], {"keys": json.dumps(list(keys))})
            ]
            report = plan(from_ts(ts), rows)
            for row in report.inserts:
                conn.execute(Q["ledger_insert"], _timing_params(row, generation, ts))
            for row in report.restarts:
                conn.execute(Q["ledger_restart"], _timing_params(row, generation, ts))
            for key in report.removals:
                conn.execute(Q["ledger_remove"], {"key": key, "generation": generation, "now": ts})
        return report

    def tick(
        self,
        decide: Decide,
        *,
        generation: int,
        fence_ttl: float,
        limit: int,
        now: datetime | None = None,
        skip_keys: Sequence[str] = (),
        expect_due: bool = False,
    ) -> TickResult:
        ts = self._now(now)
        db_now = from_ts(ts)
        # Read first without the write lock: an idle tick never blocks other writers. It still
        # reports the fence, or a fenced scheduler would believe itself unfenced while idle.
        if not expect_due:
            with self._conn() as conn:
                row = conn.execute(Q["tick_probe"]).fetchone()
                next_due = None if row is None else row[0]
                if next_due is None or next_due > ts:
                    fenced = self._fenced(conn, generation, fence_ttl, ts)
                    return TickResult(
                        now=db_now, rows=0, fenced=fenced, idle=True, next_due_at=opt_dt(next_due)
                    )
        with self._tx() as conn:
            if self._fenced(conn, generation, fence_ttl, ts):
                return TickResult(now=db_now, rows=0, fenced=True)
            raw = conn.execute(
                Q["tick_due"],
                {"now": ts, "limit": limit, "skip_keys": json.dumps(list(skip_keys))},
            ).fetchall()
            rows = [due_row(r) for r in raw]
            plans = list(decide(db_now, rows))
            recorded: list[EnqueuedSlot] = []
            conflicts: list[tuple[str, datetime]] = []
            for plan in plans:
                last: tuple[datetime, str, int | None] | None = None
                for ps in plan.slots:
                    inserted = conn.execute(
                        Q["record_slot"],
                        {
                            "key": plan.key,
                            "slot": slot_ts(ps.slot),
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
                        conn.execute(
                            Q["set_slot_job"],
                            {"key": plan.key, "slot": slot_ts(ps.slot), "job_id": job_id},
                        )
                    recorded.append(EnqueuedSlot(plan.key, ps.slot, ps.outcome, job_id))
                    last = (ps.slot, ps.outcome, job_id)
                self._update_row(conn, plan, last, generation, ts)
        return TickResult(
            now=db_now, rows=len(rows), recorded=recorded, conflicts=conflicts, plans=plans
        )

    @staticmethod
    def _update_row(
        conn: sqlite3.Connection,
        p: TickPlan,
        last: tuple[datetime, str, int | None] | None,
        generation: int,
        now: float,
    ) -> None:
        rep = p.repair
        conn.execute(
            Q["tick_update"],
            {
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
            },
        )

    def count_live_code_rows(self, keys: Sequence[str]) -> int:
        with self._conn() as conn:
            row = conn.execute(Q["count_live_code_rows"], {"keys": json.dumps(list(keys))})
            return int(row.fetchone()[0])

    def get_schedule_row(self, key: str) -> LedgerRow | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {_LEDGER_COLUMNS} FROM onthedot_schedules WHERE key = ?", (key,)
            ).fetchone()
        return ledger_row(row) if row else None

    def list_schedule_rows(self) -> list[LedgerRow]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_LEDGER_COLUMNS} FROM onthedot_schedules ORDER BY key"
            ).fetchall()
        return [ledger_row(r) for r in rows]

    def slot_history(self, key: str, *, limit: int = 50) -> list[SlotRecord]:
        with self._conn() as conn:
            rows = conn.execute(Q["slot_history"], {"key": key, "limit": limit}).fetchall()
        return [
            SlotRecord(r[0], from_ts(r[1]), r[2], r[3], opt_dt(r[4]), r[5], r[6], r[7])
            for r in rows
        ]

    def upsert_dynamic(self, row: LedgerRow, *, create: bool, now: datetime | None = None) -> None:
        with self._tx() as conn:
            conn.execute(
                Q["upsert_dynamic"],
                {
                    "key": row.key,
                    "fingerprint": row.fingerprint,
                    "spec": row.spec,
                    "timezone": row.timezone,
                    "definition": json.dumps(row.definition),
                    "cursor": to_ts(row.cursor),
                    "next_due_at": opt_ts(row.next_due_at),
                    "reason": row.repaired_reason,
                    "now": self._now(now),
                },
            )

    def delete_schedule(self, key: str, *, cancel_queued: bool) -> int:
        cancelled = 0
        with self._tx() as conn:
            if cancel_queued:
                cancelled = conn.execute(
                    Q["cancel_schedule_jobs"], {"key": key, "now": time.time()}
                ).rowcount
            conn.execute(Q["delete_schedule"], {"key": key})
            conn.execute(Q["delete_schedule_slots"], {"key": key})
        return cancelled

    _OPERATOR_COLUMNS = frozenset(
        {
            "paused",
            "paused_until",
            "pause_note",
            "paused_by",
            "paused_at",
            "cursor",
            "next_due_at",
            "missed_total",
            "last_missed_from",
            "last_missed_to",
        }
    )
    _TIME_COLUMNS = frozenset(
        {"paused_until", "paused_at", "cursor", "next_due_at", "last_missed_from", "last_missed_to"}
    )

    def update_operator_state(
        self, key: str, changes: dict[str, Any], *, now: datetime | None = None
    ) -> LedgerRow | None:
        unknown = set(changes) - self._OPERATOR_COLUMNS
        if unknown:
            raise ValueError(f"not operator columns: {sorted(unknown)}")
        values = {
            c: (opt_ts(v) if c in self._TIME_COLUMNS else (int(v) if isinstance(v, bool) else v))
            for c, v in changes.items()
        }
        sets = ", ".join(f"{c} = :{c}" for c in changes)
        sql = (
            f"UPDATE onthedot_schedules SET {sets}, updated_at = :now WHERE key = :key "
            f"RETURNING {_LEDGER_COLUMNS}"
        )
        with self._tx() as conn:
            row = conn.execute(sql, {**values, "key": key, "now": self._now(now)}).fetchone()
        return ledger_row(row) if row else None

    def record_slots(
        self, records: Sequence[SlotRecord], jobs: Sequence[NewJob | None]
    ) -> list[SlotRecord]:
        inserted: list[SlotRecord] = []
        with self._tx() as conn:
            for rec, job in zip(records, jobs, strict=True):
                ts = self._now(rec.recorded_at)
                row = conn.execute(
                    Q["record_slot"],
                    {
                        "key": rec.key,
                        "slot": slot_ts(rec.slot),
                        "outcome": rec.outcome,
                        "job_id": None,
                        "now": ts,
                        "actor": rec.actor,
                        "note": rec.note,
                    },
                ).fetchone()
                if row is None:
                    continue  # already in the history: never enqueued twice
                job_id = None
                if job is not None:
                    job_id = insert_job(conn, job, ts)
                    conn.execute(
                        Q["set_slot_job"],
                        {"key": rec.key, "slot": slot_ts(rec.slot), "job_id": job_id},
                    )
                inserted.append(
                    SlotRecord(
                        rec.key, rec.slot, rec.outcome, job_id, from_ts(ts), rec.actor, rec.note
                    )
                )
        return inserted

    def delete_slot(self, key: str, slot: datetime, outcome: str) -> bool:
        with self._tx() as conn:
            cur = conn.execute(
                Q["delete_slot"], {"key": key, "slot": slot_ts(slot), "outcome": outcome}
            )
            return cur.rowcount > 0

    def existing_slots(self, key: str, start: datetime, end: datetime) -> set[datetime]:
        with self._conn() as conn:
            rows = conn.execute(
                Q["existing_slots"], {"key": key, "start": slot_ts(start), "end": slot_ts(end)}
            ).fetchall()
        return {from_ts(r[0]) for r in rows}

    def oldest_slot(self, key: str) -> datetime | None:
        with self._conn() as conn:
            row = conn.execute(Q["oldest_slot"], {"key": key}).fetchone()
        return opt_dt(row[0]) if row else None

    def add_audit(self, entry: AuditEntry) -> None:
        with self._tx() as conn:
            conn.execute(
                Q["add_audit"],
                {
                    "at": self._now(entry.at),
                    "actor": entry.actor,
                    "action": entry.action,
                    "key": entry.key,
                    "note": entry.note,
                    "details": None if entry.details is None else json.dumps(entry.details),
                },
            )

    def list_audit(self, key: str | None = None, *, limit: int = 100) -> list[AuditEntry]:
        with self._conn() as conn:
            rows = conn.execute(Q["list_audit"], {"key": key, "limit": limit}).fetchall()
        return [
            AuditEntry(
                actor=r[2],
                action=r[3],
                key=r[4],
                note=r[5],
                details=None if r[6] is None else json.loads(r[6]),
                at=from_ts(r[1]),
                id=r[0],
            )
            for r in rows
        ]

    def active_job_count(self, key: str) -> int:
        with self._conn() as conn:
            row = conn.execute(Q["active_job_count"], {"key": key}).fetchone()
        return int(row[0]) if row else 0
