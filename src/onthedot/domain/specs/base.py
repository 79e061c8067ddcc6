"""The Spec contract every kind of timing spec fulfils, and the timing fingerprint."""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from functools import lru_cache
from typing import ClassVar
from zoneinfo import ZoneInfo

from onthedot.domain.specs.instants import MAX_TS, MIN_TS, from_ts, to_ts


@lru_cache(maxsize=65536)
def _cached_next(spec: Spec, tz: tzinfo, after: int) -> datetime | None:
    found = spec._next(after, tz)
    if found is None or found > MAX_TS:
        return None
    return from_ts(found)


@dataclass(frozen=True, slots=True)
class Spec(abc.ABC):
    """A parsed timing spec. Instances are immutable, hashable and comparable.

    Every method taking instants accepts aware datetimes in any zone and
    returns aware UTC datetimes with second precision. ``tz`` is the
    schedule's time zone (interval specs ignore it).
    """

    kind: ClassVar[str]

    @abc.abstractmethod
    def canonical(self) -> str:
        """Normalized text form: ``parse_spec(spec.canonical()) == spec``."""

    @abc.abstractmethod
    def fixed_time(self) -> bool:
        """Whether the contract's fixed-time DST rules apply (see the package doc)."""

    @abc.abstractmethod
    def describe(self) -> str:
        """Plain English description (the time zone is not mentioned)."""

    @abc.abstractmethod
    def min_period(self) -> timedelta:
        """A lower bound of the nominal gap between consecutive slots.

        Nominal means on the local wall clock: the day a clock changes, DST
        can bring two slots closer than this (a gap-shifted slot lands next to
        the following one; a wildcard spec repeats in an overlap).

        * interval: the interval;
        * calendar: N days for N days, 7N days for N weeks, 28N days for
          N months (the shortest N-month span, clamping included);
        * cron: the smallest distance between two matching times of day,
          including the wrap from the last one of a day to the first one of
          the next day, so at most one day (days with no slot only add to it).
          ``*/5 * * * *`` is 5 minutes, ``0 9 * * 1-5`` and ``@monthly`` are
          1 day.
        """

    @abc.abstractmethod
    def _next(self, after: int, tz: tzinfo) -> int | None:
        """The first slot > after (integer seconds)."""

    @abc.abstractmethod
    def _slots(self, after: int, stop: int, tz: tzinfo) -> Iterator[int]:
        """Slots in (after, stop], increasing."""

    @abc.abstractmethod
    def _count(self, after: int, stop: int, tz: tzinfo) -> int:
        """Number of slots in (after, stop]."""

    @abc.abstractmethod
    def _last(self, t: int, floor: int, tz: tzinfo) -> int | None:
        """The newest slot in (floor, t]."""

    def __str__(self) -> str:
        return self.canonical()

    def next_after(self, after: datetime, tz: ZoneInfo) -> datetime | None:
        """The first slot strictly after ``after``; None if it never fires again.

        Results are memoized (spec, zone, second), so many schedules sharing a
        spec and a cursor cost one evaluation.
        """
        a = to_ts(after, "after")
        if a >= MAX_TS:
            return None
        return _cached_next(self, tz, max(a, MIN_TS - 1))

    def slots_between(self, start: datetime, end: datetime, tz: ZoneInfo) -> Iterator[datetime]:
        """Slots in (start, end], increasing and distinct, computed lazily."""
        a = max(to_ts(start, "start"), MIN_TS - 1)
        b = min(to_ts(end, "end"), MAX_TS)
        return (from_ts(s) for s in self._slots(a, b, tz)) if a < b else iter(())

    def count_between(self, start: datetime, end: datetime, tz: ZoneInfo) -> int:
        """Number of slots in (start, end], without walking them one by one."""
        a = max(to_ts(start, "start"), MIN_TS - 1)
        b = min(to_ts(end, "end"), MAX_TS)
        return self._count(a, b, tz) if a < b else 0

    def last_at_or_before(self, t: datetime, tz: ZoneInfo, floor: datetime) -> datetime | None:
        """The newest slot in (floor, t], or None."""
        b = min(to_ts(t, "t"), MAX_TS)
        a = max(to_ts(floor, "floor"), MIN_TS - 1)
        if a >= b:
            return None
        found = self._last(b, a, tz)
        return None if found is None else from_ts(found)


def fingerprint(spec: Spec, tz: ZoneInfo) -> str:
    """The timing fingerprint: 16 hex digits of sha256(kind, canonical text, zone)."""
    key = getattr(tz, "key", None) or str(tz)
    payload = f"{spec.kind}\n{spec.canonical()}\n{key}".encode()
    return hashlib.sha256(payload).hexdigest()[:16]
