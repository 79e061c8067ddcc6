"""The PostgreSQL storage's pool hands out the most recently returned connection first."""

from __future__ import annotations

from onthedot.storage.postgres.storage import PostgresStorage


def test_pool_reuses_the_most_recently_returned_connection(pg_url: str) -> None:
    storage = PostgresStorage(pg_url, min_size=1, max_size=3)
    storage._ensure_open()
    pool = storage._pool
    try:
        first, second, third = (pool.getconn(timeout=10) for _ in range(3))
        backends = [c.info.backend_pid for c in (first, second, third)]
        assert len(set(backends)) == 3
        for conn in (first, second, third):
            pool.putconn(conn)
        # Sequential use keeps coming back to the last one returned, not rotating through all.
        seen = []
        for _ in range(4):
            with storage._read() as conn:
                seen.append(conn.info.backend_pid)
        assert seen == [backends[2]] * 4
        # Last in, first out: the least recently used come last (the pool shrinks those).
        held = [pool.getconn(timeout=10) for _ in range(3)]
        assert [c.info.backend_pid for c in held] == backends[::-1]
        for conn in held:
            pool.putconn(conn)
    finally:
        storage.close()


def test_reconnect_attempts_pause_at_most_two_seconds() -> None:
    """After losing the server, the pool's reconnect pauses grow (1 s, then about 2 s) but never
    past the bound, so a server that comes back is found within seconds, not after a pause
    that doubled through the whole outage."""
    from onthedot.storage.postgres import pool as pg
    from onthedot.storage.postgres.storage import PostgresStorage

    assert pg._Attempt is not None, "psycopg_pool no longer offers AttemptWithBackoff"
    attempt = pg._CappedAttempt(timeout=300.0)
    delays = []
    for second in range(12):  # twelve failed attempts, as in a minute-long outage
        attempt.update_delay(float(second))
        delays.append(attempt.delay)
    assert 0.8 <= delays[0] <= 1.2
    assert all(d <= pg._RECONNECT_EVERY for d in delays)
    assert all(d >= pg._RECONNECT_EVERY / 2 for d in delays[1:])
    # The pool makes its attempts with the bounded class.
    pool = PostgresStorage("postgresql://127.0.0.1:1/none")._pool
    assert type(pool)._add_connection is not pg.ConnectionPool._add_connection


def test_the_private_hooks_of_psycopg_pool_still_exist(pg_url: str) -> None:
    """pool.py changes psycopg_pool's policy through its private methods and attributes; the
    version range in pyproject.toml is the one these exist in. If a release renames one, the
    pool would silently fall back to psycopg_pool's own policy: this test says which is gone."""
    from psycopg_pool import ConnectionPool

    for method in ("_connect", "_maybe_grow_pool", "_add_connection", "_get_ready_connection"):
        assert callable(getattr(ConnectionPool, method, None)), f"ConnectionPool.{method} is gone"
    storage = PostgresStorage(pg_url, min_size=1, max_size=2)
    storage._ensure_open()
    try:
        for attribute in ("_nconns", "_waiting", "_pool"):
            assert hasattr(storage._pool, attribute), f"ConnectionPool().{attribute} is gone"
    finally:
        storage.close()
