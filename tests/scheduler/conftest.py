"""Fixtures of the scheduler suite: apps driven by a manual clock, on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from onthedot import App, ManualClock
from tests.scheduler.helpers import MakeApp


@pytest.fixture
def make_app(db_url: str) -> Iterator[MakeApp]:
    """Build migrated apps on the test database, each with its own ManualClock. Several apps on
    one database are several deploys (or workers) of the same project."""
    apps: list[App] = []

    def make(start: datetime | str = "2030-01-01T00:00:00Z", **options: object) -> App:
        options.setdefault("log_events", False)
        options.setdefault("lease", 2.0)
        options.setdefault("pool_size", 3)
        application = App(db_url, clock=ManualClock(start), **options)  # type: ignore[arg-type]
        application.migrate()
        apps.append(application)
        return application

    yield make
    for application in apps:
        application.close()
