"""Runtime schedules, operator state, slot history and the audit log."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import AuditEntry, LedgerRow, SlotRecord
from onthedot.storage.interface import OperatorPatch
from onthedot.storage.sql import decode
from onthedot.storage.sql.base import SqlBase

_TIME_COLUMNS = frozenset(
    {"paused_until", "paused_at", "cursor", "next_due_at", "last_missed_from", "last_missed_to"}
)


class HistoryVerbs(SqlBase):
    def slot_history(
        self,
        key: str,
        *,
        limit: int | None = 50,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> list[SlotRecord]:
        d = self.d
        params = {
            "key": key,
            "limit": limit,
            "start": None if start is None else d.slot(start),
            "end": None if end is None else d.slot(end),
        }
        with self._read() as conn:
            rows = self._run(conn, "slot_history", params).fetchall()
        return [decode.slot_record(d, r) for r in rows]

    def upsert_dynamic(self, row: LedgerRow) -> None:
        d = self.d
        params = {
            "key": row.key,
            "fingerprint": row.fingerprint,
            "spec": row.spec,
            "timezone": row.timezone,
            "definition": json.dumps(row.definition),
            "cursor": d.instant(row.cursor),
            "next_due_at": d.instant(row.next_due_at),
            "reason": row.repaired_reason,
            "now": d.now(self._fixed()),
        }
        with self._write() as conn:
            self._run(conn, "upsert_dynamic", params)

    def delete_schedule(self, key: str, *, cancel_queued: bool) -> int:
        cancelled = 0
        with self._tx() as conn:
            # The row lock first: a tick holding it (its slot job not yet committed) is waited
            # for, so the cancel below sees that job; a tick after this one finds no row.
            self._run(conn, "lock_schedule", {"key": key})
            if cancel_queued:
                params = {"key": key, "now": self.d.now(None)}
                cancelled = int(self._run(conn, "cancel_schedule_jobs", params).rowcount)
            self._run(conn, "delete_schedule", {"key": key})
            self._run(conn, "delete_schedule_slots", {"key": key})
        return cancelled

    def update_operator_state(self, key: str, patch: OperatorPatch) -> LedgerRow | None:
        changes = patch.changes()
        d = self.d
        values = {
            c: d.instant(v) if c in _TIME_COLUMNS else d.flag(v) if isinstance(v, bool) else v
            for c, v in changes.items()
        }
        sets = ", ".join(f'"{c}" = {d.param(c)}' for c in changes) or '"paused" = "paused"'
        sql = d.q["update_operator_state"].replace("{sets}", sets)
        with self._write() as conn:
            params = {**values, "key": key, "now": d.now(self._fixed())}
            row = d.run(conn, sql, params).fetchone()
        return decode.ledger_row(d, row) if row else None

    def record_slots(
        self, records: Sequence[SlotRecord], jobs: Sequence[NewJob | None]
    ) -> list[SlotRecord]:
        d = self.d
        inserted: list[SlotRecord] = []
        with self._tx() as conn:
            for rec, job in zip(records, jobs, strict=True):
                fixed = self._fixed(rec.recorded_at)
                slot = d.slot(rec.slot)
                params = {
                    "key": rec.key,
                    "slot": slot,
                    "outcome": rec.outcome,
                    "job_id": None,
                    "now": d.now(fixed),
                    "actor": rec.actor,
                    "note": rec.note,
                }
                row = self._one(conn, "record_slot", params)
                if row is None:
                    continue  # already in the history: never enqueued twice
                job_id = None
                if job is not None:
                    job_id = self._insert_job(conn, job, fixed)
                    params = {"key": rec.key, "slot": slot, "job_id": job_id}
                    self._run(conn, "set_slot_job", params)
                recorded = d.dt(row[0])
                inserted.append(
                    SlotRecord(
                        rec.key, rec.slot, rec.outcome, job_id, recorded, rec.actor, rec.note
                    )
                )
        return inserted

    def delete_slot(self, key: str, slot: datetime, outcome: str) -> bool:
        params = {"key": key, "slot": self.d.slot(slot), "outcome": outcome}
        with self._write() as conn:
            return int(self._run(conn, "delete_slot", params).rowcount) > 0

    def add_audit(self, entry: AuditEntry) -> None:
        params = {
            "at": self.d.now(self._fixed(entry.at)),
            "actor": entry.actor,
            "action": entry.action,
            "key": entry.key,
            "note": entry.note,
            "details": None if entry.details is None else json.dumps(entry.details),
        }
        with self._write() as conn:
            self._run(conn, "add_audit", params)

    def list_audit(self, key: str | None = None, *, limit: int = 100) -> list[AuditEntry]:
        with self._read() as conn:
            rows = self._run(conn, "list_audit", {"key": key, "limit": limit}).fetchall()
        return [decode.audit(self.d, r) for r in rows]
