"""Schedule health's verbs (storage/health.py): health rows, the evaluation transaction, problems
and the alerts to deliver; the same statements' names on both databases."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from onthedot.domain.expected import PAGE
from onthedot.domain.payload import JsonObject
from onthedot.domain.watch import (
    AlertRecord,
    HealthState,
    OpenProblem,
    ProblemKind,
    ProblemRecord,
    SlotFact,
    WatchDecision,
    WatchFacts,
)
from onthedot.storage.sql import decode
from onthedot.storage.sql.base import SqlBase
from onthedot.storage.sql.dialect import Conn, Dialect, Row

# The columns of watch_rows: the health row, the ledger row, the newest slot's job.
_STATE, _LEDGER = 15, 25
_NEWEST = _STATE + _LEDGER


class SqlWatch:
    """An open evaluation: `facts` of the due schedules (their health rows locked), `apply`."""

    def __init__(self, storage: HealthVerbs, conn: Conn, raw_now: Any, facts: list[WatchFacts]):
        self._storage, self._conn, self._raw_now = storage, conn, raw_now
        self.now = storage.d.dt(raw_now)
        self.facts = facts

    def apply(self, decisions: Sequence[WatchDecision], *, alerts: bool) -> list[ProblemRecord]:
        d, conn, storage = self._storage.d, self._conn, self._storage
        shared = {"now": self._raw_now}
        done: list[ProblemRecord] = []
        opened = [(dec.key, p) for dec in decisions for p in dec.opened]
        if opened:
            rows = [
                {
                    "key": key,
                    "slot": d.slot(p.slot),
                    "kind": str(p.kind),
                    "cause": str(p.why.cause),
                    "detail": p.why.detail,
                    "facts": json.dumps(p.why.facts),
                    "resolution": p.resolution,
                }
                for key, p in opened
            ]
            done += [_problem(d, r) for r in d.batch(conn, "problem_open", rows, shared)[1]]
        resolved = [r for dec in decisions for r in dec.resolved]
        if resolved:
            rows = [{"id": r.problem.id, "resolution": r.resolution} for r in resolved]
            done += [_problem(d, r) for r in d.batch(conn, "problem_resolve", rows, shared)[1]]
        refreshed = [r for dec in decisions for r in dec.refreshed]
        if refreshed:
            rows = [
                {
                    "id": p.id,
                    "cause": str(why.cause),
                    "detail": why.detail,
                    "facts": json.dumps(why.facts),
                }
                for p, why in refreshed
            ]
            d.batch(conn, "problem_refresh", rows, shared)
        if alerts and done:
            # A problem raised here gets its alert, one resolved here its recovery (both, in
            # that order, for one found after the fact).
            rows = [{"id": p.id, "event": "problem"} for p in done if p.opened_at == self.now]
            rows += [{"id": p.id, "event": "recovered"} for p in done if not p.open]
            d.batch(conn, "alert_add", rows, shared)
        if decisions:
            states = [storage._state_row(dec.state) for dec in decisions]
            encoded = json.dumps(states, default=_instant_text)
            storage._run(conn, "health_write", {"rows": encoded, **shared})
        return done


class HealthVerbs(SqlBase):
    def set_expectations(
        self, key: str, overrides: JsonObject | None, *, actor: str, note: str | None = None
    ) -> bool:
        params = {
            "key": key,
            "overrides": None if overrides is None else json.dumps(overrides),
            "actor": actor,
            "note": note,
            "now": self.d.now(self._fixed()),
        }
        with self._write() as conn:
            return self._one(conn, "set_expectations", params) is not None

    def health_states(self, keys: Collection[str] | None = None) -> list[HealthState]:
        params = {"all": self.d.flag(keys is None), "keys": self.d.array(list(keys or ()))}
        with self._read() as conn:
            rows = self._run(conn, "health_states", params).fetchall()
        return [_state(self.d, r) for r in rows]

    def recheck_health(self, keys: Sequence[str]) -> int:
        params = {"keys": self.d.array(list(keys)), "now": self.d.now(self._fixed())}
        with self._write() as conn:
            return int(self._run(conn, "recheck_health", params).rowcount)

    @contextmanager
    def watch(self, *, limit: int) -> Iterator[SqlWatch]:
        with self._tx() as conn:
            raw_now = self._clock_in(conn)
            due = self._watch_rows(conn, "watch_due_where", {"now": raw_now, "limit": limit})
            facts = self._facts(conn, due, raw_now)
            yield SqlWatch(self, conn, raw_now, facts)

    def health_facts(self, keys: Collection[str] | None = None) -> list[WatchFacts]:
        d = self.d
        params = {"all": d.flag(keys is None), "keys": d.array(list(keys or ()))}
        with self._read() as conn:
            raw_now = self._clock_in(conn)
            rows = self._watch_rows(conn, "watch_all_where", params)
            return self._facts(conn, rows, raw_now)

    def _watch_rows(self, conn: Conn, where: str, params: dict[str, Any]) -> list[Row]:
        q = self.d.q
        sql = q["watch_rows"].format(where=q[where])
        return list(self.d.run(conn, sql, params).fetchall())

    def _clock_in(self, conn: Conn) -> Any:
        """The transaction's "now", as stored (the database clock unless fixed)."""
        row = self._one(conn, "watch_clock", {"now": self.d.now(self._fixed())})
        assert row is not None
        return row[0]

    def _facts(self, conn: Conn, rows: list[Row], raw_now: Any) -> list[WatchFacts]:
        if not rows:
            return []
        d = self.d
        keys = d.array([r[0] for r in rows])
        params = {"keys": keys, "now": raw_now, "page": PAGE}
        slots: dict[str, list[SlotFact]] = {}
        for r in self._run(conn, "watch_slots", params).fetchall():
            slots.setdefault(r[0], []).append(_slot(d, r))
        open_: dict[str, list[OpenProblem]] = {}
        for r in self._run(conn, "watch_open", {"keys": keys}).fetchall():
            open_.setdefault(r[1], []).append(
                OpenProblem(r[0], d.dt(r[2]), ProblemKind(r[3]), r[4], d.dt(r[5]))
            )
        out = []
        for r in rows:
            row = decode.ledger_row(d, r[_STATE : _STATE + _LEDGER])
            newest = None
            if row.last_slot is not None:
                newest = SlotFact(
                    slot=row.last_slot,
                    outcome=row.last_outcome or "",
                    job_id=row.last_job_id,
                    state=r[_NEWEST],
                    started_at=d.opt_dt(r[_NEWEST + 1]),
                    finished_at=d.opt_dt(r[_NEWEST + 2]),
                )
            out.append(
                WatchFacts(
                    state=_state(d, r[:_STATE]),
                    row=row,
                    slots=tuple(slots.get(r[0], ())),
                    newest=newest,
                    open=tuple(open_.get(r[0], ())),
                )
            )
        return out

    def _state_row(self, s: HealthState) -> dict[str, Any]:
        d = self.d
        return {
            "key": s.key,
            "check_at": d.instant(s.check_at),
            "watch_slot": None if s.watch_slot is None else d.slot(s.watch_slot),
            "decided_slot": None if s.decided_slot is None else d.slot(s.decided_slot),
            "fingerprint": s.fingerprint,
            "last_success_slot": (
                None if s.last_success_slot is None else d.slot(s.last_success_slot)
            ),
            "last_success_at": d.instant(s.last_success_at),
            "durations": list(s.durations),
            "expect": s.expect,
            "ping": s.ping,
        }

    def list_problems(
        self, *, key: str | None = None, open_only: bool = True, limit: int = 500
    ) -> list[ProblemRecord]:
        params = {"key": key, "open_only": self.d.flag(open_only), "limit": limit}
        with self._read() as conn:
            rows = self._run(conn, "list_problems", params).fetchall()
        return [_problem(self.d, r) for r in rows]

    def claim_alerts(self, worker_id: str, *, limit: int, hold: float) -> list[AlertRecord]:
        d = self.d
        params = {
            "worker_id": worker_id,
            "limit": limit,
            "hold": hold,
            "now": d.now(self._fixed()),
        }
        with self._tx() as conn:
            claimed = self._run(conn, "claim_alerts", params).fetchall()
            if not claimed:
                return []
            ids = d.array([r[3] for r in claimed])
            found = self._run(conn, "alert_problems", {"ids": ids}).fetchall()
        problems = {p.id: p for p in (_problem(d, r) for r in found)}
        alerts = [
            AlertRecord(r[0], r[1], r[2], problems[r[3]]) for r in claimed if r[3] in problems
        ]
        return sorted(alerts, key=lambda a: a.id)

    def finish_alert(
        self, alert_id: int, worker_id: str, *, error: str | None, retry_at: datetime | None
    ) -> bool:
        params = {
            "id": alert_id,
            "worker_id": worker_id,
            "error": error,
            "retry_at": self.d.instant(retry_at),
            "now": self.d.now(self._fixed()),
        }
        with self._write() as conn:
            return self._one(conn, "finish_alert", params) is not None

    def prune_health(self, *, older_than: datetime) -> dict[str, int]:
        params = {"before": self.d.instant(older_than)}
        with self._write() as conn:
            problems = self._run(conn, "prune_problems", params).rowcount
            alerts = self._run(conn, "prune_alerts", params).rowcount
        return {"problems": max(problems, 0), "alerts": max(alerts, 0)}

    def ping_targets(self) -> dict[str, str]:
        with self._read() as conn:
            return {r[0]: r[1] for r in self._run(conn, "ping_targets", {}).fetchall()}


