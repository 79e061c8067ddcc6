"""PostgreSQL's dialect: psycopg's `%(name)s` parameters, timestamptz and jsonb stored natively,
`now()` as the clock (a None `now` parameter), arrays for statements over many rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from psycopg import errors as pg_errors

from onthedot.storage.sql.dialect import Conn, Dialect, Row
from onthedot.storage.sqlfile import load_queries

_ALLOW_IDLE = b"SELECT set_config('idle_in_transaction_session_timeout', %s, true)"


class PostgresDialect(Dialect):
    name = "postgres"
    q = load_queries("postgres")
    now_sql = "COALESCE(%(now)s::timestamptz, now())"
    search_ascii = False
    unique_violation = (pg_errors.UniqueViolation,)

    def param(self, name: str) -> str:
        return f"%({name})s"

    def now(self, now: datetime | None) -> datetime | None:
        return now

    def instant(self, value: datetime | None) -> datetime | None:
        return value

    def slot(self, value: datetime) -> datetime:
        return value

    def dt(self, value: Any) -> datetime:
        assert isinstance(value, datetime)
        return value

    def json_in(self, value: Any) -> Any:
        return value

    def array(self, values: Sequence[Any]) -> list[Any]:
        return list(values)

    def flag(self, value: bool) -> bool:
        return value

    def estimate(self, conn: Conn, sql: str, params: Mapping[str, Any]) -> int | None:
        plan = conn.execute(("EXPLAIN (FORMAT JSON) " + sql).encode(), params).fetchone()[0]
        return int(plan[0]["Plan"]["Plan Rows"])

    def run(
        self, conn: Conn, sql: str, params: Mapping[str, Any], prepare: bool | None = None
    ) -> Any:
        return conn.execute(sql.encode(), params, prepare=prepare)

    def allow_idle(self, conn: Conn, seconds: float) -> None:
        # SET LOCAL: it ends with the transaction, so it holds behind a transaction pooler
        # (PgBouncer) and leaves the server connection as it found it.
        conn.execute(_ALLOW_IDLE, (f"{max(1, round(seconds * 1000))}ms",))

    def batch(
        self, conn: Conn, name: str, rows: Sequence[Mapping[str, Any]], shared: Mapping[str, Any]
    ) -> tuple[int, list[Row]]:
        # One statement over arrays: each row key becomes an array parameter (queries.sql
        # unnests them under the same names).
        arrays = {k: [r[k] for r in rows] for k in rows[0]} if rows else {}
        cur = conn.execute(self.q[name].encode(), {**shared, **arrays}, prepare=True)
        found = cur.fetchall() if cur.description is not None else []
        return max(cur.rowcount, 0), found
