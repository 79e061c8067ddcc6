"""Storage backends behind one protocol; `open_storage` picks one from a database URL."""

from __future__ import annotations

from onthedot.clock import Clock
from onthedot.config import parse_database_url
from onthedot.storage.interface import Storage


def open_storage(
    url: str, *, auto_migrate: bool = True, pool_size: int = 10, clock: Clock | None = None
) -> Storage:
    """Build (not connect) the storage for a URL, using `clock` for "now" (None: the system
    clock, so the database decides). Connections open on first use."""
    cfg = parse_database_url(url)
    if cfg.backend == "sqlite":
        from onthedot.storage.sqlite.storage import SqliteStorage

        assert cfg.path is not None
        return SqliteStorage(
            cfg.path, options=dict(cfg.options), auto_migrate=auto_migrate, clock=clock
        )
    from onthedot.storage.postgres.storage import PostgresStorage

    return PostgresStorage(
        cfg.url,
        max_size=pool_size,
        display=cfg.display,
        clock=clock,
        pooler=cfg.pooler,
        direct_url=cfg.direct_url,
    )
