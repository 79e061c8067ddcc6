"""Reading jobs and queues, and the operator's job actions."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from onthedot.domain.errors import InvalidJobState, JobNotFound
from onthedot.domain.jobs import Job, JobAction, JobCount, JobFilter, JobState, QueueStats
from onthedot.storage.sql import decode
from onthedot.storage.sql.base import SqlBase
from onthedot.storage.sql.dialect import Conn

_BULK = {
    JobAction.RETRY: "bulk_retry",
    JobAction.CANCEL: "bulk_cancel",
    JobAction.DELETE: "bulk_delete",
}
SCAN_LIMIT = 10  # a search is counted exactly in tables up to this many times the cap
LIST_PAIRS = 64  # (queue, state) ranges a page merges at most; beyond, the id order is walked
_ID_MIN, _ID_MAX = -(2**63), 2**63 - 1  # what a job id column holds on both databases


def _id(job_id: int) -> int:
    """A job id as a query parameter: one beyond any column matches no job (0), the same on
    both databases (SQLite would raise OverflowError, PostgreSQL compare as numeric)."""
    return job_id if _ID_MIN <= job_id <= _ID_MAX else 0


class ReadVerbs(SqlBase):
    def _filtered(
        self, name: str, flt: JobFilter, *, keyset: bool
    ) -> tuple[str, dict[str, object]]:
        """The named statement with the filter's conditions in place of `{filter}`."""
        p = self.d.param
        clauses: list[str] = []
        params: dict[str, object] = {}
        for column, value in (
            ("state", None if flt.state is None else str(flt.state)),
            ("queue", flt.queue),
            ("name", flt.name),
            ("schedule_key", flt.schedule_key),
        ):
            if value:
                clauses.append(f"{column} = {p(column)}")
                params[column] = value
        if flt.states:
            names = [f"state_{i}" for i in range(len(flt.states))]
            clauses.append(f"state IN ({', '.join(p(n) for n in names)})")
            params.update(zip(names, (str(s) for s in flt.states), strict=True))
        if flt.search:
            # Arguments are searched as JSON text: also look for the term as JSON spells it
            # inside a string (quotes and backslashes escaped, non-ASCII as \uXXXX on SQLite).
            clauses.append(self.d.q["job_search"])
            params["search"] = flt.search
            params["search_json"] = json.dumps(flt.search, ensure_ascii=self.d.search_ascii)[1:-1]
        if keyset and flt.before_id is not None:
            clauses.append(f"id < {p('before_id')}")
            params["before_id"] = min(max(flt.before_id, _ID_MIN), _ID_MAX)
        where = " AND ".join(clauses) if clauses else "1 = 1"
        return self.d.q[name].replace("{filter}", where), params

    def get_job(self, job_id: int) -> Job | None:
        with self._read() as conn:
            row = self._one(conn, "get_job", {"id": _id(job_id)})
        return decode.job(self.d, row) if row else None

    def list_jobs(self, flt: JobFilter) -> list[Job]:
        with self._read() as conn:
            sql, params = self._listing(conn, flt)
            params["limit"] = flt.limit
            rows = self.d.run(conn, sql, params).fetchall()
        return [decode.job(self.d, r) for r in rows]

    def count_jobs(self, flt: JobFilter) -> int:
        sql, params = self._filtered("count_jobs", flt, keyset=False)
        with self._read() as conn:
            return int(self.d.run(conn, sql, params).fetchone()[0])

    def _listing(self, conn: Conn, flt: JobFilter) -> tuple[str, dict[str, object]]:
        """The page's statement. A filter of a queue or of states (not of a schedule, which
        has its own index) is read one (queue, state) at a time, each an id-ordered range of
        `onthedot_jobs_list (queue, state, id)` that ends after one page, merged by id: a page
        reads about a page of rows per pair, however much history came before it (migration
        0009). The pairs: the filter's, or, for the queues it leaves open, the queues the
        counts kept with the jobs have in those states (at most LIST_PAIRS pairs)."""
        states = [flt.state] if flt.state is not None else list(flt.states)
        if flt.schedule_key or not (flt.queue or states):
            return self._filtered("list_jobs", flt, keyset=True)
        names = [str(s) for s in states or JobState]
        if flt.queue:
            pairs = [(flt.queue, s) for s in names]
        else:
            found = self._run(conn, "kept_queues", {"states": self.d.array(names)}).fetchall()
            pairs = [(r[0], r[1]) for r in found]
        if not pairs or len(pairs) > LIST_PAIRS:
            return self._filtered("list_jobs", flt, keyset=True)
        p = self.d.param
        single = replace(flt, queue=pairs[0][0], state=JobState(pairs[0][1]), states=())
        one, params = self._filtered("list_job_ids", single, keyset=True)
        parts = []
        for i, (queue, state) in enumerate(pairs):
            part = one.replace(f"state = {p('state')}", f"state = {p(f'list_state_{i}')}", 1)
            part = part.replace(f"queue = {p('queue')}", f"queue = {p(f'list_queue_{i}')}", 1)
            parts.append(f"SELECT * FROM ({part}) AS part_{i}")
            params[f"list_state_{i}"] = state
            params[f"list_queue_{i}"] = queue
        del params["state"], params["queue"]
        return self.d.q["list_jobs_by_ids"].replace("{ids}", " UNION ALL ".join(parts)), params

    def tally_jobs(self, flt: JobFilter, *, cap: int = 10_000) -> JobCount:
        if not (flt.search or flt.schedule_key):  # the counts kept with the jobs, exact
            sql, params = self._filtered("kept_count", flt, keyset=False)
            with self._read() as conn:
                return JobCount(int(self.d.run(conn, sql, params).fetchone()[0]))
        with self._read() as conn:
            if flt.search and self._big(conn, cap):
                # A text search reads every row to count: on a big table, estimated.
                estimate = self.d.estimate(conn, *self._filtered("all_rows", flt, keyset=False))
                if estimate is not None:
                    return JobCount(estimate, exact=False)
            sql, params = self._filtered("capped_count", flt, keyset=False)
            params["cap"] = cap + 1
            n = int(self.d.run(conn, sql, params).fetchone()[0])
            if n <= cap:
                return JobCount(n)
            estimate = self.d.estimate(conn, *self._filtered("all_rows", flt, keyset=False))
        if estimate is None:  # SQLite: no estimate; one machine's table, counted
            return JobCount(self.count_jobs(flt))
        return JobCount(max(n, estimate), exact=False)

    def _big(self, conn: Conn, cap: int) -> bool:
        """Whether the jobs table holds more than SCAN_LIMIT times `cap` rows, as far as the
        planner knows (never, where there is no planner)."""
        rows = self.d.estimate(conn, *self._filtered("all_rows", JobFilter(), keyset=False))
        return rows is not None and rows > SCAN_LIMIT * cap

    def queue_stats(self) -> list[QueueStats]:
        with self._read() as conn:
            params = {"now": self.d.now(self._fixed())}
            rows = self._run(conn, "queue_stats", params, prepare=True)
            rows = rows.fetchall()
            paused = {r[0] for r in self._run(conn, "paused_queues", {}, prepare=True)}
        self._compact_beyond(sum(int(r[8]) for r in rows))
        stats = [
            QueueStats(
                r[0],
                int(r[1]),
                int(r[2]),
                int(r[3]),
                int(r[4]),
                int(r[5]),
                int(r[6]),
                None if r[7] is None else float(r[7]),
                paused=r[0] in paused,
            )
            for r in rows
            if any(r[1:6])  # a queue whose jobs are all gone is not listed
        ]
        known = {s.queue for s in stats}
        stats += [QueueStats(q, 0, 0, 0, 0, 0, 0, None, paused=True) for q in paused - known]
        return sorted(stats, key=lambda s: s.queue)

    def _job_state(self, conn: Conn, job_id: int) -> str:
        row = self._one(conn, "job_state", {"id": _id(job_id)})
        if row is None:
            raise JobNotFound(f"no job with id {job_id}")
        return str(row[0])

    def _reread(self, job_id: int) -> Job:
        job = self.get_job(job_id)
        assert job is not None
        return job

    def job_action(self, action: JobAction, job_id: int) -> Job | None:
        if action == JobAction.RETRY:
            return self._retry(job_id)
        if action == JobAction.CANCEL:
            return self._cancel(job_id)
        if action == JobAction.DELETE:
            self._delete(job_id)
            return None
        raise ValueError(f"unknown job action {action!r}: use retry, cancel or delete")

    def _retry(self, job_id: int) -> Job:
        try:
            with self._tx() as conn:
                params = {"id": _id(job_id), "now": self.d.now(self._fixed())}
                if self._one(conn, "retry_job", params) is None:
                    state = self._job_state(conn, job_id)
                    raise InvalidJobState(
                        f"job {job_id} is {state}: only failed or cancelled jobs can be retried"
                    )
        except self.d.unique_violation:
            raise self._unique_taken(job_id) from None
        return self._reread(job_id)

    def _unique_taken(self, job_id: int) -> InvalidJobState:
        job = self.get_job(job_id)
        key = None if job is None else job.unique_key
        with self._read() as conn:
            row = self._one(conn, "find_unique", {"unique_key": key})
        holder = f"job {row[0]}" if row else "another job"
        return InvalidJobState(
            f"job {job_id} cannot be retried: {holder} with its unique_key {key!r} is queued "
            "or running"
        )

    def _cancel(self, job_id: int) -> Job:
        with self._tx() as conn:
            params = {"id": _id(job_id), "now": self.d.now(self._fixed())}
            if (
                self._one(conn, "cancel_queued", params) is None
                and self._one(conn, "cancel_running", params) is None
            ):
                state = self._job_state(conn, job_id)
                raise InvalidJobState(
                    f"job {job_id} is already {state}: only queued or running jobs can be cancelled"
                )
        return self._reread(job_id)

    def _delete(self, job_id: int) -> None:
        with self._tx() as conn:
            if self._one(conn, "delete_job", {"id": _id(job_id)}) is not None:
                return
            self._job_state(conn, job_id)  # JobNotFound when there is no such job
        raise InvalidJobState(f"job {job_id} is running: cancel it first, then delete it")

    def bulk_job_action(self, action: JobAction, flt: JobFilter) -> int:
        if action not in _BULK:
            raise ValueError(f"unknown bulk action {action!r}: use retry, cancel or delete")
        sql, params = self._filtered(_BULK[action], flt, keyset=False)
        params["now"] = self.d.now(self._fixed())
        with self._write() as conn:
            return int(self.d.run(conn, sql, params).rowcount)

    def set_queue_paused(self, queue: str, paused: bool, actor: str) -> None:
        params = {"name": queue, "paused": self.d.flag(paused), "actor": actor}
        with self._write() as conn:
            self._run(conn, "set_queue_paused", {**params, "now": self.d.now(None)})

    def paused_queues(self) -> set[str]:
        with self._read() as conn:
            return {r[0] for r in self._run(conn, "paused_queues", {}, prepare=True).fetchall()}

    def queued_by_name(self) -> dict[str, int]:
        with self._read() as conn:
            rows = self._run(conn, "queued_by_name", {}, prepare=True).fetchall()
        self._compact_beyond(sum(int(r[2]) for r in rows))
        return {r[0]: int(r[1]) for r in rows if r[1]}

    def finished_counts(
        self, *, since: datetime, bucket_seconds: int = 3600
    ) -> list[tuple[datetime, str, int]]:
        if isinstance(bucket_seconds, bool) or not isinstance(bucket_seconds, int):
            raise ValueError(f"bucket_seconds must be a positive int, got {bucket_seconds!r}")
        if bucket_seconds < 1:
            raise ValueError(f"bucket_seconds must be a positive int, got {bucket_seconds!r}")
        params = {"since": self.d.instant(since), "bucket": bucket_seconds}
        with self._read() as conn:
            # Whole minutes come from the minutes kept as jobs finish (PostgreSQL); finer
            # buckets, and SQLite, count the rows.
            if bucket_seconds % 60 == 0 and "finished_counts" in self.d.q:
                rows = self._run(conn, "finished_counts", params).fetchall()
            else:
                rows = self._counted(conn, params)
        return [(self.d.dt(r[0]).astimezone(UTC), r[1], int(r[2])) for r in rows]

    def _counted(self, conn: Conn, params: dict[str, object]) -> list[Any]:
        """job_counts from the rows: one range of onthedot_jobs_done per (job name, final
        state) that has jobs (from the kept counts), merged and bucketed."""
        p = self.d.param
        groups = self._run(conn, "finished_groups", {}).fetchall()
        if not groups:
            return []
        parts = []
        for i, (name, state) in enumerate(groups):
            part = self.d.q["finished_range"].replace(
                f"name = {p('name')}", f"name = {p(f'n_{i}')}"
            )
            parts.append(part.replace(f"state = {p('state')}", f"state = {p(f's_{i}')}", 1))
            params[f"n_{i}"], params[f"s_{i}"] = name, state
        sql = self.d.q["job_counts_rows"].replace("{rows}", " UNION ALL ".join(parts))
        return list(self.d.run(conn, sql, params).fetchall())
