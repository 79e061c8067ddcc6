"""What differs between the databases inside a verb's body: placeholders, how instants and
JSON are stored, who computes "now", how a statement runs once per row or once for many rows.

Everything else (which statements, in which transaction, how rows become domain values) is
written once in `storage/sql/`. A backend's `queries.sql` has the same query names."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

# A DB-API connection of the backend (sqlite3.Connection, psycopg.Connection): the core hands
# it back to the dialect, never looks inside.
Conn = Any
Row = Any  # a tuple-like row

# How long one of onthedot's own transactions may sit idle, its process deciding what to write
# next, before PostgreSQL ends it and frees its row locks: a process stopped in the middle of
# one (SIGSTOP, a paused VM, a swap storm) must not stall the schedules and jobs it locked for
# longer. Those idle gaps are onthedot's own work between two statements (milliseconds), never
# user code. The sync of declared schedules plans every one of them inside its transaction, so
# it gets `SYNC_IDLE_PER_ROW` more per schedule. docs/reliability.md.
IDLE_LIMIT = 5.0
SYNC_IDLE_PER_ROW = 0.001


class Dialect(ABC):
    """Codecs and statement runners of one database; stateless."""

    name: str
    q: Mapping[str, str]  # the named blocks of queries.sql
    now_sql: str  # the SQL expression for "now" given the `now` parameter
    search_ascii: bool  # JSON text of arguments is stored ASCII-only
    unique_violation: tuple[type[Exception], ...]

    @abstractmethod
    def param(self, name: str) -> str:
        """The placeholder of a named parameter."""

    @abstractmethod
    def now(self, now: datetime | None) -> Any:
        """The `now` parameter: the fixed time, or what makes the database use its clock."""

    @abstractmethod
    def instant(self, value: datetime | None) -> Any:
        """An instant as stored (None stays None)."""

    @abstractmethod
    def slot(self, value: datetime) -> Any:
        """A slot instant as stored (whole seconds)."""

    @abstractmethod
    def dt(self, value: Any) -> datetime:
        """A stored instant as an aware datetime."""

    def opt_dt(self, value: Any) -> datetime | None:
        return None if value is None else self.dt(value)

    @abstractmethod
    def json_in(self, value: Any) -> Any:
        """A stored JSON value, decoded (None stays None)."""

    @abstractmethod
    def array(self, values: Sequence[Any]) -> Any:
        """A list parameter (`IN`/`ANY` of a query)."""

    @abstractmethod
    def flag(self, value: bool) -> Any:
        """A boolean parameter."""

    @abstractmethod
    def run(
        self, conn: Conn, sql: str, params: Mapping[str, Any], prepare: bool | None = None
    ) -> Any:
        """Execute one statement; return the cursor. `prepare` (PostgreSQL): True at once,
        False never, None after a few runs (psycopg's default)."""

    def estimate(self, conn: Conn, sql: str, params: Mapping[str, Any]) -> int | None:
        """The planner's estimate of the rows a query returns; None where there is none."""
        return None

    @abstractmethod
    def allow_idle(self, conn: Conn, seconds: float) -> None:
        """Let the open transaction sit idle at most `seconds` before the database ends it
        (PostgreSQL; SQLite has no server to do so)."""

    @abstractmethod
    def batch(
        self, conn: Conn, name: str, rows: Sequence[Mapping[str, Any]], shared: Mapping[str, Any]
    ) -> tuple[int, list[Row]]:
        """Run the named statement for every row (its keys as parameters, with `shared`):
        one statement per row, or one over arrays of each key. Returns (rowcount, rows)."""
