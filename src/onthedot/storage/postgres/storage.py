"""PostgreSQL backend: psycopg 3 with a pool, batch claims with SKIP LOCKED, LISTEN/NOTIFY."""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, Self

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg_pool import PoolTimeout

from onthedot.clock import Clock, SystemClock
from onthedot.domain.errors import ConfigurationError, DatabaseUnavailable
from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import DueRow, TickPlan
from onthedot.redaction import scrub
from onthedot.storage.interface import CallerConnection, EnqueuedSlot
from onthedot.storage.postgres.copy import enqueue_copy
from onthedot.storage.postgres.dialect import PostgresDialect
from onthedot.storage.postgres.pool import (
    LifoPool,
    configure_connection,
    configure_for,
    connection_kwargs,
    one_line,
)
from onthedot.storage.postgres.prepared import behind_a_pooler, pooler_warning, refusal
from onthedot.storage.postgres.refusals import (
    POOL_NAME,
    QUIET_POOL,
    connect_failure,
    describe_connect_error,
)
from onthedot.storage.postgres.rows import aenqueue_rows, enqueue_rows
from onthedot.storage.postgres.tick import write_tick
from onthedot.storage.postgres.wakeup import PostgresWakeup
from onthedot.storage.sql.core import SqlStorage
from onthedot.storage.sql.dialect import IDLE_LIMIT, Row
from onthedot.storage.sqlfile import latest_version, load_functions, load_migrations
from onthedot.storage.wakeup import Wakeup

# The driver errors `_translate` turns into onthedot's (anything else passes through).
_DRIVER_ERRORS = (
    PoolTimeout,
    pg_errors.ReadOnlySqlTransaction,
    pg_errors.InsufficientPrivilege,
    psycopg.DataError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    psycopg.InternalError,
)
_IDLE = TransactionStatus.IDLE
_D = PostgresDialect()
Q = _D.q
_MIGRATION_LOCK = 7_283_911_044  # advisory lock key serializing concurrent `migrate` runs