def _instant_text(value: object) -> str:
    """An instant in the JSON of health_write (PostgreSQL: ISO text; SQLite sends numbers)."""
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _state(d: Dialect, r: Row) -> HealthState:
    return HealthState(
        key=r[0],
        check_at=d.opt_dt(r[1]),
        watch_slot=d.opt_dt(r[2]),
        decided_slot=d.opt_dt(r[3]),
        fingerprint=r[4],
        last_success_slot=d.opt_dt(r[5]),
        last_success_at=d.opt_dt(r[6]),
        durations=tuple(float(x) for x in d.json_in(r[7]) or ()),
        expect=d.json_in(r[8]),
        ping=r[9],
        overrides=d.json_in(r[10]),
        overrides_by=r[11],
        overrides_at=d.opt_dt(r[12]),
        overrides_note=r[13],
        checked_at=d.opt_dt(r[14]),
    )


def _slot(d: Dialect, r: Row) -> SlotFact:
    return SlotFact(
        slot=d.dt(r[1]),
        outcome=r[2],
        recorded_at=d.opt_dt(r[3]),
        actor=r[4],
        note=r[5],
        job_id=r[6],
        state=r[7],
        name=r[8],
        queue=r[9],
        run_at=d.opt_dt(r[10]),
        attempts=r[11] or 0,
        max_attempts=r[12] or 0,
        started_at=d.opt_dt(r[13]),
        finished_at=d.opt_dt(r[14]),
        error=r[15],
        worker_id=r[16],
        lock_key=r[17],
    )


def _problem(d: Dialect, r: Row) -> ProblemRecord:
    return ProblemRecord(
        id=r[0],
        key=r[1],
        slot=d.dt(r[2]),
        kind=ProblemKind(r[3]),
        cause=r[4],
        detail=r[5],
        facts=d.json_in(r[6]),
        opened_at=d.dt(r[7]),
        resolved_at=d.opt_dt(r[8]),
        resolution=r[9],
    )
