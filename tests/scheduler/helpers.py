"""Helpers of the scheduler suite (fixtures are in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from onthedot import App, ManualClock
from onthedot.domain.ledger import LedgerRow

MakeApp = Callable[..., App]


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def at(text: str) -> datetime:
    """An instant written with its UTC offset ('2024-03-10T03:00-04:00' or '...Z'), in UTC."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert value.tzinfo is not None, text
    return value.astimezone(UTC)


def history(app: App, key: str) -> list[tuple[datetime, str]]:
    """(slot, outcome) of the slot history, oldest first."""
    rows = app.storage.slot_history(key, limit=100_000)
    return [(r.slot, r.outcome) for r in reversed(rows)]


def row(app: App, key: str) -> LedgerRow:
    found = next(iter(app.storage.list_schedule_rows([key])), None)
    assert found is not None, f"no ledger row for {key!r}"
    return found


def job_slots(app: App, key: str) -> list[datetime]:
    """Slots of the jobs of a schedule in the jobs table, oldest first (duplicates kept)."""
    jobs = app.list_jobs(schedule_key=key, limit=100_000)
    return sorted(j.slot for j in jobs if j.slot is not None)


def clock_of(app: App) -> ManualClock:
    assert isinstance(app.clock, ManualClock)
    return app.clock
