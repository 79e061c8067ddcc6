"""PostgreSQL backend: psycopg 3 with a pool, batch claims with SKIP LOCKED, LISTEN/NOTIFY."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from onthedot.domain.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    InvalidJobState,
    JobNotFound,
)
from onthedot.domain.jobs import (
    ClaimedJob,
    Job,
    JobFilter,
    JobState,
    NewJob,
    Outcome,
    OutcomeKind,
    QueueStats,
)
from onthedot.storage.interface import RescuedJob, WorkerInfo, WorkerRow
from onthedot.storage.postgres.ledger import PostgresLedger
from onthedot.storage.postgres.rows import enqueue_rows
from onthedot.storage.sqlfile import load_migrations, load_queries

Q = load_queries("postgres")
_MIGRATION_LOCK = 7_283_911_044  # advisory lock key serializing concurrent `migrate` runs
_JOB_COLUMNS = Q["job_columns"].removeprefix("SELECT").removesuffix("FROM onthedot_jobs").strip()
_SUCCESS = OutcomeKind.SUCCEEDED
# A failed job whose unique_key another job holds again (queued or running) stays failed on a bulk
# retry, as do older failures of a key: retrying them would break the key's uniqueness.
_RETRY_UNIQUE_FREE = (
    " AND (unique_key IS NULL OR (NOT EXISTS (SELECT 1 FROM onthedot_jobs u"
    " WHERE u.unique_key = onthedot_jobs.unique_key AND u.state IN ('queued', 'running'))"
    " AND id = (SELECT max(f.id) FROM onthedot_jobs f"
    " WHERE f.unique_key = onthedot_jobs.unique_key AND f.state IN ('failed', 'cancelled'))))"
)
_OUTCOME_STATE = {
    OutcomeKind.SUCCEEDED: "succeeded",
    OutcomeKind.RETRY: "queued",
    OutcomeKind.FAILED: "failed",
    OutcomeKind.CANCELLED: "cancelled",
}


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_N = "\\N"  # NULL in COPY's text format
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value: str) -> str:
    """A value escaped for COPY's text format."""
    return value.translate(_COPY_ESCAPES)


def _utc_z(entry: dict[str, Any]) -> dict[str, Any]:
    """Error-history instants read `...Z` on every backend."""
    at = entry.get("at")
    if isinstance(at, str) and at.endswith("+00:00"):
        return {**entry, "at": at[:-6] + "Z"}
    return entry


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SET TIME ZONE 'UTC'")


try:  # psycopg_pool's reconnection attempt (its backoff state); private, so optional
    from psycopg_pool.base import AttemptWithBackoff as _Attempt
except ImportError:  # pragma: no cover - a psycopg_pool without it: its own backoff applies
    _Attempt = None  # type: ignore[assignment,misc]

_RECONNECT_EVERY = 2.0  # seconds: the most a lost connection waits between reconnect attempts


if _Attempt is not None:

    class _CappedAttempt(_Attempt):
        """psycopg_pool doubles the pause between reconnect attempts without a bound below its
        5-minute give-up, so a server back after a 20 s outage waited ~10 s more for the next
        attempt (and every worker with it). Pauses here grow as before up to 1-2 s (random,
        so a fleet of workers does not reconnect in step), then stay there."""

        def update_delay(self, now: float) -> None:
            super().update_delay(now)
            if self.delay > _RECONNECT_EVERY:
                self.delay = random.uniform(_RECONNECT_EVERY / 2, _RECONNECT_EVERY)


class _Pool(ConnectionPool):
    """psycopg_pool's pool with two changes of policy, nothing else:

    - It hands out the most recently returned idle connection (its own order is first in,
      first out, so a thread enqueueing job after job alternated between backends): one backend
      and its caches stay hot, 15-25 % more single enqueues per second here. The least recently
      used connections stay at the front, where the pool's shrinking closes them.
    - Reconnect attempts after losing the server pause at most `_RECONNECT_EVERY` seconds.

    Both hook private methods; if a psycopg_pool release renames what they touch, the pool
    falls back to its own order and backoff."""

    def _add_connection(self, attempt: Any, growing: bool = False) -> None:
        if attempt is None and _Attempt is not None:
            attempt = _CappedAttempt(timeout=self.reconnect_timeout)
        super()._add_connection(attempt, growing)

    def _get_ready_connection(self, timeout: float | None) -> Any:
        ready = getattr(self, "_pool", None)
        if ready is not None and len(ready) > 1:
            ready.rotate(1)  # the last returned comes first; the others keep their order
        return super()._get_ready_connection(timeout)


