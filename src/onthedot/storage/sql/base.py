"""The base every SQL storage builds on: its dialect, its clock, its connections, and the few
operations each database does its own way (bulk insert, notification, the tick's write)."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Self

from onthedot.clock import Clock, ManualClock, SystemClock
from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import DueRow, TickPlan
from onthedot.storage.interface import CallerConnection, EnqueuedSlot
from onthedot.storage.sql.dialect import Conn, Dialect, Row

COMPACT_AT = 2000  # count rows beyond one per group that make a statistics read compact them


class SqlBase(ABC):
    d: Dialect
    clock: Clock = SystemClock()

    # -- connections ------------------------------------------------------------------------
    @abstractmethod
    def _read(self) -> AbstractContextManager[Conn]:
        """A connection for reads."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Conn]:
        """A connection for one writing statement (its own transaction)."""

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Conn]:
        """A connection inside a write transaction, committed on exit."""

    # -- what each database does its own way -------------------------------------------------
    @abstractmethod
    def _insert_job(self, conn: Conn, job: NewJob, now: datetime | None) -> int:
        """Insert one job; a taken unique_key yields the id of the job holding it."""

    @abstractmethod
    def _insert_many(self, conn: Conn, jobs: Sequence[NewJob], now: datetime | None) -> list[int]:
        """Insert many plain jobs (no unique_key) at once; their ids in input order."""

    @abstractmethod
    def _enqueue_in(
        self, connection: CallerConnection, jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        """Insert jobs inside the caller's own transaction (never committing)."""

    @abstractmethod
    async def _aenqueue_in(
        self, connection: CallerConnection, jobs: Sequence[NewJob], now: datetime | None
    ) -> list[int]:
        """`_enqueue_in` in the caller's async transaction (PostgreSQL: an AsyncConnection)."""

    @abstractmethod
    def _notify(self, conn: Conn, queues: Iterable[str]) -> None:
        """Tell waiting workers that jobs of these queues are ready."""

    @abstractmethod
    def _due_rows(self, raw: list[Row]) -> Iterable[DueRow]:
        """Due rows as read by `tick_due`, decoded."""

    @abstractmethod
    def _write_tick(
        self, conn: Conn, plans: Sequence[TickPlan], generation: int, now: Any
    ) -> tuple[list[EnqueuedSlot], list[tuple[str, datetime]]]:
        """Write a tick's decisions: slot history, jobs, ledger rows. `now` as stored."""

    def at(self, now: datetime | None) -> Self:
        """This storage, sharing its connections, with "now" fixed at `now` (None: the
        database clock)."""
        view = copy.copy(self)
        view.clock = SystemClock() if now is None else ManualClock(now)
        return view

    # -- the job counts -------------------------------------------------------------------
    def _compact_counts(self) -> int:
        """Fold the job count rows into one per (queue, name, state) group; the groups kept."""
        with self._write() as conn:
            self._run(conn, "compact_minutes", {})
            return int(self._run(conn, "compact_counts", {}).rowcount)

    def _compact_beyond(self, excess: int) -> None:
        """Compact the counts when a read summed more than COMPACT_AT rows beyond one per
        group, so reads stay fast where no maintenance pass runs."""
        if excess > COMPACT_AT:
            self._compact_counts()

    # -- helpers ----------------------------------------------------------------------------
    def _fixed(self, now: datetime | None = None) -> datetime | None:
        """The time a verb uses: a given one (a record's own), else the clock's fixed time
        (None: the database's)."""
        return now if now is not None else self.clock.fixed_now()

    def _run(
        self, conn: Conn, name: str, params: Mapping[str, Any], prepare: bool | None = None
    ) -> Any:
        return self.d.run(conn, self.d.q[name], params, prepare)

    def _one(self, conn: Conn, name: str, params: Mapping[str, Any]) -> Row | None:
        return self.d.run(conn, self.d.q[name], params).fetchone()
