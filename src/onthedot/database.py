"""The app's database: its URL, and its storage, opened on first use and checked for a current
schema. Nothing here touches the database before the storage is first asked for."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from onthedot.clock import Clock
from onthedot.config import DatabaseConfig, parse_database_url
from onthedot.domain.errors import SchemaOutOfDate

if TYPE_CHECKING:
    from onthedot.storage.interface import Storage


class Database:
    """One database URL and the storage opened for it (lazily, once, thread-safe)."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int,
        clock: Clock,
        migrate_hint: Callable[[], str] = lambda: "onthedot migrate",
    ) -> None:
        self.url = url
        self.migrate_hint = migrate_hint  # the command that migrates, where the app runs
        self.clock = clock
        self.config: DatabaseConfig = parse_database_url(url)
        self.pool_size = pool_size
        self._storage: Storage | None = None
        self._lock = threading.Lock()
        self._schema_checked = False

    def use(self, url: str) -> None:
        """Point at another database, before anything opened the storage."""
        if self._storage is not None:
            raise RuntimeError("use_database() must be called before the database is used")
        self.url = url
        self.config = parse_database_url(url)

    def storage(self) -> Storage:
        """The storage, opened on first use, once its schema was checked (see `check_schema`)."""
        storage = self.raw_storage()
        if not self._schema_checked:
            self.check_schema()
        return storage

    def raw_storage(self) -> Storage:
        """The storage without the schema check (for `migrate` and `health`)."""
        if self._storage is None:
            from onthedot.storage import open_storage

            with self._lock:
                if self._storage is None:
                    self._storage = open_storage(
                        self.url, pool_size=self.pool_size, clock=self.clock
                    )
        return self._storage

    def check_schema(self) -> None:
        """Raise SchemaOutOfDate unless the database schema is current. SQLite, the zero-setup
        default, migrates itself on first use."""
        storage = self.raw_storage()
        storage.migrate(first_use=True)
        current, latest = storage.schema_version()
        if current < latest:
            raise SchemaOutOfDate(
                f"database schema of {self.config.display} is at version {current}, this "
                f"onthedot needs {latest}: run `{self.migrate_hint()}`"
            )
        if current > latest:
            raise SchemaOutOfDate(
                f"database schema of {self.config.display} is at version {current}, newer than "
                f"this onthedot knows ({latest}): upgrade onthedot"
            )
        self._schema_checked = True

    def migrate(self) -> list[int]:
        """Apply the migrations not applied yet; return their versions."""
        applied = self.raw_storage().migrate()
        self._schema_checked = True
        return applied

    def close(self) -> None:
        """Close the storage; the next use opens (and checks) it again."""
        if self._storage is not None:
            self._storage.close()
            self._storage = None
            self._schema_checked = False
