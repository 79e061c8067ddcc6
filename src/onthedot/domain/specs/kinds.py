"""The three kinds of timing spec: cron, interval and calendar interval."""

from __future__ import annotations

import calendar as _calendar
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import ClassVar, Final
from zoneinfo import ZoneInfo

from cronsim.explain import Expression

from onthedot.domain.durations import (
    SpecError,
    duration_or_reason,
    format_duration,
    quote,
)
from onthedot.domain.specs.base import Spec
from onthedot.domain.specs.cron import compile_cron, cron_backward, cron_count, cron_forward
from onthedot.domain.specs.cron_syntax import normalize_cron
from onthedot.domain.specs.instants import (
    DAY,
    EPOCH,
    EPOCH_DATE,
    FIRST_YEAR,
    LAST_YEAR,
    MAX_TS,
    MIN_TS,
    ONE_SECOND,
    day_index,
    day_of,
    from_ts,
    to_ts,
)
from onthedot.domain.specs.zones import fixed_instant, zone_segment


@dataclass(frozen=True, slots=True)
class CronSpec(Spec):
    """A cron expression, normalized: aliases expanded, upper case, single spaces.

    ``seconds`` is True for 6-field expressions (seconds first).
    """

    kind: ClassVar[str] = "cron"
    expr: str
    seconds: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if not isinstance(self.expr, str):
            raise SpecError(f"invalid cron spec {quote(self.expr)}: expected a string")
        expr, seconds = normalize_cron(self.expr)
        object.__setattr__(self, "expr", expr)
        object.__setattr__(self, "seconds", seconds)

    def canonical(self) -> str:
        return self.expr

    def fixed_time(self) -> bool:
        return compile_cron(self.expr).fixed

    def describe(self) -> str:
        parts = self.expr.split()
        if not self.seconds:
            parts.insert(0, "0")
        try:
            return Expression(parts).explain()
        except Exception:  # pragma: no cover - cronsim's explainer is best effort
            return f"cron {self.expr}"

    def min_period(self) -> timedelta:
        return timedelta(seconds=compile_cron(self.expr).min_gap())

    def _next(self, after: int, tz: tzinfo) -> int | None:
        return next(cron_forward(compile_cron(self.expr), tz, after + 1, MAX_TS), None)

    def _slots(self, after: int, stop: int, tz: tzinfo) -> Iterator[int]:
        return cron_forward(compile_cron(self.expr), tz, after + 1, stop)

    def _count(self, after: int, stop: int, tz: tzinfo) -> int:
        return cron_count(compile_cron(self.expr), tz, after + 1, stop)

    def _last(self, t: int, floor: int, tz: tzinfo) -> int | None:
        return cron_backward(compile_cron(self.expr), tz, t, floor)


def _iso_utc(value: datetime) -> str:
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


