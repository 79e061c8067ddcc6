"""Instants as whole seconds since the epoch, and the supported range of years."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Final

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
NAIVE_EPOCH: Final = datetime(1970, 1, 1)
EPOCH_DATE: Final = date(1970, 1, 1)
_EPOCH_ORD: Final = EPOCH_DATE.toordinal()
ONE_SECOND: Final = timedelta(seconds=1)
DAY: Final = 86400
FIRST_YEAR: Final = 3
LAST_YEAR: Final = 9997
# Supported instants: [MIN_TS, MAX_TS].
MIN_TS: Final = (date(FIRST_YEAR, 1, 1).toordinal() - _EPOCH_ORD) * DAY
MAX_TS: Final = (date(LAST_YEAR + 1, 1, 1).toordinal() - _EPOCH_ORD) * DAY - 1


def to_ts(value: datetime, name: str) -> int:
    """Whole seconds since the epoch, rounded down (exact, no float)."""
    try:
        delta = value - EPOCH
    except TypeError:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}") from None
    return delta.days * DAY + delta.seconds


def from_ts(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def day_of(ordinal_day: int) -> date:
    return date.fromordinal(ordinal_day + _EPOCH_ORD)


def day_index(value: date) -> int:
    return value.toordinal() - _EPOCH_ORD


def year_start(year: int) -> int:
    return (date(year, 1, 1).toordinal() - _EPOCH_ORD) * DAY


def year_of(ts: int) -> int:
    return day_of(ts // DAY).year
