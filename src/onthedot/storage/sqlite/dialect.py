"""SQLite's dialect: `:name` parameters, instants as REAL epoch seconds, JSON as text, and the
host clock read here (SQLite has no clock of its own worth the name)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from onthedot.domain.nesting import load_stored
from onthedot.storage.sql.dialect import Conn, Dialect, Row
from onthedot.storage.sqlfile import load_queries
from onthedot.storage.sqlite.timeconv import from_ts, opt_ts, slot_ts


class SqliteDialect(Dialect):
    name = "sqlite"
    q = load_queries("sqlite")
    now_sql = ":now"
    search_ascii = True
    unique_violation = (sqlite3.IntegrityError,)

    def param(self, name: str) -> str:
        return f":{name}"

    def now(self, now: datetime | None) -> float:
        return now.timestamp() if now is not None else time.time()

    def instant(self, value: datetime | None) -> float | None:
        return opt_ts(value)

    def slot(self, value: datetime) -> int:
        return slot_ts(value)

    def dt(self, value: Any) -> datetime:
        return from_ts(value)

    def json_in(self, value: Any) -> Any:
        return None if value is None else load_stored(value)

    def array(self, values: Sequence[Any]) -> str:
        return json.dumps(list(values))

    def flag(self, value: bool) -> int:
        return int(value)

    def run(
        self, conn: Conn, sql: str, params: Mapping[str, Any], prepare: bool | None = None
    ) -> Any:
        return conn.execute(sql, params)

    def allow_idle(self, conn: Conn, seconds: float) -> None:
        """Nothing: no server ends a SQLite transaction (its write lock is the file's)."""

    def batch(
        self, conn: Conn, name: str, rows: Sequence[Mapping[str, Any]], shared: Mapping[str, Any]
    ) -> tuple[int, list[Row]]:
        sql = self.q[name]
        count = 0
        out: list[Row] = []
        for row in rows:
            cur = conn.execute(sql, {**shared, **row})
            if cur.description is not None:
                out.extend(cur.fetchall())
            count += max(cur.rowcount, 0)
        return count, out