@dataclass(frozen=True, slots=True)
class IntervalSpec(Spec):
    """Every ``every`` (whole seconds) of elapsed time: slots at
    ``anchor + k * every`` for k >= 0, in UTC. Time zones do not matter."""

    kind: ClassVar[str] = "interval"
    every: timedelta
    anchor: datetime = EPOCH
    # Derived integer seconds, so that evaluation is pure integer arithmetic.
    _step: int = field(init=False, repr=False, compare=False, default=0)
    _origin: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        every_value = duration_or_reason(self.every)
        if isinstance(every_value, str):
            raise SpecError(f"invalid interval {quote(self.every)}: {every_value}")
        if every_value % ONE_SECOND:
            raise SpecError(f"invalid interval {quote(self.every)}: use a whole number of seconds")
        object.__setattr__(self, "every", every_value)
        anchor = self.anchor
        if not isinstance(anchor, datetime) or anchor.tzinfo is None or anchor.utcoffset() is None:
            raise SpecError(
                f"invalid interval anchor {quote(anchor)}: use an aware datetime, "
                "like datetime(2024, 1, 1, tzinfo=timezone.utc)"
            )
        if anchor.microsecond:
            raise SpecError(
                f"invalid interval anchor {quote(anchor)}: use whole seconds (no microseconds)"
            )
        anchor = anchor.astimezone(UTC)
        if not MIN_TS <= to_ts(anchor, "anchor") <= MAX_TS:
            raise SpecError(
                f"invalid interval anchor {quote(anchor)}: use a year between "
                f"{FIRST_YEAR} and {LAST_YEAR}"
            )
        object.__setattr__(self, "anchor", anchor)
        object.__setattr__(self, "_step", every_value // ONE_SECOND)
        object.__setattr__(self, "_origin", to_ts(anchor, "anchor"))

    def canonical(self) -> str:
        text = f"every {format_duration(self.every)}"
        if self.anchor != EPOCH:
            text += f" from {_iso_utc(self.anchor)}"
        return text

    def fixed_time(self) -> bool:
        return False

    def describe(self) -> str:
        step = self._step
        text = "Every second"
        for size, unit in (
            (604800, "week"),
            (86400, "day"),
            (3600, "hour"),
            (60, "minute"),
            (1, "second"),
        ):
            if step % size == 0:
                count = step // size
                text = f"Every {unit}" if count == 1 else f"Every {count} {unit}s"
                break
        if self.anchor != EPOCH:
            text += f" starting {_iso_utc(self.anchor)}"
        return text

    def min_period(self) -> timedelta:
        return self.every

    def next_after(self, after: datetime, tz: ZoneInfo) -> datetime | None:
        found = self._next(to_ts(after, "after"), tz)
        return None if found is None else from_ts(found)

    def _next(self, after: int, tz: tzinfo) -> int | None:
        origin, step = self._origin, self._step
        found = origin if after < origin else origin + ((after - origin) // step + 1) * step
        return found if found <= MAX_TS else None

    def _upto(self, t: int) -> int:
        """Number of slots <= t."""
        origin = self._origin
        return 0 if t < origin else (t - origin) // self._step + 1

    def _slots(self, after: int, stop: int, tz: tzinfo) -> Iterator[int]:
        found = self._next(after, tz)
        step = self._step
        while found is not None and found <= stop:
            yield found
            found += step

    def _count(self, after: int, stop: int, tz: tzinfo) -> int:
        return self._upto(stop) - self._upto(after)

    def _last(self, t: int, floor: int, tz: tzinfo) -> int | None:
        origin, step = self._origin, self._step
        if t < origin:
            return None
        found = origin + (t - origin) // step * step
        return found if found > floor else None


_UNITS: Final = ("day", "week", "month")
_MAX_CALENDAR_COUNT: Final = 100_000


def _format_time(value: time) -> str:
    return value.strftime("%H:%M:%S" if value.second else "%H:%M")


@dataclass(frozen=True, slots=True)
class CalendarSpec(Spec):
    """Every ``count`` days, weeks or months at local wall-clock time ``at``,
    counted from ``anchor`` (slot 0 is the anchor date itself)."""

    kind: ClassVar[str] = "calendar"
    count: int
    unit: str
    at: time = time(0, 0)
    anchor: date = EPOCH_DATE

    def __post_init__(self) -> None:
        if (
            isinstance(self.count, bool)
            or not isinstance(self.count, int)
            or not 1 <= self.count <= _MAX_CALENDAR_COUNT
        ):
            raise SpecError(
                f"invalid calendar count {quote(self.count)}: "
                f"the count must be a whole number from 1 to {_MAX_CALENDAR_COUNT}"
            )
        if self.unit not in _UNITS:
            raise SpecError(
                f"invalid calendar unit {quote(self.unit)}: use 'day', 'week' or 'month'"
            )
        if not isinstance(self.at, time) or self.at.tzinfo is not None or self.at.microsecond:
            raise SpecError(
                f"invalid calendar time {quote(self.at)}: use a local time with whole "
                "seconds and no time zone, like time(9, 0)"
            )
        if isinstance(self.anchor, datetime) or not isinstance(self.anchor, date):
            raise SpecError(
                f"invalid calendar anchor {quote(self.anchor)}: use a date like date(2024, 1, 5)"
            )
        if not FIRST_YEAR <= self.anchor.year <= LAST_YEAR:
            raise SpecError(
                f"invalid calendar anchor {quote(self.anchor)}: use a year between "
                f"{FIRST_YEAR} and {LAST_YEAR}"
            )
        object.__setattr__(self, "at", self.at.replace(fold=0))

    def _unit_text(self) -> str:
        return self.unit if self.count == 1 else self.unit + "s"

    def canonical(self) -> str:
        text = f"every {self.count} {self._unit_text()} at {_format_time(self.at)}"
        if self.anchor != EPOCH_DATE:
            text += f" from {self.anchor.isoformat()}"
        return text

    def fixed_time(self) -> bool:
        return True

    def describe(self) -> str:
        head = f"Every {self.unit}" if self.count == 1 else f"Every {self.count} {self.unit}s"
        text = f"{head} at {_format_time(self.at)}"
        if self.anchor != EPOCH_DATE:
            text += f" from {self.anchor.isoformat()}"
        return text

    def min_period(self) -> timedelta:
        days = {"day": 1, "week": 7, "month": 28}[self.unit]
        return timedelta(days=days * self.count)

    # slot k --------------------------------------------------------------

    def _wall(self, k: int) -> int | None:
        """Local wall-clock time of slot k (seconds), None past the supported range."""
        anchor = self.anchor
        if self.unit == "month":
            index = anchor.year * 12 + anchor.month - 1 + k * self.count
            year, month0 = divmod(index, 12)
            if year > LAST_YEAR:
                return None
            last = _calendar.monthrange(year, month0 + 1)[1]
            day = day_index(date(year, month0 + 1, min(anchor.day, last)))
        else:
            day = day_index(anchor) + k * self.count * (7 if self.unit == "week" else 1)
            if day > MAX_TS // DAY - 1:
                return None
        at = self.at
        return day * DAY + at.hour * 3600 + at.minute * 60 + at.second

    def _instant(self, k: int, tz: tzinfo) -> int | None:
        wall = self._wall(k)
        if wall is None:
            return None
        found = fixed_instant(tz, wall)
        return found if found <= MAX_TS else None

    def _first_after(self, t: int, tz: tzinfo) -> int:
        """Smallest k >= 0 whose slot is after t (slots past the supported
        range count as after everything)."""
        local = day_of((t + zone_segment(tz, t).offset) // DAY)
        if self.unit == "month":
            months = (local.year - self.anchor.year) * 12 + local.month - self.anchor.month
            k = months // self.count
        else:
            period = self.count * (7 if self.unit == "week" else 1)
            k = (day_index(local) - day_index(self.anchor)) // period
        k = max(0, k - 1)
        while k > 0:
            previous = self._instant(k - 1, tz)
            if previous is None or previous > t:
                k -= 1
            else:
                break
        while True:
            found = self._instant(k, tz)
            if found is None or found > t:
                return k
            k += 1

    def _next(self, after: int, tz: tzinfo) -> int | None:
        return self._instant(self._first_after(after, tz), tz)

    def _slots(self, after: int, stop: int, tz: tzinfo) -> Iterator[int]:
        k = self._first_after(after, tz)
        last = after
        while True:
            found = self._instant(k, tz)
            if found is None or found > stop:
                return
            if found > last:  # a gap a whole period long merges two slots
                last = found
                yield found
            k += 1

    def _count(self, after: int, stop: int, tz: tzinfo) -> int:
        if self.unit == "day" and self.count == 1:
            # Only a daily period can have two slots merge (a gap of 24 hours,
            # as in Pacific/Apia in 2011): count them one by one (per day).
            return sum(1 for _ in self._slots(after, stop, tz))
        return self._first_after(stop, tz) - self._first_after(after, tz)

    def _last(self, t: int, floor: int, tz: tzinfo) -> int | None:
        k = self._first_after(t, tz) - 1
        if k < 0:
            return None
        found = self._instant(k, tz)
        return found if found is not None and found > floor else None
