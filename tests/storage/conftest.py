"""Fixtures of the storage tests outside the conformance suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from onthedot.storage import open_storage
from onthedot.storage.postgres.storage import PostgresStorage


def migrated(url: str, pool_size: int) -> Iterator[PostgresStorage]:
    storage = open_storage(url, pool_size=pool_size)
    assert isinstance(storage, PostgresStorage)
    storage.migrate()
    yield storage
    storage.close()


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresStorage]:
    """A migrated PostgreSQL storage on a fresh schema."""
    yield from migrated(pg_url, pool_size=4)


@pytest.fixture
def one_connection(pg_url: str) -> Iterator[PostgresStorage]:
    """The same with a pool of one connection: every verb runs in the same session."""
    yield from migrated(pg_url, pool_size=1)
