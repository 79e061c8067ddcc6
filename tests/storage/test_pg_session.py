"""The session settings of onthedot's PostgreSQL connections: JIT is off on direct connections
(issue 16, item 4: with 10M finished jobs the prepared claim's generic plan is estimated above
`jit_above_cost`, and each claim spent ~200 ms compiling it); behind a transaction pooler
nothing but the time zone is set, since a SET would leak to the pooler's other clients."""

from __future__ import annotations

import psycopg

from onthedot import App


def _setting(app: App, name: str) -> str:
    app.migrate()
    with app.storage._read() as conn:  # type: ignore[attr-defined]
        row = conn.execute(f"SHOW {name}").fetchone()
    assert row is not None
    return str(row[0])


def test_direct_connections_run_without_jit(pg_url: str) -> None:
    app = App(pg_url, log_events=False)
    try:
        assert _setting(app, "jit") == "off"
        assert _setting(app, "TimeZone") == "UTC"
    finally:
        app.close()


def test_behind_a_transaction_pooler_only_the_time_zone_is_set(pg_url: str) -> None:
    with psycopg.connect(pg_url) as plain:
        row = plain.execute("SHOW jit").fetchone()
    assert row is not None
    sep = "&" if "?" in pg_url else "?"
    app = App(f"{pg_url}{sep}pooler=transaction", log_events=False)
    try:
        assert _setting(app, "jit") == row[0]
        assert _setting(app, "TimeZone") == "UTC"
    finally:
        app.close()