class PostgresStorage(PostgresLedger):
    backend = "postgresql"

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 10, display: str = ""
    ) -> None:
        self.url = url
        self.display = display or url
        self._pool = _Pool(
            url,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True},
            configure=_configure,
            timeout=10.0,
            name="onthedot",
        )
        self._open_lock = threading.Lock()
        self._opened = False

    # -- connections --------------------------------------------------------------------------
    def _ensure_open(self) -> None:
        if self._opened:
            return
        with self._open_lock:
            if not self._opened:
                self._pool.open(wait=False)
                self._opened = True

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        self._ensure_open()
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise DatabaseUnavailable(
                f"PostgreSQL at {self.display} is unreachable (no connection within "
                f"{self._pool.timeout:.0f}s): check the host, port and that the server runs"
            ) from exc
        except pg_errors.ReadOnlySqlTransaction as exc:
            # A standby, or default_transaction_read_only: wait like an outage (a failover
            # promotes a new primary) and say so.
            raise DatabaseUnavailable(
                f"PostgreSQL at {self.display} is read-only ({_one_line(exc)}): point onthedot "
                "at the primary, or turn off default_transaction_read_only"
            ) from exc
        except pg_errors.InsufficientPrivilege as exc:
            raise ConfigurationError(
                f"PostgreSQL at {self.display} refused: {_one_line(exc)}; onthedot's role needs "
                "to read and write its tables (and create them, for `onthedot migrate`)"
            ) from exc
        except psycopg.DataError as exc:  # a value it cannot hold, e.g. a NUL in a filter
            raise ValueError(f"PostgreSQL cannot take this value: {_one_line(exc)}") from exc
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"PostgreSQL at {self.display} failed: {_one_line(exc)}"
            ) from exc

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Any]]:
        with self._conn() as conn, conn.transaction():
            yield conn

    def connect_listener(self) -> psycopg.Connection[Any]:
        """A dedicated autocommit connection for LISTEN (not from the pool)."""
        try:
            return psycopg.connect(self.url, autocommit=True)
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"PostgreSQL at {self.display} failed: {_one_line(exc)}"
            ) from exc

    def close(self) -> None:
        if self._opened:
            self._pool.close()
            self._opened = False

    def ping(self) -> None:
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"PostgreSQL at {self.display} is unreachable: {_one_line(exc)}"
            ) from exc

    def db_now(self) -> datetime:
        with self._conn() as conn:
            row = conn.execute(Q["db_now"]).fetchone()
        assert row is not None
        value: datetime = row[0]
        return value

    # -- schema -------------------------------------------------------------------------------
    def _ensure_version_table(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS onthedot_schema_version ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )

    def migrate(self) -> list[int]:
        applied: list[int] = []
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            self._ensure_version_table(conn)
            row = conn.execute("SELECT COALESCE(max(version), 0) FROM onthedot_schema_version")
            current = row.fetchone()[0]  # type: ignore[index]
            for version, name, sql in load_migrations("postgres"):
                if version <= current:
                    continue
                conn.execute(sql.encode())
                conn.execute(
                    "INSERT INTO onthedot_schema_version (version, name) VALUES (%s, %s)",
                    (version, name),
                )
                applied.append(version)
        return applied

    def schema_version(self) -> tuple[int, int]:
        latest = len(load_migrations("postgres"))
        with self._conn() as conn:
            exists = conn.execute(
                "SELECT to_regclass('onthedot_schema_version') IS NOT NULL"
            ).fetchone()
            if not exists or not exists[0]:
                return 0, latest
            row = conn.execute(Q["schema_version"]).fetchone()
        return (int(row[0]) if row else 0), latest

    # -- enqueue ------------------------------------------------------------------------------
    def enqueue(
        self, jobs: Sequence[NewJob], *, now: datetime | None = None, connection: Any = None
    ) -> list[int]:
        if not jobs:
            return []
        if connection is not None:
            return enqueue_rows(connection, jobs, now)
        if len(jobs) == 1:
            # One autocommit statement: one round trip (no BEGIN/COMMIT around it).
            with self._conn() as conn:
                return enqueue_rows(conn, jobs, now)
        if any(j.unique_key for j in jobs):
            with self._tx() as conn:
                return enqueue_rows(conn, jobs, now)
        with self._tx() as conn:
            return self._enqueue_copy(conn, jobs, now)

    def _enqueue_copy(
        self, conn: psycopg.Connection[Any], jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        """COPY in text format, built here: per row only the id and the JSON vary, the rest of
        the line is shared by every job with the same options."""
        ids = [r[0] for r in conn.execute(Q["allocate_ids"], {"n": len(jobs)}).fetchall()]
        start = now or conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
        created = start.isoformat()
        shared: dict[tuple[Any, ...], tuple[str, str]] = {}
        lines: list[str] = []
        with conn.cursor() as cur, cur.copy(Q["enqueue_copy"]) as copy:
            for job_id, job in zip(ids, jobs, strict=True):
                options = (
                    job.name,
                    job.queue,
                    job.priority,
                    job.run_at,
                    job.max_attempts,
                    job.timeout,
                    job.schedule_key,
                    job.slot,
                    job.lock_key,
                )
                parts = shared.get(options)
                if parts is None:
                    head = f"{_copy_text(job.name)}\t{_copy_text(job.queue)}\t{job.priority}"
                    tail = "\t".join(
                        (
                            (job.run_at or start).isoformat(),
                            str(job.max_attempts),
                            _N if job.timeout is None else repr(job.timeout),
                            _N if job.schedule_key is None else _copy_text(job.schedule_key),
                            _N if job.slot is None else job.slot.isoformat(),
                            _N if job.lock_key is None else _copy_text(job.lock_key),
                            created,
                        )
                    )
                    parts = shared[options] = (head, tail)
                args, kwargs = job.encoded()
                if "\\" in args:
                    args = args.replace("\\", "\\\\")
                if "\\" in kwargs:
                    kwargs = kwargs.replace("\\", "\\\\")
                lines.append(f"{job_id}\t{parts[0]}\t{args}\t{kwargs}\t{parts[1]}\n")
                if len(lines) >= 5000:
                    copy.write("".join(lines))
                    lines.clear()
            if lines:
                copy.write("".join(lines))
        return ids

    # -- the worker's verbs ---------------------------------------------------------------------
    def claim_jobs(
        self, worker_id: str, queue: str, limit: int, lease: float, *, now: datetime | None = None
    ) -> list[ClaimedJob]:
        params = {
            "worker_id": worker_id,
            "queue": queue,
            "limit": limit,
            "lease": lease,
            "now": now,
        }
        for attempt in range(3):
            try:
                with self._conn() as conn:
                    rows = conn.execute(Q["claim_jobs"], params, prepare=True).fetchall()
                break
            except pg_errors.UniqueViolation:
                # Two workers raced for the same lock key; the index kept it to one. Try again.
                if attempt == 2:
                    return []
        # RETURNING order is unspecified: restore claim order.
        rows.sort(key=lambda r: (-r[10], r[11], r[0]))
        loads = json.loads
        return [
            ClaimedJob(r[0], r[1], loads(r[2]), loads(r[3]), r[4], r[5], r[6], r[7], r[8], r[9])
            for r in rows
        ]

    def finish_jobs(
        self, worker_id: str, outcomes: Sequence[Outcome], *, now: datetime | None = None
    ) -> int:
        if not outcomes:
            return 0
        plain = [o for o in outcomes if o.kind is _SUCCESS and o.result is None]
        rest = [o for o in outcomes if not (o.kind is _SUCCESS and o.result is None)]
        changed = 0
        with self._conn() as conn:
            if plain:
                cur = conn.execute(
                    Q["finish_succeeded"],
                    {
                        "ids": [o.job_id for o in plain],
                        "attempts": [o.attempt for o in plain],
                        "worker_id": worker_id,
                        "now": now,
                    },
                    prepare=True,
                )
                changed += cur.rowcount
            if rest:
                cur = conn.execute(
                    Q["finish_many"],
                    {
                        "ids": [o.job_id for o in rest],
                        "states": [_OUTCOME_STATE[o.kind] for o in rest],
                        "delays": [float(o.retry_in or 0.0) for o in rest],
                        "results": [
                            None if o.result is None else json.dumps(o.result) for o in rest
                        ],
                        "errors": [o.error for o in rest],
                        "tbs": [o.traceback for o in rest],
                        "attempts": [o.attempt for o in rest],
                        "worker_id": worker_id,
                        "now": now,
                    },
                    prepare=True,
                )
                changed += cur.rowcount
        return changed

    def release_jobs(
        self, worker_id: str, job_ids: Sequence[int], *, now: datetime | None = None
    ) -> int:
        if not job_ids:
            return 0
        with self._tx() as conn:
            cur = conn.execute(Q["release_jobs"], {"ids": list(job_ids), "worker_id": worker_id})
            queues = conn.execute(
                "SELECT DISTINCT queue FROM onthedot_jobs WHERE id = ANY(%s)", (list(job_ids),)
            ).fetchall()
            conn.execute(Q["notify_queues"], {"queues": [q[0] for q in queues]})
            return cur.rowcount

    def heartbeat(
        self,
        worker_id: str,
        lease: float,
        *,
        now: datetime | None = None,
        held: Collection[int] | None = None,
    ) -> set[int]:
        params: dict[str, Any] = {"worker_id": worker_id, "lease": lease, "now": now}
        with self._tx() as conn:
            conn.execute(Q["heartbeat_worker"], params)
            if held is None:
                rows = conn.execute(Q["extend_leases"], params).fetchall()
            elif held:
                params["ids"] = list(held)
                rows = conn.execute(Q["extend_held_leases"], params).fetchall()
            else:
                rows = []
        return {r[0] for r in rows if r[1]}

    def register_worker(self, worker: WorkerInfo, *, now: datetime | None = None) -> None:
        with self._conn() as conn:
            conn.execute(
                Q["register_worker"],
                {
                    "id": worker.id,
                    "hostname": worker.hostname,
                    "pid": worker.pid,
                    "generation": worker.generation,
                    "queues": ",".join(worker.queues),
                    "concurrency": worker.concurrency,
                    "scheduler": worker.scheduler,
                    "now": now,
                },
            )

    def set_worker_stopping(self, worker_id: str) -> None:
        with self._conn() as conn:
            conn.execute(Q["set_worker_stopping"], {"worker_id": worker_id})

    def deregister_worker(self, worker_id: str) -> None:
        with self._conn() as conn:
            conn.execute(Q["deregister_worker"], {"worker_id": worker_id})

    def list_workers(self, *, now: datetime | None = None) -> list[WorkerRow]:
        with self._conn() as conn:
            rows = conn.execute(Q["list_workers"], {"now": now}).fetchall()
        return [
            WorkerRow(
                id=r[0],
                hostname=r[1],
                pid=r[2],
                queues=tuple(q for q in r[3].split(",") if q),
                concurrency=r[4],
                scheduler=r[5],
                generation=r[6],
                started_at=r[7],
                heartbeat_at=r[8],
                stopping=r[9],
                heartbeat_age=float(r[10]),
                running_jobs=int(r[11]),
            )
            for r in rows
        ]

    def rescue_jobs(self, *, now: datetime | None = None, limit: int = 1000) -> list[RescuedJob]:
        error = "WorkerLost: the worker running this job stopped heartbeating; lease expired"
        with self._tx() as conn:
            rows = conn.execute(
                Q["rescue_jobs"], {"now": now, "limit": limit, "error": error}
            ).fetchall()
            queues = sorted({r[4] for r in rows if r[3]})
            if queues:
                conn.execute(Q["notify_queues"], {"queues": queues})
        return [RescuedJob(id=r[0], name=r[1], attempt=r[2], requeued=r[3]) for r in rows]

    def prune(self, *, older_than: datetime, workers_older_than: datetime) -> dict[str, int]:
        counts = {"jobs": 0}
        with self._conn() as conn:
            while True:
                n = conn.execute(Q["prune_jobs"], {"before": older_than}).rowcount
                counts["jobs"] += n
                if n < 10000:
                    break
            counts["slots"] = conn.execute(Q["prune_slots"], {"before": older_than}).rowcount
            counts["slots"] += conn.execute(
                Q["prune_orphan_slots"], {"before": older_than}
            ).rowcount
            counts["schedules"] = conn.execute(Q["prune_ledger"], {"before": older_than}).rowcount
            counts["workers"] = conn.execute(
                Q["prune_workers"], {"before": workers_older_than}
            ).rowcount
        return counts

    def acquire_maintenance(
        self, task: str, every: float, worker_id: str, *, now: datetime | None = None
    ) -> bool:
        with self._conn() as conn:
            row = conn.execute(
                Q["acquire_maintenance"],
                {"task": task, "every": every, "worker_id": worker_id, "now": now},
            ).fetchone()
        return row is not None

    def seconds_until_ready(
        self, queues: Sequence[str], *, now: datetime | None = None
    ) -> float | None:
        with self._conn() as conn:
            row = conn.execute(
                Q["seconds_until_ready"], {"queues": list(queues), "now": now}, prepare=True
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
            args=r[5],
            kwargs=r[6],
            attempts=r[7],
            max_attempts=r[8],
            run_at=r[9],
            created_at=r[10],
            started_at=r[11],
            finished_at=r[12],
            timeout=r[13],
            unique_key=r[14],
            schedule_key=r[15],
            slot=r[16],
            worker_id=r[17],
            result=r[18],
            error=r[19],
            traceback=r[20],
            cancel_requested=r[21],
            errors=[_utc_z(e) for e in r[22] or []],
        )

    def get_job(self, job_id: int) -> Job | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM onthedot_jobs WHERE id = %s", (job_id,)
            ).fetchone()
        return self._job(row) if row else None

    @staticmethod
    def _where(flt: JobFilter, *, keyset: bool) -> tuple[str, dict[str, Any]]:
        clauses: list[str] = []
        params: dict[str, Any] = {}
        if flt.state is not None:
            clauses.append("state = %(state)s")
            params["state"] = str(flt.state)
        if flt.queue:
            clauses.append("queue = %(queue)s")
            params["queue"] = flt.queue
        if flt.name:
            clauses.append("name = %(name)s")
            params["name"] = flt.name
        if flt.schedule_key:
            clauses.append("schedule_key = %(schedule_key)s")
            params["schedule_key"] = flt.schedule_key
        if flt.search:
            # Arguments are searched as JSON text, so also look for the term as JSON spells it
            # inside a string (quotes, backslashes and control characters escaped).
            clauses.append(
                "(strpos(args::text, %(search)s) > 0 OR strpos(kwargs::text, %(search)s) > 0"
                " OR strpos(args::text, %(search_json)s) > 0"
                " OR strpos(kwargs::text, %(search_json)s) > 0"
                " OR strpos(COALESCE(error, ''), %(search)s) > 0)"
            )
            params["search"] = flt.search
            params["search_json"] = json.dumps(flt.search, ensure_ascii=False)[1:-1]
        if keyset and flt.before_id is not None:
            clauses.append("id < %(before_id)s")
            params["before_id"] = flt.before_id
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def list_jobs(self, flt: JobFilter) -> list[Job]:
        where, params = self._where(flt, keyset=True)
        params["limit"] = flt.limit
        sql = f"SELECT {_JOB_COLUMNS} FROM onthedot_jobs{where} ORDER BY id DESC LIMIT %(limit)s"
        with self._conn() as conn:
            rows = conn.execute(sql.encode(), params).fetchall()
        return [self._job(r) for r in rows]

    def count_jobs(self, flt: JobFilter) -> int:
        where, params = self._where(flt, keyset=False)
        with self._conn() as conn:
            row = conn.execute(f"SELECT count(*) FROM onthedot_jobs{where}".encode(), params)
            return int(row.fetchone()[0])  # type: ignore[index]

    def queue_stats(self, *, now: datetime | None = None) -> list[QueueStats]:
        with self._conn() as conn:
            rows = conn.execute(Q["queue_stats"], {"now": now}).fetchall()
            paused = {r[0] for r in conn.execute(Q["paused_queues"]).fetchall()}
        stats = [
            QueueStats(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], paused=r[0] in paused)
            for r in rows
        ]
        known = {s.queue for s in stats}
        stats += [QueueStats(q, 0, 0, 0, 0, 0, 0, None, paused=True) for q in paused - known]
        return sorted(stats, key=lambda s: s.queue)

    def _require_job(self, conn: psycopg.Connection[Any], job_id: int) -> str:
        row = conn.execute(Q["job_state"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFound(f"no job with id {job_id}")
        return str(row[0])

    def retry_job(self, job_id: int, *, now: datetime | None = None) -> Job:
        try:
            with self._tx() as conn:
                row = conn.execute(Q["retry_job"], {"id": job_id, "now": now}).fetchone()
                if row is None:
                    state = self._require_job(conn, job_id)
                    raise InvalidJobState(
                        f"job {job_id} is {state}: only failed or cancelled jobs can be retried"
                    )
        except pg_errors.UniqueViolation:
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
            if (
                conn.execute(Q["cancel_queued"], {"id": job_id, "now": now}).fetchone() is None
                and conn.execute(Q["cancel_running"], {"id": job_id}).fetchone() is None
            ):
                state = self._require_job(conn, job_id)
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
        params["now"] = now
        glue = " AND " if where else " WHERE "
        if action == "retry":
            sql = (
                "UPDATE onthedot_jobs SET state = 'queued', run_at = COALESCE(%(now)s, now()),"
                " attempts = 0, finished_at = NULL, started_at = NULL, worker_id = NULL,"
                " lease_until = NULL, cancel_requested = false"
                f"{where}{glue}state IN ('failed', 'cancelled'){_RETRY_UNIQUE_FREE}"
            )
        elif action == "cancel":
            sql = (
                "UPDATE onthedot_jobs SET state = 'cancelled',"
                f" finished_at = COALESCE(%(now)s, now()){where}{glue}state = 'queued'"
            )
        elif action == "delete":
            sql = f"DELETE FROM onthedot_jobs{where}{glue}state <> 'running'"
        else:
            raise ValueError(f"unknown bulk action {action!r}: use retry, cancel or delete")
        with self._conn() as conn:
            return conn.execute(sql.encode(), params).rowcount

    def set_queue_paused(self, queue: str, paused: bool, actor: str) -> None:
        with self._conn() as conn:
            conn.execute(Q["set_queue_paused"], {"name": queue, "paused": paused, "actor": actor})

    def paused_queues(self) -> set[str]:
        with self._conn() as conn:
            return {r[0] for r in conn.execute(Q["paused_queues"], prepare=True).fetchall()}

    def job_counts(
        self, *, since: datetime, bucket_seconds: int = 3600
    ) -> list[tuple[datetime, str, int]]:
        if isinstance(bucket_seconds, bool) or not isinstance(bucket_seconds, int):
            raise ValueError(f"bucket_seconds must be a positive int, got {bucket_seconds!r}")
        if bucket_seconds < 1:
            raise ValueError(f"bucket_seconds must be a positive int, got {bucket_seconds!r}")
        params = {"since": since, "bucket": bucket_seconds}
        with self._conn() as conn:
            rows = conn.execute(Q["job_counts"], params).fetchall()
        return [(r[0].astimezone(UTC), r[1], int(r[2])) for r in rows]
