"""The scheduler's transactions: the declared-schedule sync and the tick. The scheduler opens
them, reads, decides and applies; the storage never calls back up."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from onthedot.domain.ledger import DueRow, LedgerRow, SyncReport, TickPlan
from onthedot.storage.interface import TickResult
from onthedot.storage.sql import decode
from onthedot.storage.sql.base import SqlBase
from onthedot.storage.sql.dialect import IDLE_LIMIT, SYNC_IDLE_PER_ROW, Conn, Row


class SqlSync:
    """An open sync transaction: `rows` to plan from (empty when fenced), `apply` the plan."""

    def __init__(
        self,
        storage: SqlBase,
        conn: Conn,
        raw_now: Any,
        fenced: bool,
        rows: list[LedgerRow],
        generation: int,
    ) -> None:
        self._storage, self._conn, self._raw_now = storage, conn, raw_now
        self._generation = generation
        self.now = storage.d.dt(raw_now)
        self.fenced = fenced
        self.rows = rows

    def apply(self, report: SyncReport, *, cancel_jobs_of: Sequence[str] = ()) -> dict[str, int]:
        """Write the plan's inserts, restarts and removals (nothing when fenced); first cancel
        the queued jobs of the removed keys in `cancel_jobs_of`. Returns how many per key."""
        if self.fenced:
            return {}
        d, conn = self._storage.d, self._conn
        cancelled: dict[str, int] = {}
        if cancel_jobs_of:
            keys = [{"key": k} for k in cancel_jobs_of]
            for (key,) in d.batch(conn, "cancel_removed_jobs", keys, {"now": self._raw_now})[1]:
                cancelled[key] = cancelled.get(key, 0) + 1
        shared = {"generation": self._generation, "now": self._raw_now}
        if report.inserts:
            d.batch(conn, "ledger_insert", [self._timing(r) for r in report.inserts], shared)
        if report.restarts:
            d.batch(conn, "ledger_restart", [self._timing(r) for r in report.restarts], shared)
        if report.removals:
            d.batch(conn, "ledger_remove", [{"key": k} for k in report.removals], shared)
        return cancelled

    def _timing(self, row: LedgerRow) -> dict[str, object]:
        d = self._storage.d
        return {
            "key": row.key,
            "fingerprint": row.fingerprint,
            "spec": row.spec,
            "timezone": row.timezone,
            "cursor": d.instant(row.cursor),
            "next_due_at": d.instant(row.next_due_at),
            "reason": row.repaired_reason,
        }


class SqlTick:
    """An open tick: `done` is set when there is nothing to decide (idle, fenced, nothing
    due); otherwise `due_rows()` are the locked due rows and `apply(plans)` writes the plans."""

    def __init__(
        self,
        storage: SqlBase,
        now: datetime,
        *,
        done: TickResult | None = None,
        conn: Conn = None,
        raw_now: Any = None,
        raw: list[Row] | None = None,
        generation: int = 0,
    ) -> None:
        self._storage, self._conn, self._raw_now = storage, conn, raw_now
        self._raw = raw or []
        self._generation = generation
        self.now = now
        self.done = done

    def due_rows(self) -> Iterable[DueRow]:
        """The due rows, decoded one at a time as the decider reads them."""
        return self._storage._due_rows(self._raw)

    def apply(self, plans: Sequence[TickPlan]) -> TickResult:
        """Write slot history rows, their jobs and the new ledger state of every plan."""
        if self.done is not None:
            return self.done
        plans = list(plans)
        recorded, conflicts = self._storage._write_tick(
            self._conn, plans, self._generation, self._raw_now
        )
        return TickResult(
            now=self.now, rows=len(self._raw), recorded=recorded, conflicts=conflicts, plans=plans
        )


class LedgerVerbs(SqlBase):
    def code_generation(self, code_hash: str) -> int:
        with self._tx() as conn:
            self._run(conn, "add_generation", {"hash": code_hash, "now": self.d.now(None)})
            row = self._one(conn, "generation_of", {"hash": code_hash})
        assert row is not None
        return int(row[0])

    @contextmanager
    def sync_declared(
        self,
        *,
        generation: int,
        fence_ttl: float,
        keys: Sequence[str] = (),
    ) -> Iterator[SqlSync]:
        params = {"now": self.d.now(self._fixed()), "generation": generation, "ttl": fence_ttl}
        with self._tx() as conn:
            # Planning every declared schedule takes time inside the transaction (0.3 ms per
            # schedule on a loaded 2-core machine, 100,000 at first sight): allowed for.
            self.d.allow_idle(conn, IDLE_LIMIT + SYNC_IDLE_PER_ROW * len(keys))
            raw_now, fenced = self._run(conn, "clock_and_fence", params).fetchone()
            rows: list[LedgerRow] = []
            if not fenced:
                found = self._run(conn, "sync_rows", {"keys": self.d.array(list(keys))})
                rows = [decode.ledger_row(self.d, r) for r in found.fetchall()]
            yield SqlSync(self, conn, raw_now, bool(fenced), rows, generation)

    @contextmanager
    def tick(
        self,
        *,
        generation: int,
        fence_ttl: float,
        limit: int,
        skip_keys: Sequence[str] = (),
        expect_due: bool = False,
    ) -> Iterator[SqlTick]:
        d = self.d
        params = {"now": d.now(self._fixed()), "generation": generation, "ttl": fence_ttl}
        if not expect_due:
            # The idle tick: one read of the clock, the fence and the earliest due instant, no
            # transaction (an idle tick never blocks writers).
            with self._read() as conn:
                raw_now, fenced, next_due, watch_at = self._run(
                    conn, "tick_probe", params, prepare=True
                ).fetchone()
            if fenced or next_due is None or next_due > raw_now:
                idle = TickResult(
                    now=d.dt(raw_now),
                    rows=0,
                    fenced=bool(fenced),
                    idle=True,
                    next_due_at=d.opt_dt(next_due),
                    watch_at=d.opt_dt(watch_at),
                )
                yield SqlTick(self, idle.now, done=idle)
                return
        with self._tx() as conn:
            # The fence is part of the claiming transaction (the probe was only a hint).
            raw_now, fenced = self._run(conn, "clock_and_fence", params, prepare=True).fetchone()
            now_dt = d.dt(raw_now)
            if fenced:
                yield SqlTick(self, now_dt, done=TickResult(now=now_dt, rows=0, fenced=True))
                return
            due = {"now": raw_now, "limit": limit, "skip_keys": d.array(list(skip_keys))}
            raw = self._run(conn, "tick_due", due, prepare=True).fetchall()
            if not raw:
                yield SqlTick(self, now_dt, done=TickResult(now=now_dt, rows=0))
                return
            yield SqlTick(self, now_dt, conn=conn, raw_now=raw_now, raw=raw, generation=generation)

    def count_live_code_rows(self, keys: Sequence[str]) -> int:
        with self._read() as conn:
            row = self._one(conn, "count_live_code_rows", {"keys": self.d.array(list(keys))})
        return int(row[0]) if row else 0

    def list_schedule_rows(self, keys: Collection[str] | None = None) -> list[LedgerRow]:
        with self._read() as conn:
            if keys is None:
                rows = self._run(conn, "list_schedule_rows", {}).fetchall()
            else:
                found = self._run(conn, "schedule_rows_of", {"keys": self.d.array(list(keys))})
                rows = found.fetchall()
        return [decode.ledger_row(self.d, r) for r in rows]
