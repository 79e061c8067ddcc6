"""Fixtures of the worker tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from onthedot import App
from onthedot.storage.interface import Storage


@pytest.fixture(params=["sqlite", "pg"])
def storage(request: pytest.FixtureRequest) -> Iterator[Storage]:
    """A migrated storage, on SQLite and on PostgreSQL."""
    url = request.getfixturevalue(f"{request.param}_url")
    app = App(url, log_events=False)
    app.migrate()
    yield app.storage
    app.close()
