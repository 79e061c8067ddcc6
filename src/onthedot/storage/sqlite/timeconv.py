"""SQLite stores instants as REAL seconds since the Unix epoch (UTC)."""

from __future__ import annotations

from datetime import UTC, datetime


def to_ts(value: datetime) -> float:
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value!r}: onthedot needs aware datetimes (UTC)")
    return value.timestamp()


def from_ts(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def opt_ts(value: datetime | None) -> float | None:
    return None if value is None else to_ts(value)


def opt_dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def slot_ts(value: datetime) -> int:
    """Slots are whole seconds."""
    return int(to_ts(value))
