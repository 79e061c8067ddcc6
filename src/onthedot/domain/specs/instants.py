"""Instants as whole seconds since the epoch, and the supported range of years."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Final

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH: Final = datetime(1970, 1, 1)
_EPOCH_DATE: Final = date(1970, 1, 1)
_EPOCH_ORD: Final = _EPOCH_DATE.toordinal()
_ONE_SECOND: Final = timedelta(seconds=1)
_DAY: Final = 86400
_FIRST_YEAR: Final = 3
_LAST_YEAR: Final = 9997
# Supported instants: [_MIN_TS, _MAX_TS].
_MIN_TS: Final = (date(_FIRST_YEAR, 1, 1).toordinal() - _EPOCH_ORD) * _DAY
_MAX_TS: Final = (date(_LAST_YEAR + 1, 1, 1).toordinal() - _EPOCH_ORD) * _DAY - 1


def _to_ts(value: datetime, name: str) -> int:
    """Whole seconds since the epoch, rounded down (exact, no float)."""
    try:
        delta = value - _EPOCH
    except TypeError:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}") from None
    return delta.days * _DAY + delta.seconds


def _from_ts(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _day_of(ordinal_day: int) -> date:
    return date.fromordinal(ordinal_day + _EPOCH_ORD)


def _day_index(value: date) -> int:
    return value.toordinal() - _EPOCH_ORD


def _year_start(year: int) -> int:
    return (date(year, 1, 1).toordinal() - _EPOCH_ORD) * _DAY


def _year_of(ts: int) -> int:
    return _day_of(ts // _DAY).year
