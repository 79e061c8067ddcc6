"""The flow-control verbs (docs/limits.md): the claim of limited jobs, the limits' settings,
their load. The claim is one transaction: the home keys with room (least recently started
first), a few due jobs of each (locked), every limit key of those locked in key order, the
running jobs counted after the locks, then round-robin picks (domain/limits.Picker), the
update of the picked jobs and of the keys' token buckets. PostgreSQL gathers in one function
call (`limit_gather`, migration 0010) and applies in one statement (`limit_apply`); SQLite,
in-process, runs the same steps as statements inside its write transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from onthedot.domain.jobs import ClaimedJob
from onthedot.domain.limits import (
    KeyLoad,
    KeyState,
    LimitedClaim,
    LimitRow,
    LimitSetting,
    Picker,
)
from onthedot.storage.sql import decode
from onthedot.storage.sql.base import SqlBase
from onthedot.storage.sql.dialect import Conn


class LimitVerbs(SqlBase):
    def claim_limited(
        self,
        worker_id: str,
        queue: str,
        limit: int,
        lease: float,
        *,
        shared: bool = False,
        names: Sequence[str] | None = None,
    ) -> LimitedClaim:
        try:
            return self._claim_limited(worker_id, queue, limit, lease, shared, names)
        except self.d.unique_violation:
            return (
                LimitedClaim()
            )  # two claims raced for a schedule's lock key (overlap "serialize")

    def _claim_limited(
        self,
        worker_id: str,
        queue: str,
        limit: int,
        lease: float,
        shared: bool,
        names: Sequence[str] | None,
    ) -> LimitedClaim:
        now = self.d.now(self._fixed())
        with self._tx() as conn:
            gathered = self._gather(conn, queue, now, limit, names)
            if gathered is None:
                return LimitedClaim()
            picks, states = gathered
            picker = Picker(states)
            ids = picker.pick(picks, limit)
            if not ids:
                return LimitedClaim((), picker.held)
            rows = self._apply(conn, worker_id, lease, now, shared, ids, picker)
        jobs: list[ClaimedJob] = decode.claimed(self.d, rows)
        return LimitedClaim(jobs, picker.held, picker.saturated())

    def _gather(
        self, conn: Conn, queue: str, now: Any, limit: int, names: Sequence[str] | None
    ) -> tuple[list[list[tuple[int, list[str]]]], dict[str, KeyState]] | None:
        """The candidate jobs by home key (in round-robin order) and the state of every key
        they sit under, read under the keys' locks; None: nothing to claim."""
        flt = {"any_name": self.d.flag(names is None), "names": self.d.array(list(names or ()))}
        base = {"queue": queue, "now": now, "limit": limit}
        if "limit_gather" in self.d.q:  # PostgreSQL: one function call (migration 0010)
            row = self._one(conn, "limit_gather", {**base, **flt})
            data = None if row is None else row[0]
            if not data:
                return None
            by_home: dict[int, list[tuple[int, list[str]]]] = {}
            for order, job_id, keys in data["jobs"]:
                found = keys if isinstance(keys, list) else json.loads(keys)  # 0011: a list
                by_home.setdefault(int(order), []).append((int(job_id), list(found)))
            states = {r[0]: KeyState(r[0], bool(r[1]), r[2], int(r[4]), r[3]) for r in data["keys"]}
            return [by_home[o] for o in sorted(by_home)], states
        homes = [r[0] for r in self._run(conn, "limit_candidates", base).fetchall()]
        if not homes:
            return None
        picks: list[list[tuple[int, list[str]]]] = []
        for home in homes:
            rows = self._run(conn, "limit_jobs", {**base, **flt, "lkey": home}).fetchall()
            picks.append([(int(r[0]), list(json.loads(r[1]))) for r in rows])
        lkeys = sorted({k for jobs in picks for _, keys in jobs for k in keys})
        if not lkeys:
            return None
        return picks, self._states(conn, lkeys, now, lock=True)

    def _apply(
        self,
        conn: Conn,
        worker_id: str,
        lease: float,
        now: Any,
        shared: bool,
        ids: list[int],
        picker: Picker,
    ) -> list[Any]:
        """Claim the picked jobs and write the keys' buckets (their last start, tokens)."""
        params = {
            "worker_id": worker_id,
            "lease": lease,
            "now": now,
            "charge": self.d.flag(not shared),
            "ids": self.d.array(ids),
        }
        taken = sorted(picker.taken)
        if "limit_apply" in self.d.q:  # PostgreSQL: one statement
            params["tkeys"] = self.d.array(taken)
            params["tokens"] = self.d.array([picker.tokens[k] for k in taken])
            # Never prepared: a generic plan made while the table looked empty would scan it.
            return list(self._run(conn, "limit_apply", params, prepare=False).fetchall())
        rows = list(self._run(conn, "limit_claim", params).fetchall())
        for lkey in taken:
            self._run(conn, "limit_take", {"lkey": lkey, "tokens": picker.tokens[lkey], "now": now})
        return rows

    def _states(self, conn: Conn, lkeys: list[str], now: Any, *, lock: bool) -> dict[str, KeyState]:
        arr = self.d.array(lkeys)
        if lock:  # first, so that no claim makes a key's row while it holds another's lock
            self._run(conn, "limit_ensure", {"lkeys": arr})
        sql = self.d.q["limit_state"]
        if lock:
            sql = f"{sql}\n{self.d.q['limit_row_lock']}"
        found = self.d.run(conn, sql, {"lkeys": arr, "now": now}).fetchall()
        running = self._counts(conn, "limit_running", lkeys)
        return {
            r[0]: KeyState(
                r[0], bool(r[1]), r[2], running.get(r[0], 0), None if r[3] is None else r[3]
            )
            for r in found
        }

    def _counts(self, conn: Conn, statement: str, lkeys: Iterable[str] | None) -> dict[str, int]:
        params = {
            "every": self.d.flag(lkeys is None),
            "lkeys": self.d.array(sorted(lkeys or ())),
        }
        return {r[0]: int(r[1]) for r in self._run(conn, statement, params).fetchall()}

    def sync_limits(self, settings: Sequence[LimitSetting]) -> None:
        if not settings:
            return
        now = self.d.now(self._fixed())
        with self._tx() as conn:
            for s in sorted(settings, key=lambda s: s.name):
                params = {
                    "name": s.name,
                    "concurrency": s.concurrency,
                    "rate": s.rate,
                    "burst": s.burst,
                    "now": now,
                }
                self._run(conn, "limit_sync", params)

    def set_limit(self, setting: LimitSetting) -> bool:
        params = {
            "name": setting.name,
            "concurrency": setting.concurrency,
            "rate": setting.rate,
            "burst": setting.burst,
            "now": self.d.now(self._fixed()),
        }
        with self._tx() as conn:
            return self._run(conn, "limit_set", params).fetchone() is not None

    def reset_limit(self, name: str) -> bool:
        params = {"name": name, "now": self.d.now(self._fixed())}
        with self._tx() as conn:
            return self._run(conn, "limit_reset", params).fetchone() is not None

    def list_limits(self) -> list[LimitRow]:
        with self._read() as conn:
            rows = self._run(conn, "limit_rows", {}).fetchall()
        return [
            LimitRow(
                LimitSetting(r[0], r[1], r[2], r[3]),
                LimitSetting(r[0], r[4], r[5], r[6]),
                bool(r[7]),
            )
            for r in rows
        ]

    def limit_loads(self, lkeys: Sequence[str] | None = None) -> list[KeyLoad]:
        now = self.d.now(self._fixed())
        with self._read() as conn:
            running = self._counts(conn, "limit_running", lkeys)
            waiting = self._counts(conn, "limit_waiting", lkeys)
            keys = sorted(set(running) | set(waiting) | set(lkeys or ()))
            rows = self._run(conn, "limit_state", {"lkeys": self.d.array(keys), "now": now})
            tokens = {r[0]: r[3] for r in rows.fetchall()}
        return [KeyLoad(k, running.get(k, 0), waiting.get(k, 0), tokens.get(k)) for k in keys]

    def job_limits(self, job_id: int) -> tuple[str, str, str, float, list[str]] | None:
        with self._read() as conn:
            row = self._one(conn, "limit_job", {"id": job_id, "now": self.d.now(self._fixed())})
        if row is None:
            return None
        return row[0], row[1], row[2], float(row[3]), json.loads(row[4]) if row[4] else []
