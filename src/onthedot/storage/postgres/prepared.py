"""Server-side prepared statements behind a transaction pooler nobody told onthedot about.

Through PgBouncer in `pool_mode = transaction` each transaction may run on another server
connection, and server connections are shared by every client: a statement psycopg prepared
on one is missing on the next (`InvalidSqlStatementName`), or its name is taken there by
another client (`DuplicatePreparedStatement`). With `?pooler=transaction` in the URL onthedot
never prepares (`pool.connection_kwargs`); without it, every worker failed on its first
prepared statement, again after each restart, and ran no job.

A pooler is usually found before that: PgBouncer gives its clients a process id of its own,
so the storage's first connection compares it with the server's (`behind_a_pooler`) and turns
preparing off at once (before any statement could run another client's prepared statement of
the same name and parameter count). Any other pooler is found by its first such error: the
connection stops preparing, the statement runs again unprepared when that is safe (outside a
transaction: the failed statement did nothing), or fails as a lost connection that the caller
retries (inside one); the storage then turns preparing off for every connection and says so
once (`PostgresStorage`).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus

REFUSED = (pg_errors.DuplicatePreparedStatement, pg_errors.InvalidSqlStatementName)


def refused(exc: psycopg.Error) -> bool:
    """Whether `exc` says a prepared statement is missing or not the one meant (another
    client's of the same name: "bind message supplies 14 parameters, but prepared statement
    "_pg3_0" requires 0")."""
    return isinstance(exc, REFUSED) or (
        isinstance(exc, pg_errors.ProtocolViolation) and "prepared statement" in str(exc)
    )


def behind_a_pooler(conn: psycopg.Connection[Any]) -> bool:
    """Whether `conn` reaches the server through a pooler: PgBouncer gives its clients a
    process id of its own making, not the one of the server process that answers."""
    row = conn.execute("SELECT pg_backend_pid()", prepare=False).fetchone()
    return row is not None and row[0] != conn.info.backend_pid


def pooler_warning(display: str, error: str | None) -> str:
    """The line said once when a pooler the URL does not name was found."""
    sign = (
        f"refused a prepared statement ({error})"
        if error
        else "answers through a connection pooler (its process id differs from the one "
        "the connection was given)"
    )
    return (
        f"PostgreSQL at {display} {sign}: onthedot sends unprepared statements from now on, "
        "which every pool mode takes. If the pooler pools transactions (PgBouncer's "
        "pool_mode = transaction), add ?pooler=transaction to the database URL to say so (and "
        "direct_url=... for LISTEN, see docs/scaling.md)"
    )


class PoolerSafeCursor(psycopg.Cursor[Any]):
    """A cursor that survives the first refused prepared statement of its connection."""

    def execute(
        self,
        query: Any,
        params: Any = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> PoolerSafeCursor:
        try:
            super().execute(query, params, prepare=prepare, binary=binary)
        except psycopg.Error as exc:
            if not refused(exc):
                raise
            conn = self.connection
            conn.prepare_threshold = None  # this connection prepares nothing from now on
            refused_on(conn, exc)
            if conn.info.transaction_status != TransactionStatus.IDLE:
                # In a transaction, now aborted: the caller retries it, like a lost connection.
                raise psycopg.OperationalError(str(exc).strip()) from exc
            super().execute(query, params, prepare=False, binary=binary)
        return self


def refused_on(conn: psycopg.Connection[Any], exc: Exception) -> None:
    """Mark `conn`: its storage turns preparing off for all its connections (`refusal`)."""
    conn.onthedot_refused = str(exc).strip().splitlines()[0]  # type: ignore[attr-defined]


def refusal(conn: psycopg.Connection[Any]) -> str | None:
    """The refused statement's error if `conn` met one, else None."""
    found = getattr(conn, "onthedot_refused", None)
    return found if isinstance(found, str) else None
