"""SQLite backend: stdlib sqlite3, WAL, BEGIN IMMEDIATE for writes, retry on busy.

One connection per thread. Writes inside one process are serialized by a lock before they reach
SQLite, so threads never spin on SQLITE_BUSY; between processes the busy timeout and a retry
loop around `BEGIN IMMEDIATE` do the waiting. SQLite's clock is the host clock: `now` is read
here, once per verb, unless a manual clock provides it.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from onthedot.domain.errors import DatabaseUnavailable, InvalidJobState, JobNotFound
from onthedot.domain.jobs import (
    ClaimedJob,
    Job,
    JobFilter,
    JobState,
    NewJob,
    Outcome,
    OutcomeKind,
    QueueStats,
    iso,
)
from onthedot.storage.interface import RescuedJob, WorkerInfo, WorkerRow
from onthedot.storage.sqlfile import load_migrations, load_queries
from onthedot.storage.sqlite.ledger import SqliteLedger, insert_job
from onthedot.storage.sqlite.timeconv import from_ts, opt_dt, slot_ts, to_ts

Q = load_queries("sqlite")
_JOB_COLUMNS = Q["job_columns"].removeprefix("SELECT").removesuffix("FROM onthedot_jobs").strip()
_OUTCOME_STATE = {
    OutcomeKind.SUCCEEDED: "succeeded",
    OutcomeKind.RETRY: "queued",
    OutcomeKind.FAILED: "failed",
    OutcomeKind.CANCELLED: "cancelled",
}
_BUSY_RETRY_SECONDS = 60.0
# A failed job whose unique_key another job holds again (queued or running) stays failed on a bulk
# retry, as do older failures of a key: retrying them would break the key's uniqueness.
_RETRY_UNIQUE_FREE = (
    " AND (unique_key IS NULL OR (NOT EXISTS (SELECT 1 FROM onthedot_jobs u"
    " WHERE u.unique_key = onthedot_jobs.unique_key AND u.state IN ('queued', 'running'))"
    " AND id = (SELECT max(f.id) FROM onthedot_jobs f"
    " WHERE f.unique_key = onthedot_jobs.unique_key AND f.state IN ('failed', 'cancelled'))))"
)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class SqliteStorage(SqliteLedger):
    backend = "sqlite"

    def __init__(
        self, path: str, *, options: dict[str, str] | None = None, auto_migrate: bool = True
    ):
        options = options or {}
        self.path = path
        self.memory = path == ":memory:"
        self.synchronous = options.get("synchronous", "normal").upper()
        if self.synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"invalid synchronous={self.synchronous!r}: use normal, full or off")
        self.busy_timeout = float(options.get("busy_timeout", "5"))
        self.auto_migrate = auto_migrate
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._shared: sqlite3.Connection | None = None
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._schema_ready = False
        self._pid = os.getpid()

    # -- connections --------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if not self.memory:
            folder = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(folder):
                raise DatabaseUnavailable(
                    f"SQLite database {self.path!r}: folder {folder!r} does not exist; create it "
                    "or point the URL elsewhere"
                )
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            if not self.memory:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
        except sqlite3.Error as exc:
            raise DatabaseUnavailable(f"SQLite database {self.path!r}: {exc}") from exc
        with self._all_lock:
            self._all.append(conn)
        return conn

    def _raw(self) -> sqlite3.Connection:
        if self.memory:
            if self._shared is None:
                with self._write_lock:
                    if self._shared is None:
                        self._shared = self._connect()
            return self._shared
        if os.getpid() != self._pid:  # forked: never share connections across processes
            self._local = threading.local()
            self._pid = os.getpid()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads (autocommit)."""
        conn = self._raw()
        if not self._schema_ready:
            self._ensure_schema()
        if self.memory:
            with self._write_lock:
                yield conn
        else:
            yield conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: BEGIN IMMEDIATE (retried while another process holds the lock)."""
        conn = self._raw()
        if not self._schema_ready:
            self._ensure_schema()
        with self._write_lock:
            self._begin(conn)
            try:
                yield conn
            except BaseException as exc:
                conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc):
                    raise self._read_only(exc) from exc
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.OperationalError as exc:
                    if "readonly" in str(exc):
                        raise self._read_only(exc) from exc
                    raise

    def _read_only(self, exc: sqlite3.Error) -> DatabaseUnavailable:
        return DatabaseUnavailable(
            f"SQLite database {self.path!r} is read-only ({exc}): give this process write "
            "access to the file and its folder"
        )

    def _begin(self, conn: sqlite3.Connection) -> None:
        deadline = time.monotonic() + _BUSY_RETRY_SECONDS
        delay = 0.005
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise DatabaseUnavailable(f"SQLite database {self.path!r}: {exc}") from exc
                if time.monotonic() > deadline:
                    raise DatabaseUnavailable(
                        f"SQLite database {self.path!r} stayed locked for "
                        f"{_BUSY_RETRY_SECONDS:.0f}s: another process holds a long write"
                    ) from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.2)

    def _ensure_schema(self) -> None:
        if self.auto_migrate:
            self.migrate()
        self._schema_ready = True

    def close(self) -> None:
        with self._all_lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._all.clear()
        self._local = threading.local()
        self._shared = None

    def ping(self) -> None:
        with self._conn() as conn:
            conn.execute("SELECT 1")

    def db_now(self) -> datetime:
        return from_ts(time.time())

    # -- schema -------------------------------------------------------------------------------
    def migrate(self) -> list[int]:
        conn = self._raw()
        applied: list[int] = []
        with self._write_lock:
            self._begin(conn)
            try:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS onthedot_schema_version ("
                    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
                )
                current = conn.execute(Q["schema_version"]).fetchone()[0]
                for version, name, sql in load_migrations("sqlite"):
                    if version <= current:
                        continue
                    for statement in _split_statements(sql):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO onthedot_schema_version VALUES (?, ?, ?)",
                        (version, name, time.time()),
                    )
                    applied.append(version)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        self._schema_ready = True
        return applied

    def schema_version(self) -> tuple[int, int]:
        latest = len(load_migrations("sqlite"))
        conn = self._raw()
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'onthedot_schema_version'"
        ).fetchone()
        if not exists:
            return 0, latest
        return int(conn.execute(Q["schema_version"]).fetchone()[0]), latest

    # -- enqueue ------------------------------------------------------------------------------
    def enqueue(
        self, jobs: Sequence[NewJob], *, now: datetime | None = None, connection: Any = None
    ) -> list[int]:
        if connection is not None:
            raise ValueError(
                "enqueue(connection=...) needs PostgreSQL: SQLite has no shared transactions"
            )
        if not jobs:
            return []
        ts = self._now(now)
        with self._tx() as conn:
            if len(jobs) == 1 or any(j.unique_key for j in jobs):
                return [insert_job(conn, job, ts) for job in jobs]
            # Many plain jobs: one executemany. Inside this write transaction rowids are
            # handed out consecutively, so the ids are the last n.
            rows = []
            for job in jobs:
                args, kwargs = job.encoded()
                rows.append(
                    (
                        job.name,
                        job.queue,
                        job.priority,
                        args,
                        kwargs,
                        ts if job.run_at is None else to_ts(job.run_at),
                        job.max_attempts,
                        job.timeout,
                        job.schedule_key,
                        None if job.slot is None else slot_ts(job.slot),
                        job.lock_key,
                        ts,
                    )
                )
            conn.executemany(Q["enqueue_many"], rows)
            last = int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
        return list(range(last - len(jobs) + 1, last + 1))

    # -- the worker's verbs ---------------------------------------------------------------------
    def claim_jobs(
        self, worker_id: str, queue: str, limit: int, lease: float, *, now: datetime | None = None
    ) -> list[ClaimedJob]:
        params = {
            "worker_id": worker_id,
            "queue": queue,
            "limit": limit,
            "lease": lease,
            "now": self._now(now),
        }
        with self._tx() as conn:
            rows = conn.execute(Q["claim_jobs"], params).fetchall()
        # RETURNING order is unspecified in SQLite: restore claim order.
        rows.sort(key=lambda r: (-r[10], r[11], r[0]))
        loads = json.loads
        return [
            ClaimedJob(
                r[0],
                r[1],
                loads(r[2]),
                loads(r[3]),
                r[4],
                r[5],
                r[6],
                r[7],
                r[8],
                None if r[9] is None else from_ts(r[9]),
            )
            for r in rows
        ]

    def finish_jobs(
        self, worker_id: str, outcomes: Sequence[Outcome], *, now: datetime | None = None
    ) -> int:
        if not outcomes:
            return 0
        ts = self._now(now)
        now_iso = iso(from_ts(ts))
        changed = 0
        with self._tx() as conn:
            for o in outcomes:
                if o.kind is OutcomeKind.SUCCEEDED and o.result is None:
                    cur = conn.execute(
                        Q["finish_succeeded"],
                        {"id": o.job_id, "attempt": o.attempt, "worker_id": worker_id, "now": ts},
                    )
                else:
                    cur = conn.execute(
                        Q["finish_one"],
                        {
                            "id": o.job_id,
                            "state": _OUTCOME_STATE[o.kind],
                            "delay": o.retry_in or 0.0,
                            "result": None if o.result is None else json.dumps(o.result),
                            "error": o.error,
                            "tb": o.traceback,
                            "attempt": o.attempt,
                            "worker_id": worker_id,
                            "now": ts,
                            "now_iso": now_iso,
                        },
                    )
                changed += cur.rowcount
        return changed

    def release_jobs(
        self, worker_id: str, job_ids: Sequence[int], *, now: datetime | None = None
    ) -> int:
        if not job_ids:
            return 0
        with self._tx() as conn:
            return sum(
                conn.execute(Q["release_job"], {"id": i, "worker_id": worker_id}).rowcount
                for i in job_ids
            )

    def heartbeat(
        self,
        worker_id: str,
        lease: float,
        *,
        now: datetime | None = None,
        held: Collection[int] | None = None,
    ) -> set[int]:
        params: dict[str, Any] = {"worker_id": worker_id, "lease": lease, "now": self._now(now)}
        with self._tx() as conn:
            conn.execute(Q["heartbeat_worker"], params)
            if held is None:
                rows = conn.execute(Q["extend_leases"], params).fetchall()
            elif held:
                params["ids"] = json.dumps(list(held))
                rows = conn.execute(Q["extend_held_leases"], params).fetchall()
            else:
                rows = []
        return {r[0] for r in rows if r[1]}

    def register_worker(self, worker: WorkerInfo, *, now: datetime | None = None) -> None:
        with self._tx() as conn:
            conn.execute(
                Q["register_worker"],
                {
                    "id": worker.id,
                    "hostname": worker.hostname,
                    "pid": worker.pid,
                    "generation": worker.generation,
                    "queues": ",".join(worker.queues),
                    "concurrency": worker.concurrency,
                    "scheduler": int(worker.scheduler),
                    "now": self._now(now),
                },
            )

    def set_worker_stopping(self, worker_id: str) -> None:
        with self._tx() as conn:
            conn.execute(Q["set_worker_stopping"], {"worker_id": worker_id})

    def deregister_worker(self, worker_id: str) -> None:
        with self._tx() as conn:
            conn.execute(Q["deregister_worker"], {"worker_id": worker_id})

    def list_workers(self, *, now: datetime | None = None) -> list[WorkerRow]:
        with self._conn() as conn:
            rows = conn.execute(Q["list_workers"], {"now": self._now(now)}).fetchall()
        return [
            WorkerRow(
                id=r[0],
                hostname=r[1],
                pid=r[2],
                queues=tuple(q for q in r[3].split(",") if q),
                concurrency=r[4],
                scheduler=bool(r[5]),
                generation=r[6],
                started_at=from_ts(r[7]),
                heartbeat_at=from_ts(r[8]),
                stopping=bool(r[9]),
                heartbeat_age=float(r[10]),
                running_jobs=int(r[11]),
            )
            for r in rows
        ]

    def rescue_jobs(self, *, now: datetime | None = None, limit: int = 1000) -> list[RescuedJob]:
        ts = self._now(now)
        error = "WorkerLost: the worker running this job stopped heartbeating; lease expired"
        with self._conn() as conn:
            expired = conn.execute(Q["expired_jobs"], {"now": ts, "limit": limit}).fetchall()
        if not expired:
            return []
        rescued: list[RescuedJob] = []
        with self._tx() as conn:
            for (job_id,) in expired:
                row = conn.execute(
                    Q["rescue_job"],
                    {"id": job_id, "now": ts, "now_iso": iso(from_ts(ts)), "error": error},
                ).fetchone()
                if row is not None:
                    rescued.append(RescuedJob(row[0], row[1], row[2], bool(row[3])))
        return rescued

    def prune(self, *, older_than: datetime, workers_older_than: datetime) -> dict[str, int]:
        before = to_ts(older_than)
        counts = {"jobs": 0}
        while True:
            with self._tx() as conn:
                n = conn.execute(Q["prune_jobs"], {"before": before}).rowcount
            counts["jobs"] += n
            if n < 10000:
                break
        with self._tx() as conn:
            counts["slots"] = conn.execute(Q["prune_slots"], {"before": before}).rowcount
            counts["slots"] += conn.execute(Q["prune_orphan_slots"], {"before": before}).rowcount
            counts["schedules"] = conn.execute(Q["prune_ledger"], {"before": before}).rowcount
            counts["workers"] = conn.execute(
                Q["prune_workers"], {"before": to_ts(workers_older_than)}
            ).rowcount
        return counts

    def acquire_maintenance(
        self, task: str, every: float, worker_id: str, *, now: datetime | None = None
    ) -> bool:
        with self._tx() as conn:
            row = conn.execute(
                Q["acquire_maintenance"],
                {"task": task, "every": every, "worker_id": worker_id, "now": self._now(now)},
            ).fetchone()
        return row is not None

    def seconds_until_ready(
        self, queues: Sequence[str], *, now: datetime | None = None
    ) -> float | None:
        with self._conn() as conn:
            row = conn.execute(
                Q["seconds_until_ready"],
                {"queues": json.dumps(list(queues)), "now": self._now(now)},
            ).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    # -- reading and operator actions ---------------------------------------------------------
    @staticmethod
    def _job(r: Sequence[Any]) -> Job:
        return Job(
            id=r[0],
            name=r[1],
            queue=r[2],
            state=JobState(r[3]),
            priority=r[4],
            args=json.loads(r[5]),
            kwargs=json.loads(r[6]),
            attempts=r[7],
            max_attempts=r[8],
            run_at=from_ts(r[9]),
            created_at=from_ts(r[10]),
            started_at=opt_dt(r[11]),
            finished_at=opt_dt(r[12]),
            timeout=r[13],
            unique_key=r[14],
            schedule_key=r[15],
            slot=opt_dt(r[16]),
            worker_id=r[17],
            result=_loads(r[18]),
            error=r[19],
            traceback=r[20],
            cancel_requested=bool(r[21]),
            errors=_loads(r[22]) or [],
        )

    def get_job(self, job_id: int) -> Job | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM onthedot_jobs WHERE id = ?", (job_id,)
            ).fetchone()
        return self._job(row) if row else None

    @staticmethod
    def _where(flt: JobFilter, *, keyset: bool) -> tuple[str, dict[str, Any]]:
        clauses: list[str] = []
        params: dict[str, Any] = {}
        if flt.state is not None:
            clauses.append("state = :state")
            params["state"] = str(flt.state)
        if flt.queue:
            clauses.append("queue = :queue")
            params["queue"] = flt.queue
        if flt.name:
            clauses.append("name = :name")
            params["name"] = flt.name
        if flt.schedule_key:
            clauses.append("schedule_key = :schedule_key")
            params["schedule_key"] = flt.schedule_key
        if flt.search:
            # Arguments are stored as ASCII JSON: also look for the term as JSON spells it
            # inside a string (non-ASCII as \uXXXX, quotes and backslashes escaped).
            clauses.append(
                "(instr(args, :search) > 0 OR instr(kwargs, :search) > 0"
                " OR instr(args, :search_json) > 0 OR instr(kwargs, :search_json) > 0"
                " OR instr(COALESCE(error, ''), :search) > 0)"
            )
            params["search"] = flt.search
            params["search_json"] = json.dumps(flt.search)[1:-1]
        if keyset and flt.before_id is not None:
            clauses.append("id < :before_id")
            params["before_id"] = flt.before_id
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def list_jobs(self, flt: JobFilter) -> list[Job]:
        where, params = self._where(flt, keyset=True)
        params["limit"] = flt.limit
        sql = f"SELECT {_JOB_COLUMNS} FROM onthedot_jobs{where} ORDER BY id DESC LIMIT :limit"
        with self._conn() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [self._job(r) for r in rows]

    def count_jobs(self, flt: JobFilter) -> int:
        where, params = self._where(flt, keyset=False)
        with self._conn() as conn:
            return int(
                conn.execute(f"SELECT count(*) FROM onthedot_jobs{where}", params).fetchone()[0]
            )

    def queue_stats(self, *, now: datetime | None = None) -> list[QueueStats]:
        with self._conn() as conn:
            rows = conn.execute(Q["queue_stats"], {"now": self._now(now)}).fetchall()
            paused = {r[0] for r in conn.execute(Q["paused_queues"]).fetchall()}
        stats = [
            QueueStats(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                r[6],
                None if r[7] is None else float(r[7]),
                paused=r[0] in paused,
            )
            for r in rows
        ]
        known = {s.queue for s in stats}
        stats += [QueueStats(q, 0, 0, 0, 0, 0, 0, None, paused=True) for q in paused - known]
        return sorted(stats, key=lambda s: s.queue)

    def _job_state(self, conn: sqlite3.Connection, job_id: int) -> str:
        row = conn.execute(Q["job_state"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFound(f"no job with id {job_id}")
        return str(row[0])

    def retry_job(self, job_id: int, *, now: datetime | None = None) -> Job:
        try:
            with self._tx() as conn:
                if (
                    conn.execute(Q["retry_job"], {"id": job_id, "now": self._now(now)}).fetchone()
                    is None
                ):
                    state = self._job_state(conn, job_id)
                    raise InvalidJobState(
                        f"job {job_id} is {state}: only failed or cancelled jobs can be retried"
                    )
        except sqlite3.IntegrityError:
            raise self._unique_taken(job_id) from None
        job = self.get_job(job_id)
        assert job is not None
        return job

    def _unique_taken(self, job_id: int) -> InvalidJobState:
        job = self.get_job(job_id)
        key = None if job is None else job.unique_key
        with self._conn() as conn:
            row = conn.execute(Q["find_unique"], {"unique_key": key}).fetchone()
        holder = f"job {row[0]}" if row else "another job"
        return InvalidJobState(
            f"job {job_id} cannot be retried: {holder} with its unique_key {key!r} is queued "
            "or running"
        )

    def cancel_job(self, job_id: int, *, now: datetime | None = None) -> Job:
        with self._tx() as conn:
            params = {"id": job_id, "now": self._now(now)}
            if (
                conn.execute(Q["cancel_queued"], params).fetchone() is None
                and conn.execute(Q["cancel_running"], params).fetchone() is None
            ):
                state = self._job_state(conn, job_id)
                raise InvalidJobState(
                    f"job {job_id} is already {state}: only queued or running jobs can be cancelled"
                )
        job = self.get_job(job_id)
        assert job is not None
        return job

    def delete_job(self, job_id: int) -> bool:
        with self._tx() as conn:
            if conn.execute(Q["delete_job"], {"id": job_id}).fetchone() is not None:
                return True
            row = conn.execute(Q["job_state"], {"id": job_id}).fetchone()
        if row is None:
            return False
        raise InvalidJobState(f"job {job_id} is running: cancel it first, then delete it")

    def bulk_job_action(self, action: str, flt: JobFilter, *, now: datetime | None = None) -> int:
        where, params = self._where(flt, keyset=False)
        params["now"] = self._now(now)
        glue = " AND " if where else " WHERE "
        if action == "retry":
            sql = (
                "UPDATE onthedot_jobs SET state = 'queued', run_at = :now, attempts = 0,"
                " finished_at = NULL, started_at = NULL, worker_id = NULL, lease_until = NULL,"
                f" cancel_requested = 0{where}{glue}state IN ('failed', 'cancelled')"
                f"{_RETRY_UNIQUE_FREE}"
            )
        elif action == "cancel":
            sql = (
                "UPDATE onthedot_jobs SET state = 'cancelled', finished_at = :now"
                f"{where}{glue}state = 'queued'"
            )
        elif action == "delete":
            sql = f"DELETE FROM onthedot_jobs{where}{glue}state <> 'running'"
        else:
            raise ValueError(f"unknown bulk action {action!r}: use retry, cancel or delete")
        with self._tx() as conn:
            return conn.execute(sql, params).rowcount

    def set_queue_paused(self, queue: str, paused: bool, actor: str) -> None:
        with self._tx() as conn:
            conn.execute(
                Q["set_queue_paused"],
                {"name": queue, "paused": int(paused), "actor": actor, "now": time.time()},
            )

    def paused_queues(self) -> set[str]:
        with self._conn() as conn:
            return {r[0] for r in conn.execute(Q["paused_queues"]).fetchall()}

    def job_counts(
        self, *, since: datetime, bucket_seconds: int = 3600
    ) -> list[tuple[datetime, str, int]]:
        params = {"since": to_ts(since), "bucket": _bucket(bucket_seconds)}
        with self._conn() as conn:
            rows = conn.execute(Q["job_counts"], params).fetchall()
        return [(datetime.fromtimestamp(r[0], UTC), r[1], int(r[2])) for r in rows]


def _bucket(seconds: int) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1:
        raise ValueError(f"bucket_seconds must be a positive int, got {seconds!r}")
    return seconds


def _split_statements(sql: str) -> list[str]:
    """Split a migration into statements (migrations contain no triggers or string semicolons)."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
