"""Worker rows, lease rescue, pruning and maintenance turns."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

from onthedot.domain.jobs import iso
from onthedot.domain.rescue import WORKER_LOST, Lease, decide_rescue
from onthedot.domain.retention import PruneRule
from onthedot.storage.interface import RescuedJob, WorkerInfo, WorkerRow
from onthedot.storage.sql import decode
from onthedot.storage.sql.base import SqlBase

# Rows per pruning transaction: a batch takes tens of milliseconds on a big table (measured in
# docs/scaling.md, "Large tables"), so no transaction of the prune is long.
PRUNE_BATCH = 5000


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive int (rows per batch), got {limit!r}")


class WorkerVerbs(SqlBase):
    def register_worker(self, worker: WorkerInfo) -> None:
        with self._write() as conn:
            self._run(
                conn,
                "register_worker",
                {
                    "id": worker.id,
                    "hostname": worker.hostname,
                    "pid": worker.pid,
                    "generation": worker.generation,
                    "queues": ",".join(worker.queues),
                    "concurrency": worker.concurrency,
                    "scheduler": self.d.flag(worker.scheduler),
                    "jobs": json.dumps(sorted(worker.jobs)),
                    "now": self.d.now(self._fixed()),
                },
            )

    def deregister_worker(self, worker_id: str, *, stopping: bool = False) -> None:
        name = "set_worker_stopping" if stopping else "deregister_worker"
        with self._write() as conn:
            self._run(conn, name, {"worker_id": worker_id})

    def list_workers(self) -> list[WorkerRow]:
        with self._read() as conn:
            rows = self._run(conn, "list_workers", {"now": self.d.now(self._fixed())})
            return [decode.worker(self.d, r) for r in rows.fetchall()]

    def ending_leases(self, within: float, *, limit: int = 10000) -> list[Lease]:
        params = {"now": self.d.now(self._fixed()), "within": within, "limit": limit}
        with self._read() as conn:
            rows = self._run(conn, "ending_leases", params).fetchall()
        return [Lease(r[0], self.d.dt(r[1])) for r in rows]

    def rescue_jobs(
        self, *, limit: int = 1000, only: Collection[Lease] | None = None
    ) -> list[RescuedJob]:
        ts = self.d.now(self._fixed())
        ids = None if only is None else [lease.job_id for lease in only]
        params = {
            "now": ts,
            "limit": limit,
            "any_id": self.d.flag(ids is None),
            "ids": self.d.array(ids or []),
        }
        with self._tx() as conn:
            expired = self._run(conn, "expired_jobs", params).fetchall()
            if only is not None:  # not renewed since it was read, or not rescued now
                until = {lease.job_id: lease.until for lease in only}
                expired = [r for r in expired if until.get(r[0]) == self.d.dt(r[7])]
            if not expired:
                return []
            # The policy is the domain's; the statement only applies it.
            decided = []
            for r in expired:
                rescue = decide_rescue(r[2], r[3], r[5], bool(r[6]))
                decided.append(
                    {
                        "id": r[0],
                        "state": str(rescue.state),
                        "lost": rescue.lost,
                        "solo": self.d.flag(rescue.solo),
                    }
                )
            now_iso = None if ts is None else iso(self.d.dt(ts))
            shared = {"now": ts, "now_iso": now_iso, "error": WORKER_LOST}
            _, rows = self.d.batch(conn, "rescue_job", decided, shared)
            self._notify(conn, sorted({r[4] for r in rows if r[3]}))
        by_id = {r[0]: r for r in rows}
        return [
            RescuedJob(r[0], r[1], r[2], bool(r[3]), r[4])
            for r in (by_id[e[0]] for e in expired if e[0] in by_id)
        ]

    def prune(
        self,
        *,
        older_than: datetime,
        workers_older_than: datetime,
        audit_older_than: datetime | None = None,
    ) -> dict[str, int]:
        before = self.d.instant(older_than)
        counts = {"jobs": 0}
        while True:
            n = self.prune_jobs(older_than=older_than, limit=PRUNE_BATCH)
            counts["jobs"] += n
            if n < PRUNE_BATCH:
                break
        params = {"before": before, "limit": PRUNE_BATCH}
        counts["slots"] = self._batches("prune_slots", params)
        counts["slots"] += self._batches("prune_orphan_slots", params)
        with self._tx() as conn:
            counts["schedules"] = self._run(conn, "prune_ledger", {"before": before}).rowcount
            counts["workers"] = self._run(
                conn, "prune_workers", {"before": self.d.instant(workers_older_than)}
            ).rowcount
            # The chart's minutes: kept two days (its day and a margin), longer with the jobs.
            minutes = min(older_than, workers_older_than - timedelta(days=2))
            self._run(conn, "prune_minutes", {"before": self.d.instant(minutes)})
        if audit_older_than is not None:
            audit_before = {"before": self.d.instant(audit_older_than), "limit": PRUNE_BATCH}
            counts["audit"] = self._batches("prune_audit", audit_before)
        self._compact_counts()
        return counts

    def _batches(self, name: str, params: dict[str, object]) -> int:
        """Run a bounded delete until a batch deletes fewer than its limit: each batch is a
        short transaction of its own. How many rows in all."""
        total = 0
        while True:
            with self._write() as conn:
                n = int(self._run(conn, name, params).rowcount)
            total += n
            if n < PRUNE_BATCH:
                return total

    def prune_jobs(self, *, older_than: datetime, limit: int) -> int:
        _check_limit(limit)
        total = 0
        for name, state in self.finished_groups():
            rule = PruneRule(name, state, older_than)
            total += self.prune_finished(rule, limit=limit - total)
            if total >= limit:
                break
        return total

    def finished_groups(self) -> list[tuple[str, str]]:
        with self._read() as conn:
            return [(r[0], r[1]) for r in self._run(conn, "finished_groups", {}).fetchall()]

    def prune_finished(self, rule: PruneRule, *, limit: int) -> int:
        _check_limit(limit)
        params = {**self._rule(rule), "limit": limit}
        with self._write() as conn:
            return int(self._run(conn, "prune_finished", params).rowcount)

    def count_finished(self, rule: PruneRule) -> int:
        with self._read() as conn:
            row = self._one(conn, "count_finished", self._rule(rule))
        return 0 if row is None else int(row[0])

    def _rule(self, rule: PruneRule) -> dict[str, object]:
        return {"name": rule.name, "state": rule.state, "before": self.d.instant(rule.before)}

    def acquire_maintenance(self, task: str, every: float, worker_id: str) -> bool:
        params = {
            "task": task,
            "every": every,
            "worker_id": worker_id,
            "now": self.d.now(self._fixed()),
        }
        with self._write() as conn:
            return self._one(conn, "acquire_maintenance", params) is not None

    def seconds_until_ready(self, queues: Sequence[str]) -> float | None:
        params = {"queues": self.d.array(list(queues)), "now": self.d.now(self._fixed())}
        with self._read() as conn:  # planned afresh each time, as the solo claim (sql/jobs.py)
            row = self._run(conn, "seconds_until_ready", params, prepare=False).fetchone()
        return None if row is None or row[0] is None else float(row[0])
