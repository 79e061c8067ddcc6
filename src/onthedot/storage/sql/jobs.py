"""The job verbs a worker and an enqueuer use: enqueue, claim, finish, release, heartbeat."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from onthedot.domain.jobs import ClaimedJob, NewJob, Outcome, OutcomeKind, iso
from onthedot.storage.interface import CallerConnection, Renewal
from onthedot.storage.sql import decode
from onthedot.storage.sql.base import SqlBase
from onthedot.storage.sql.dialect import Row

OUTCOME_STATE = {
    OutcomeKind.SUCCEEDED: "succeeded",
    OutcomeKind.RETRY: "queued",
    OutcomeKind.FAILED: "failed",
    OutcomeKind.CANCELLED: "cancelled",
}
_SUCCESS = OutcomeKind.SUCCEEDED


class JobVerbs(SqlBase):
    def enqueue(
        self, jobs: Sequence[NewJob], *, connection: CallerConnection | None = None
    ) -> list[int]:
        fixed = self._fixed()
        if connection is not None:
            return self._enqueue_in(connection, jobs, fixed)
        if not jobs:
            return []
        if len(jobs) == 1:
            with self._write() as conn:
                return [self._insert_job(conn, jobs[0], fixed)]
        with self._tx() as conn:
            if any(j.unique_key or j.limits for j in jobs):  # row by row
                return [self._insert_job(conn, job, fixed) for job in jobs]
            return self._insert_many(conn, jobs, fixed)

    async def aenqueue(self, jobs: Sequence[NewJob], *, connection: CallerConnection) -> list[int]:
        return await self._aenqueue_in(connection, jobs, self._fixed())

    def claim_jobs(
        self,
        worker_id: str,
        queue: str,
        limit: int,
        lease: float,
        *,
        shared: bool = False,
        names: Sequence[str] | None = None,
    ) -> list[ClaimedJob]:
        params = {
            **self._names(names),
            "worker_id": worker_id,
            "queue": queue,
            "limit": limit,
            "lease": lease,
            "now": self.d.now(self._fixed()),
            "shared": self.d.flag(shared),
            "charge": self.d.flag(not shared),
        }
        return self._claim("claim_jobs", params, prepare=None)

    def claim_alone(
        self, worker_id: str, queue: str, lease: float, *, names: Sequence[str] | None = None
    ) -> ClaimedJob | None:
        params = {
            **self._names(names),
            "worker_id": worker_id,
            "queue": queue,
            "lease": lease,
            "now": self.d.now(self._fixed()),
        }
        jobs = self._claim("claim_alone", params, prepare=False)
        return jobs[0] if jobs else None

    def _names(self, names: Sequence[str] | None) -> dict[str, Any]:
        return {
            "any_name": self.d.flag(names is None),
            "names": self.d.array(list(names or ())),
        }

    def _claim(
        self, statement: str, params: dict[str, Any], *, prepare: bool | None
    ) -> list[ClaimedJob]:
        # `prepare`: the claim of jobs is a function on PostgreSQL (migration 0007) whose own
        # plan is made to be right whatever the statistics, so its call may be prepared (None,
        # psycopg's default). The solo claim, made at most once a second, is never prepared
        # (False): PostgreSQL would keep, after five runs, a generic plan made with the
        # statistics of that moment, and made while the jobs table looked empty (a new
        # install, a pruned table) that plan seq-scans the table on every claim: 141 ms a
        # claim over 200k finished jobs until the next ANALYZE.
        rows: list[Row] = []
        for attempt in range(3):
            try:
                with self._write() as conn:
                    rows = self._run(conn, statement, params, prepare=prepare).fetchall()
                break
            except self.d.unique_violation:
                # Two workers raced for the same lock key; the index kept it to one. Try again.
                if attempt == 2:
                    return []
        return decode.claimed(self.d, rows)

    def finish_jobs(self, worker_id: str, outcomes: Sequence[Outcome]) -> int:
        if not outcomes:
            return 0
        fixed = self._fixed()
        ts = self.d.now(fixed)
        shared = {"worker_id": worker_id, "now": ts, "now_iso": self._now_iso(ts)}
        plain = [
            {"id": o.job_id, "attempt": o.attempt}
            for o in outcomes
            if o.kind is _SUCCESS and o.result is None
        ]
        rest = [
            {
                "id": o.job_id,
                "state": OUTCOME_STATE[o.kind],
                "delay": float(o.retry_in or 0.0),
                "result": None if o.result is None else json.dumps(o.result),
                "error": o.error,
                "tb": o.traceback,
                "attempt": o.attempt,
            }
            for o in outcomes
            if not (o.kind is _SUCCESS and o.result is None)
        ]
        changed = 0
        with self._write() as conn:
            if plain:
                changed += self.d.batch(conn, "finish_succeeded", plain, shared)[0]
            if rest:
                changed += self.d.batch(conn, "finish_outcome", rest, shared)[0]
        return changed

    def _now_iso(self, ts: Any) -> str | None:
        """ "now" as text, for JSON built in SQL where the database cannot format instants."""
        return None if ts is None else iso(self.d.dt(ts))

    def release_jobs(self, worker_id: str, job_ids: Sequence[int]) -> int:
        if not job_ids:
            return 0
        with self._tx() as conn:
            rows = [{"id": i} for i in job_ids]
            changed, released = self.d.batch(conn, "release_job", rows, {"worker_id": worker_id})
            self._notify(conn, sorted({r[0] for r in released}))
            return changed

    def heartbeat(
        self,
        worker_id: str,
        lease: float,
        *,
        held: Collection[int] | None = None,
        started: Collection[int] = (),
    ) -> Renewal:
        params: dict[str, object] = {
            "worker_id": worker_id,
            "lease": lease,
            "now": self.d.now(self._fixed()),
        }
        with self._tx() as conn:
            self._run(conn, "heartbeat_worker", params)
            if held is None:
                rows = self._run(conn, "extend_leases", params).fetchall()
            elif held:
                params["ids"] = self.d.array(list(held))
                params["started"] = self.d.array(list(started))
                rows = self._run(conn, "extend_held_leases", params).fetchall()
            else:
                rows = []
        return Renewal(frozenset(r[0] for r in rows), frozenset(r[0] for r in rows if r[1]))
