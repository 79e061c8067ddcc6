"""Scheduler verbs of the PostgreSQL backend: ledger sync, the tick, history, audit."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import psycopg

from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import (
    AuditEntry,
    DueRow,
    JobTemplate,
    LedgerRow,
    SlotRecord,
    SyncReport,
    TickPlan,
)
from onthedot.storage.interface import Decide, EnqueuedSlot, TickResult
from onthedot.storage.postgres.rows import enqueue_rows
from onthedot.storage.sqlfile import load_queries

Q = load_queries("postgres")
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
        cursor=r[5],
        next_due_at=r[6],
        generation=r[7],
        definition=r[8],
        removed_at=r[9],
        paused=r[10],
        paused_until=r[11],
        paused_at=r[12],
        paused_by=r[13],
        pause_note=r[14],
        missed_total=r[15],
        coalesced_total=r[16],
        last_missed_from=r[17],
        last_missed_to=r[18],
        last_slot=r[19],
        last_outcome=r[20],
        last_job_id=r[21],
        repaired_reason=r[22],
        created_at=r[23],
        updated_at=r[24],
        active_jobs=active,
    )


def _timing_arrays(rows: Sequence[LedgerRow]) -> dict[str, list[Any]]:
    return {
        "keys": [r.key for r in rows],
        "fingerprints": [r.fingerprint for r in rows],
        "specs": [r.spec for r in rows],
        "timezones": [r.timezone for r in rows],
        "cursors": [r.cursor for r in rows],
        "next_due": [r.next_due_at for r in rows],
        "reasons": [r.repaired_reason for r in rows],
    }


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
    )


def _extra(p: TickPlan) -> tuple[Any, ...]:
    """The rarely set ledger values of a plan: unpause, remove and the repaired timing."""
    rep = p.repair
    if rep is None:
        return (p.unpause, p.remove, None, None, None, None)
    return (p.unpause, p.remove, rep.fingerprint, rep.spec, rep.timezone, rep.repaired_reason)


def _slot_group(i: int, g: tuple[Any, ...]) -> dict[str, Any]:
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
    }


def _plan_group(i: int, g: tuple[Any, ...]) -> dict[str, Any]:
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


class PostgresLedger:
    _conn: Callable[[], AbstractContextManager[psycopg.Connection[Any]]]
    _tx: Callable[[], AbstractContextManager[psycopg.Connection[Any]]]

    def code_generation(self, code_hash: str) -> int:
        with self._tx() as conn:
            row = conn.execute(Q["code_generation"], {"hash": code_hash}).fetchone()
        assert row is not None
        return int(row[0])

    def _clock_and_fence(
        self, conn: psycopg.Connection[Any], generation: int, ttl: float, now: datetime | None
    ) -> tuple[datetime, bool]:
        row = conn.execute(
            Q["clock_and_fence"], {"now": now, "generation": generation, "ttl": ttl}, prepare=True
        ).fetchone()
        assert row is not None
        return row[0], bool(row[1])

    def sync_declared(
        self,
        *,
        generation: int,
        fence_ttl: float,
        plan: Callable[[datetime, Sequence[LedgerRow]], SyncReport],
        now: datetime | None = None,
        keys: Sequence[str] = (),
    ) -> SyncReport:
        with self._tx() as conn:
            db_now, fenced = self._clock_and_fence(conn, generation, fence_ttl, now)
            if fenced:
                return SyncReport(fenced=True)
            rows = [ledger_row(r) for r in conn.execute(Q["sync_rows"], {"keys": list(keys)})]
            report = plan(db_now, rows)
            params = {"generation": generation, "now": db_now}
            if report.inserts:
                conn.execute(Q["ledger_insert"], {**params, **_timing_arrays(report.inserts)})
            if report.restarts:
                conn.execute(Q["ledger_restart"], {**params, **_timing_arrays(report.restarts)})
            if report.removals:
                conn.execute(Q["ledger_remove"], {**params, "keys": list(report.removals)})
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
        with self._conn() as conn:
            if not expect_due:
                probe = conn.execute(
                    Q["tick_probe"],
                    {"now": now, "generation": generation, "ttl": fence_ttl},
                    prepare=True,
                ).fetchone()
                assert probe is not None
                db_now, fenced, next_due = probe[0], bool(probe[1]), probe[2]
                if fenced or next_due is None or next_due > db_now:
                    return TickResult(
                        now=db_now, rows=0, fenced=fenced, idle=True, next_due_at=next_due
                    )
            with conn.transaction():
                # The fence is part of the claiming transaction (the probe was only a hint).
                db_now, fenced = self._clock_and_fence(conn, generation, fence_ttl, now)
                if fenced:
                    return TickResult(now=db_now, rows=0, fenced=True)
                raw = conn.execute(
                    Q["tick_due"],
                    {"now": db_now, "limit": limit, "skip_keys": list(skip_keys)},
                    prepare=True,
                ).fetchall()
                if not raw:
                    return TickResult(now=db_now, rows=0)
                # Rows are made one at a time as decide reads them, so each dies young.
                plans = list(decide(db_now, map(DueRow._make, raw)))
                recorded, conflicts = self._write(conn, plans, generation, db_now)
        return TickResult(
            now=db_now, rows=len(raw), recorded=recorded, conflicts=conflicts, plans=plans
        )

    @staticmethod
    def _write(
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
        sgroups: dict[tuple[Any, ...], int] = {}
        pkeys: list[str] = []
        pgi: list[int] = []
        pni: list[int] = []  # ordinal (1-based) of each plan's newest slot, 0: none
        pgroups: dict[tuple[Any, ...], int] = {}
        for p in plans:
            key = p.key
            newest, newest_slot = 0, None
            for ps in p.slots:
                template = ps.template
                if template is None and ps.job is not None:
                    template = _template_of(ps.job)
                sg: tuple[Any, ...] = (ps.slot, ps.outcome, template, ps.run_at, ps.lock_key)
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

    def count_live_code_rows(self, keys: Sequence[str]) -> int:
        with self._conn() as conn:
            row = conn.execute(Q["count_live_code_rows"], {"keys": list(keys)}).fetchone()
        return int(row[0]) if row else 0

    def get_schedule_row(self, key: str) -> LedgerRow | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {_LEDGER_COLUMNS} FROM onthedot_schedules WHERE key = %s", (key,)
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
        return [SlotRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]) for r in rows]

    def upsert_dynamic(self, row: LedgerRow, *, create: bool, now: datetime | None = None) -> None:
        with self._conn() as conn:
            conn.execute(
                Q["upsert_dynamic"],
                {
                    "key": row.key,
                    "fingerprint": row.fingerprint,
                    "spec": row.spec,
                    "timezone": row.timezone,
                    "definition": json.dumps(row.definition),
                    "cursor": row.cursor,
                    "next_due_at": row.next_due_at,
                    "reason": row.repaired_reason,
                    "now": now,
                },
            )

    def delete_schedule(self, key: str, *, cancel_queued: bool) -> int:
        cancelled = 0
        with self._tx() as conn:
            if cancel_queued:
                cancelled = conn.execute(Q["cancel_schedule_jobs"], {"key": key}).rowcount
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

    def update_operator_state(
        self, key: str, changes: dict[str, Any], *, now: datetime | None = None
    ) -> LedgerRow | None:
        unknown = set(changes) - self._OPERATOR_COLUMNS
        if unknown:
            raise ValueError(f"not operator columns: {sorted(unknown)}")
        sets = ", ".join(f'"{c}" = %({c})s' for c in changes)
        sql = (
            f"UPDATE onthedot_schedules SET {sets}, updated_at = COALESCE(%(now)s::timestamptz,"
            f" now()) WHERE key = %(key)s RETURNING {_LEDGER_COLUMNS}"
        )
        with self._conn() as conn:
            row = conn.execute(sql.encode(), {**changes, "key": key, "now": now}).fetchone()
        return ledger_row(row) if row else None

    def record_slots(
        self, records: Sequence[SlotRecord], jobs: Sequence[NewJob | None]
    ) -> list[SlotRecord]:
        inserted: list[SlotRecord] = []
        with self._tx() as conn:
            for rec, job in zip(records, jobs, strict=True):
                row = conn.execute(
                    Q["record_slot"],
                    {
                        "key": rec.key,
                        "slot": rec.slot,
                        "outcome": rec.outcome,
                        "job_id": None,
                        "now": rec.recorded_at,
                        "actor": rec.actor,
                        "note": rec.note,
                    },
                ).fetchone()
                if row is None:
                    continue  # already in the history: never enqueued twice
                job_id = None
                if job is not None:
                    job_id = enqueue_rows(conn, [job], rec.recorded_at)[0]
                    conn.execute(
                        Q["set_slot_job"], {"key": rec.key, "slot": rec.slot, "job_id": job_id}
                    )
                inserted.append(
                    SlotRecord(rec.key, rec.slot, rec.outcome, job_id, row[0], rec.actor, rec.note)
                )
        return inserted

    def delete_slot(self, key: str, slot: datetime, outcome: str) -> bool:
        with self._conn() as conn:
            cur = conn.execute(Q["delete_slot"], {"key": key, "slot": slot, "outcome": outcome})
            return cur.rowcount > 0

    def existing_slots(self, key: str, start: datetime, end: datetime) -> set[datetime]:
        with self._conn() as conn:
            rows = conn.execute(
                Q["existing_slots"], {"key": key, "start": start, "end": end}
            ).fetchall()
        return {r[0] for r in rows}

    def oldest_slot(self, key: str) -> datetime | None:
        with self._conn() as conn:
            row = conn.execute(Q["oldest_slot"], {"key": key}).fetchone()
        return row[0] if row else None

    def add_audit(self, entry: AuditEntry) -> None:
        with self._conn() as conn:
            conn.execute(
                Q["add_audit"],
                {
                    "at": entry.at,
                    "actor": entry.actor,
                    "action": entry.action,
                    "key": entry.key,
                    "note": entry.note,
                    "details": json.dumps(entry.details),
                },
            )

    def list_audit(self, key: str | None = None, *, limit: int = 100) -> list[AuditEntry]:
        with self._conn() as conn:
            rows = conn.execute(Q["list_audit"], {"key": key, "limit": limit}).fetchall()
        return [
            AuditEntry(actor=r[2], action=r[3], key=r[4], note=r[5], details=r[6], at=r[1], id=r[0])
            for r in rows
        ]

    def active_job_count(self, key: str) -> int:
        with self._conn() as conn:
            row = conn.execute(Q["active_job_count"], {"key": key}).fetchone()
        return int(row[0]) if row else 0
