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
            with storage._conn() as conn:
                seen.append(conn.info.backend_pid)
        assert seen == [backends[2]] * 4
        # Last in, first out: the least recently used come last (the pool shrinks those).
        held = [pool.getconn(timeout=10) for _ in range(3)]
        assert [c.info.backend_pid for c in held] == backends[::-1]
        for conn in held:
            pool.putconn(conn)
    finally:
        storage.close()