class PostgresStorage(SqlStorage):
    backend = "postgresql"
    d = _D

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        display: str = "",
        clock: Clock | None = None,
        pooler: str = "none",
        direct_url: str | None = None,
    ) -> None:
        self.clock = clock or SystemClock()
        self.url = url
        self.display = display or url
        # Behind a transaction pooler (PgBouncer's pool_mode = transaction) each transaction
        # may run on another server connection: no server-side prepared statements, and LISTEN
        # only on a direct connection (else the claimer polls). `migrate` uses the direct URL
        # too when there is one. docs/scaling.md.
        self.pooler = pooler
        self.direct_url = direct_url
        self._pool = LifoPool(
            url,
            min_size=min_size,
            max_size=max_size,
            open=False,
            kwargs=connection_kwargs(pooler),
            configure=configure_for(pooler),
            timeout=10.0,
            name=POOL_NAME,
        )
        self._open_lock = threading.Lock()
        self._opened = False
        self._unprepared = pooler == "transaction"  # prepared statements off (prepared.py)
        timeout = conninfo_to_dict(url).get("connect_timeout")
        self._connect_timeout = int(timeout) if timeout else 10
        logging.getLogger("psycopg.pool").addFilter(QUIET_POOL)  # once: the same filter object

    # -- connections --------------------------------------------------------------------------
    def _ensure_open(self) -> None:
        if self._opened:
            return
        with self._open_lock:
            if not self._opened:
                self._probe()
                self._pool.open(wait=False)
                self._opened = True

    def _probe(self) -> None:
        """One direct connection before the pool opens: a server that refuses (no such
        database or role, wrong password, too many clients) or cannot be reached is reported
        at once, with its reason, instead of after the pool's timeout and its retries."""
        try:
            with psycopg.connect(self.url, connect_timeout=self._connect_timeout) as conn:
                if not self._unprepared and behind_a_pooler(conn):
                    self._stop_preparing(None)
        except psycopg.OperationalError as exc:
            raise self._refused(exc) from None  # libpq's text may quote the URL: not chained

    def _write(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._read()  # autocommit: one statement is its own transaction

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection[Any]]:
        # The hot path of every statement (a single enqueue is one of these around one
        # INSERT): the pool's own `connection()` exits `with conn`, which takes the
        # connection's lock to commit an autocommit connection that has nothing to commit.
        # Here the commit (or, on an error, the rollback) happens only when a transaction is
        # open; `putconn` discards a broken connection as before.
        if not self._opened:
            self._ensure_open()
        pool = self._pool
        try:
            conn = pool.getconn()
            if self._unprepared:
                conn.prepare_threshold = None
            try:
                yield conn
            except BaseException:
                if conn.pgconn.transaction_status != _IDLE and not conn.closed:
                    try:
                        conn.rollback()
                    except psycopg.Error:
                        pass  # putconn discards a connection it cannot reset
                raise
            else:
                if conn.pgconn.transaction_status != _IDLE:
                    conn.commit()
            finally:
                if not self._unprepared and (error := refusal(conn)) is not None:
                    self._stop_preparing(error)
                pool.putconn(conn)
        except _DRIVER_ERRORS as exc:
            raise self._translate(exc) from exc

    def _stop_preparing(self, error: str | None) -> None:
        """A pooler the URL does not name (`prepared.py`): no prepared statement from now on,
        said once."""
        self._unprepared = True
        if isinstance(self._pool.kwargs, dict):  # the connections opened from now on
            self._pool.kwargs["prepare_threshold"] = None
        logging.getLogger("onthedot.storage").warning(pooler_warning(self.display, error))

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Driver errors as onthedot's: one line each, naming what to do."""
        try:
            yield
        except _DRIVER_ERRORS as exc:
            raise self._translate(exc) from exc

    def _refused(self, exc: BaseException) -> DatabaseUnavailable:
        """Why connecting failed, in one line without a secret of the URLs."""
        found = connect_failure(self.display, exc)  # DatabaseRefused: only a change helps
        return type(found)(self._scrub(str(found)))

    def _scrub(self, text: str) -> str:
        return scrub(text, self.url, self.direct_url)

    def _translate(self, exc: Exception) -> Exception:
        """The driver's error as onthedot's, its text scrubbed of the URLs' secrets."""
        found = self._translated(exc)
        return type(found)(self._scrub(str(found)))

    def _translated(self, exc: Exception) -> Exception:
        if isinstance(exc, PoolTimeout):
            last = self._pool.last_error
            if last is not None and describe_connect_error(self.display, last)[1]:
                return DatabaseUnavailable(describe_connect_error(self.display, last)[0])
            return DatabaseUnavailable(
                f"PostgreSQL at {self.display} is unreachable (no connection within "
                f"{self._pool.timeout:.0f}s): check the host, port and that the server runs"
            )
        if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
            # A standby, or default_transaction_read_only: wait like an outage (a failover
            # promotes a new primary) and say so.
            return DatabaseUnavailable(
                f"PostgreSQL at {self.display} is read-only ({one_line(exc)}): point onthedot "
                "at the primary, or turn off default_transaction_read_only"
            )
        if isinstance(exc, pg_errors.InsufficientPrivilege):
            return ConfigurationError(
                f"PostgreSQL at {self.display} refused: {one_line(exc)}; onthedot's role needs "
                "to read and write its tables (and create them, for `onthedot migrate`)"
            )
        if isinstance(exc, psycopg.DataError):  # a value it cannot hold, e.g. a NUL in a filter
            return ValueError(f"PostgreSQL cannot take this value: {one_line(exc)}")
        # OperationalError; InternalError/InterfaceError: the protocol broke mid-statement
        # (seen through PgBouncer while the server restarts, "received 2 results from command
        # 'BEGIN'"): the connection is lost, like an outage; the caller retries.
        return DatabaseUnavailable(f"PostgreSQL at {self.display} failed: {one_line(exc)}")

    @contextmanager
    def _migration_tx(self) -> Iterator[psycopg.Connection[Any]]:
        """A transaction for `migrate`: on the direct URL when there is one (DDL and its lock
        bypass the pooler), else from the pool (the lock is transaction-scoped, so a
        transaction pooler carries it)."""
        if self.direct_url is None:
            with self._tx() as conn:
                yield conn
            return
        try:
            direct = psycopg.connect(self.direct_url, autocommit=True)
        except psycopg.OperationalError as exc:
            raise self._refused(exc) from None  # libpq's text may quote the URL: not chained
        with self._errors(), direct as conn:
            configure_connection(conn)
            with conn.transaction():
                _D.allow_idle(conn, IDLE_LIMIT)
                yield conn

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Any]]:
        with self._read() as conn, conn.transaction():
            _D.allow_idle(conn, IDLE_LIMIT)
            yield conn

    def at(self, now: datetime | None) -> Self:
        self._ensure_open()  # a view shares the pool: open it once, here, for both
        return super().at(now)

    def wakeup(self, queues: Collection[str]) -> Wakeup:
        if self.pooler == "transaction" and self.direct_url is None:
            return Wakeup()  # no LISTEN through the pooler: the claimer polls (poll_interval)
        return PostgresWakeup(self._connect_listener, set(queues))

    def _connect_listener(self) -> psycopg.Connection[Any]:
        """A dedicated autocommit connection for LISTEN (not from the pool), to the server
        itself when a direct URL is configured."""
        try:
            return psycopg.connect(self.direct_url or self.url, autocommit=True)
        except psycopg.OperationalError as exc:
            raise self._refused(exc) from None  # libpq's text may quote the URL: not chained

    def close(self) -> None:
        if self._opened:
            self._pool.close()
            self._opened = False

    def ping(self) -> None:
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError as exc:
            raise self._refused(exc) from None  # libpq's text may quote the URL: not chained

    def db_now(self) -> datetime:
        """The storage's now: its clock's fixed time (a ManualClock's), else the server's."""
        fixed = self._fixed()
        if fixed is not None:
            return fixed
        with self._read() as conn:
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

    def migrate(self, *, first_use: bool = False) -> list[int]:
        if first_use:
            return []  # PostgreSQL is migrated by `onthedot migrate`, never on first use
        applied: list[int] = []
        with self._migration_tx() as conn:
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
                current = version
            if current == latest_version("postgres"):
                # At the latest schema: every function as functions.sql writes it now (the
                # migrations hold their history; see that file).
                conn.execute(load_functions("postgres").encode())
        return applied

    def schema_version(self) -> tuple[int, int]:
        latest = len(load_migrations("postgres"))
        with self._read() as conn:
            exists = conn.execute(
                "SELECT to_regclass('onthedot_schema_version') IS NOT NULL"
            ).fetchone()
            if not exists or not exists[0]:
                return 0, latest
            row = conn.execute(Q["schema_version"]).fetchone()
        return (int(row[0]) if row else 0), latest

    # -- what PostgreSQL does its own way -----------------------------------------------------
    def _insert_job(self, conn: psycopg.Connection[Any], job: NewJob, now: datetime | None) -> int:
        return enqueue_rows(conn, [job], now)[0]

    def _insert_many(
        self, conn: psycopg.Connection[Any], jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        return enqueue_copy(conn, jobs, now)

    def _enqueue_in(
        self, connection: CallerConnection, jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        if isinstance(connection, psycopg.AsyncConnection):
            raise TypeError(
                "enqueue(connection=...) got a psycopg AsyncConnection: "
                "use `await fn.aenqueue(..., connection=...)` in async code"
            )
        return enqueue_rows(connection, jobs, now) if jobs else []

    async def _aenqueue_in(
        self, connection: CallerConnection, jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        if not isinstance(connection, psycopg.AsyncConnection):  # a sync connection, as enqueue
            return self._enqueue_in(connection, jobs, now)
        return await aenqueue_rows(connection, jobs, now) if jobs else []

    def _notify(self, conn: psycopg.Connection[Any], queues: Iterable[str]) -> None:
        queues = list(queues)
        if queues:
            conn.execute(Q["notify_queues"], {"queues": queues})

    def _due_rows(self, raw: list[Row]) -> Iterable[DueRow]:
        # Rows are made one at a time as the decider reads them, so each dies young.
        return map(DueRow._make, raw)

    def _write_tick(
        self, conn: psycopg.Connection[Any], plans: Sequence[TickPlan], generation: int, now: Any
    ) -> tuple[list[EnqueuedSlot], list[tuple[str, datetime]]]:
        return write_tick(conn, plans, generation, now)
