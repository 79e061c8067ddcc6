"""SQLite backend: stdlib sqlite3, WAL, BEGIN IMMEDIATE for writes, retry on busy.

One connection per thread. Writes inside one process are serialized by a lock before they reach
SQLite, so threads never spin on SQLITE_BUSY; between processes the busy timeout and a retry
loop around `BEGIN IMMEDIATE` do the waiting. SQLite's clock is the host clock: `now` is read
here, once per verb, unless a manual clock provides it.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, Self

from onthedot.clock import Clock, SystemClock, backoff_delay
from onthedot.domain.errors import ConfigurationError, DatabaseUnavailable
from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import DueRow, TickPlan
from onthedot.domain.nesting import load_stored
from onthedot.storage.interface import CallerConnection, EnqueuedSlot
from onthedot.storage.sql.core import SqlStorage
from onthedot.storage.sql.dialect import Row
from onthedot.storage.sqlfile import load_migrations
from onthedot.storage.sqlite.dialect import SqliteDialect
from onthedot.storage.sqlite.insert import insert_job
from onthedot.storage.sqlite.tick import write_tick
from onthedot.storage.sqlite.timeconv import from_ts, opt_dt, slot_ts, to_ts
from onthedot.storage.sqlite.wakeup import SqliteWakeup
from onthedot.storage.wakeup import Wakeup

_D = SqliteDialect()
Q = _D.q
_BUSY_RETRY_SECONDS = 60.0


def _locked(exc: sqlite3.OperationalError) -> bool:
    """SQLite's "database is locked" / "database is busy": worth trying again."""
    return "locked" in str(exc) or "busy" in str(exc)


