"""Fixtures of the storage tests outside the conformance suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from onthedot.storage import open_storage
from onthedot.storage.postgres.storage import PostgresStorage


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresStorage]:
    """A migrated PostgreSQL storage on a fresh schema."""
    storage = open_storage(pg_url, pool_size=4)
    assert isinstance(storage, PostgresStorage)
    storage.migrate()
    yield storage
    storage.close()