class SqliteStorage(SqlStorage):
    backend = "sqlite"
    d = _D

    def __init__(
        self,
        path: str,
        *,
        options: dict[str, str] | None = None,
        auto_migrate: bool = True,
        clock: Clock | None = None,
    ):
        self.clock = clock or SystemClock()
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
                # Never created here, and no retry brings it: a configuration error (a worker
                # stops at once instead of waiting for it).
                raise ConfigurationError(
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
                # Connections opening a new file at the same moment can make the switch to WAL
                # fail at once with "database is locked" (SQLite returns it there without
                # waiting on the busy timeout: 13-14 of 200 starts of 5 threads,
                # tests/storage/test_migrations.py): retried as a write's BEGIN is.
                self._until_unlocked(conn, "PRAGMA journal_mode=WAL", self.busy_timeout)
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

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._tx()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads (autocommit)."""
        conn = self._raw()
        if not self._schema_ready:
            self._ensure_schema()
        try:
            if self.memory:
                with self._write_lock:
                    yield conn
            else:
                yield conn
        except sqlite3.OperationalError as exc:
            self._raise_unavailable(exc)
            raise

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
                conn.execute("COMMIT")
            except BaseException as exc:
                self._rollback(conn)
                if isinstance(exc, sqlite3.OperationalError):
                    self._raise_unavailable(exc)
                raise

    def _rollback(self, conn: sqlite3.Connection) -> None:
        """End a failed transaction. SQLite may have rolled it back already (a full disk
        does); a connection that cannot roll back is dropped, never reused mid-transaction."""
        if not conn.in_transaction:
            return
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            if self.memory:
                return  # the one connection holds the whole database: keep it
            if getattr(self._local, "conn", None) is conn:
                self._local.conn = None  # this thread opens a fresh one next time
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _raise_unavailable(self, exc: sqlite3.OperationalError) -> None:
        """A write the file cannot take for now (read-only, full, an I/O error) is raised as
        an outage: a worker waits and says why, keeping what it holds. Else nothing."""
        unavailable = self._unavailable(exc)
        if unavailable is not None:
            raise unavailable from exc

    def _unavailable(self, exc: sqlite3.OperationalError) -> DatabaseUnavailable | None:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code == sqlite3.SQLITE_READONLY or "readonly" in str(exc):
            return DatabaseUnavailable(
                f"SQLite database {self.path!r} is read-only ({exc}): give this process write "
                "access to the file and its folder"
            )
        if code == sqlite3.SQLITE_FULL:
            return DatabaseUnavailable(
                f"SQLite database {self.path!r} is full ({exc}): free space on its disk; "
                "writes resume once there is room"
            )
        if code == sqlite3.SQLITE_IOERR:
            return DatabaseUnavailable(
                f"SQLite database {self.path!r} failed to read or write its file ({exc}): "
                "check its disk (space, errors)"
            )
        return None

    def _begin(self, conn: sqlite3.Connection) -> None:
        try:
            self._until_unlocked(conn, "BEGIN IMMEDIATE", _BUSY_RETRY_SECONDS)
        except sqlite3.OperationalError as exc:
            if _locked(exc):
                raise DatabaseUnavailable(
                    f"SQLite database {self.path!r} stayed locked for "
                    f"{_BUSY_RETRY_SECONDS:.0f}s: another process holds a long write"
                ) from exc
            raise DatabaseUnavailable(f"SQLite database {self.path!r}: {exc}") from exc

    @staticmethod
    def _until_unlocked(conn: sqlite3.Connection, sql: str, seconds: float) -> None:
        """Run `sql`, again after a short, growing pause while SQLite says the database is
        locked or busy, for up to `seconds`; the error is raised when that time is up, and at
        once if it is another."""
        deadline = time.monotonic() + seconds
        tries = 0
        while True:
            try:
                conn.execute(sql)
                return
            except sqlite3.OperationalError as exc:
                if not _locked(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(backoff_delay(tries, first=0.005, cap=0.2) * (1 + random.random()))
            tries += 1

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
        with self._read() as conn:
            conn.execute("SELECT 1")

    def db_now(self) -> datetime:
        """The storage's now: its clock's fixed time (a ManualClock's), else the database's
        (on SQLite, this process's wall clock, as every SQLite verb uses)."""
        return self._fixed() or from_ts(time.time())

    # -- schema -------------------------------------------------------------------------------
    def migrate(self, *, first_use: bool = False) -> list[int]:
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

    def at(self, now: datetime | None) -> Self:
        if self.memory:
            self._raw()  # a view must share the one in-memory database, so make it first
        return super().at(now)

    def wakeup(self, queues: Collection[str]) -> Wakeup:
        return SqliteWakeup(self.path)

    def schema_version(self) -> tuple[int, int]:
        latest = len(load_migrations("sqlite"))
        conn = self._raw()
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'onthedot_schema_version'"
        ).fetchone()
        if not exists:
            return 0, latest
        return int(conn.execute(Q["schema_version"]).fetchone()[0]), latest

    # -- what SQLite does its own way -------------------------------------------------------
    def _insert_job(self, conn: sqlite3.Connection, job: NewJob, now: datetime | None) -> int:
        return insert_job(conn, job, _D.now(now))

    def _insert_many(
        self, conn: sqlite3.Connection, jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        # One executemany. Inside this write transaction rowids are handed out consecutively,
        # so the ids are the last n.
        ts = _D.now(now)
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

    def _enqueue_in(
        self, connection: CallerConnection, jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        raise ValueError(
            "enqueue(connection=...) needs PostgreSQL: SQLite has no shared transactions"
        )

    async def _aenqueue_in(
        self, connection: CallerConnection, jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        return self._enqueue_in(connection, jobs, now)

    def _notify(self, conn: sqlite3.Connection, queues: Iterable[str]) -> None:
        """Nothing to send: other processes see the commit through `PRAGMA data_version`."""

    def _due_rows(self, raw: list[Row]) -> Iterable[DueRow]:
        loads = load_stored
        return [
            DueRow(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                from_ts(r[5]),
                opt_dt(r[6]),
                bool(r[7]),
                opt_dt(r[8]),
                None if r[9] is None else loads(r[9]),
                int(r[10]),
            )
            for r in raw
        ]

    def _write_tick(
        self, conn: sqlite3.Connection, plans: Sequence[TickPlan], generation: int, now: Any
    ) -> tuple[list[EnqueuedSlot], list[tuple[str, datetime]]]:
        return write_tick(conn, plans, generation, now)


def _split_statements(sql: str) -> list[str]:
    """Split a migration into statements; a trigger's body (BEGIN ... END) stays whole, as
    sqlite3.complete_statement tells (migrations contain no string semicolons)."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    statements: list[str] = []
    pending = ""
    for part in "\n".join(lines).split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip().rstrip(";"))
            pending = ""
    if pending.strip(" \n;"):
        statements.append(pending.strip().rstrip(";"))
    return statements
