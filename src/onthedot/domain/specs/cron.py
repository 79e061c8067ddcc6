"""Cron: a compiled expression (cronsim's field sets and day matcher) and the searches
over the local wall clock that turn it into slots, forward, backward and counted."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from datetime import date, datetime, tzinfo
from functools import lru_cache
from itertools import pairwise
from typing import Final

from cronsim import CronSim, CronSimError

from onthedot.domain.specs.instants import (
    DAY,
    FIRST_YEAR,
    LAST_YEAR,
    day_index,
    day_of,
)
from onthedot.domain.specs.zones import zone_segment

# The Gregorian calendar (dates and weekdays) repeats every 400 years.
_CYCLE_DAYS: Final = 146097


class _CronTable:
    """A parsed cron expression: cronsim's field sets and day matcher, plus
    searches over the (time-zone-less) wall clock, in integer seconds."""

    __slots__ = (
        "first_tod",
        "fixed",
        "hour_set",
        "hours",
        "last_tod",
        "minute_set",
        "minutes",
        "months",
        "never",
        "per_day",
        "seconds",
        "sim",
    )

    def __init__(self, fields: list[str], sim: CronSim, *, never: bool) -> None:
        self.sim = sim
        # The contract's fixed-time rule: 5 fields, minute and hour not '*...'.
        self.fixed = (
            len(fields) == 5 and not fields[0].startswith("*") and not (fields[1].startswith("*"))
        )
        self.seconds = tuple(sorted(sim.seconds))
        self.minutes = tuple(sorted(sim.minutes))
        self.hours = tuple(sorted(sim.hours))
        self.minute_set = frozenset(self.minutes)
        self.hour_set = frozenset(self.hours)
        self.months = frozenset(sim.months)
        self.per_day = len(self.seconds) * len(self.minutes) * len(self.hours)
        self.first_tod = self.hours[0] * 3600 + self.minutes[0] * 60 + self.seconds[0]
        self.last_tod = self.hours[-1] * 3600 + self.minutes[-1] * 60 + self.seconds[-1]
        self.never = never
        if not never:
            start = day_index(date(2000, 1, 1))
            self.never = self.next_day(start, start + _CYCLE_DAYS + 1) is None

    # -- days ---------------------------------------------------------------

    def day_matches(self, day: int) -> bool:
        d = day_of(day)
        return d.month in self.months and self.sim.match_day(d)

    def next_day(self, day: int, end: int) -> int | None:
        """First matching day in [day, end)."""
        while day < end:
            d = day_of(day)
            if d.month not in self.months:
                if d.year >= LAST_YEAR + 1:
                    return None
                day = day_index(date(d.year + d.month // 12, d.month % 12 + 1, 1))
                continue
            if self.sim.match_day(d):
                return day
            day += 1
        return None

    def prev_day(self, day: int, start: int) -> int | None:
        """Last matching day in [start, day]."""
        while day >= start:
            d = day_of(day)
            if d.month not in self.months:
                if d.year <= FIRST_YEAR - 1:
                    return None
                day = day_index(d.replace(day=1)) - 1
                continue
            if self.sim.match_day(d):
                return day
            day -= 1
        return None

    def count_days(self, day: int, end: int) -> int:
        """Number of matching days in [day, end)."""
        count = 0
        while day < end:
            d = day_of(day)
            if d.month not in self.months:
                if d.year >= LAST_YEAR + 1:
                    break
                day = day_index(date(d.year + d.month // 12, d.month % 12 + 1, 1))
                continue
            if self.sim.match_day(d):
                count += 1
            day += 1
        return count

    # -- times of day ---------------------------------------------------------

    def next_tod(self, x: int) -> int | None:
        """Smallest matching second-of-day >= x."""
        h, rem = divmod(x, 3600)
        m, s = divmod(rem, 60)
        if h in self.hour_set:
            if m in self.minute_set:
                i = bisect_left(self.seconds, s)
                if i < len(self.seconds):
                    return h * 3600 + m * 60 + self.seconds[i]
            j = bisect_right(self.minutes, m)
            if j < len(self.minutes):
                return h * 3600 + self.minutes[j] * 60 + self.seconds[0]
        k = bisect_right(self.hours, h)
        if k < len(self.hours):
            return self.hours[k] * 3600 + self.minutes[0] * 60 + self.seconds[0]
        return None

    def prev_tod(self, x: int) -> int | None:
        """Largest matching second-of-day <= x."""
        h, rem = divmod(x, 3600)
        m, s = divmod(rem, 60)
        if h in self.hour_set:
            if m in self.minute_set:
                i = bisect_right(self.seconds, s)
                if i > 0:
                    return h * 3600 + m * 60 + self.seconds[i - 1]
            j = bisect_left(self.minutes, m)
            if j > 0:
                return h * 3600 + self.minutes[j - 1] * 60 + self.seconds[-1]
        k = bisect_left(self.hours, h)
        if k > 0:
            return self.hours[k - 1] * 3600 + self.minutes[-1] * 60 + self.seconds[-1]
        return None

    def count_tod_below(self, x: int) -> int:
        """Number of matching seconds-of-day < x (0 <= x <= 86400)."""
        if x >= DAY:
            return self.per_day
        h, rem = divmod(x, 3600)
        m, s = divmod(rem, 60)
        n = bisect_left(self.hours, h) * len(self.minutes) * len(self.seconds)
        if h in self.hour_set:
            n += bisect_left(self.minutes, m) * len(self.seconds)
            if m in self.minute_set:
                n += bisect_left(self.seconds, s)
        return n

    # -- wall-clock times (seconds since 1970-01-01T00:00, no zone) ---------

    def next_wall(self, lo: int, hi: int) -> int | None:
        """Smallest matching wall-clock time in [lo, hi)."""
        if lo >= hi:
            return None
        day, x = divmod(lo, DAY)
        if self.day_matches(day):
            t = self.next_tod(x)
            if t is not None:
                found = day * DAY + t
                return found if found < hi else None
        nxt = self.next_day(day + 1, (hi - 1) // DAY + 1)
        if nxt is None:
            return None
        found = nxt * DAY + self.first_tod
        return found if found < hi else None

    def prev_wall(self, hi: int, lo: int) -> int | None:
        """Largest matching wall-clock time in [lo, hi]."""
        if hi < lo:
            return None
        day, x = divmod(hi, DAY)
        if self.day_matches(day):
            t = self.prev_tod(x)
            if t is not None:
                found = day * DAY + t
                return found if found >= lo else None
        prv = self.prev_day(day - 1, lo // DAY)
        if prv is None:
            return None
        found = prv * DAY + self.last_tod
        return found if found >= lo else None

    def count_walls(self, lo: int, hi: int) -> int:
        """Number of matching wall-clock times in [lo, hi)."""
        if lo >= hi:
            return 0
        day_lo, x_lo = divmod(lo, DAY)
        day_hi, x_hi = divmod(hi, DAY)
        if day_lo == day_hi:
            if not self.day_matches(day_lo):
                return 0
            return self.count_tod_below(x_hi) - self.count_tod_below(x_lo)
        n = self.per_day - self.count_tod_below(x_lo) if self.day_matches(day_lo) else 0
        n += self.per_day * self.count_days(day_lo + 1, day_hi)
        if x_hi and self.day_matches(day_hi):
            n += self.count_tod_below(x_hi)
        return n

    def min_gap(self) -> int:
        """Smallest wall-clock distance between two matching times (a day at most)."""
        marks = sorted({h * 60 + m for h in self.hours for m in self.minutes})
        spread = self.seconds[-1] - self.seconds[0]
        gaps = [(1440 - marks[-1] + marks[0]) * 60 - spread]
        if len(self.seconds) > 1:
            gaps.append(min(b - a for a, b in pairwise(self.seconds)))
        if len(marks) > 1:
            gaps.append(min(b - a for a, b in pairwise(marks)) * 60 - spread)
        return min(gaps)


def _sim(fields: list[str]) -> CronSim:
    return CronSim(" ".join(fields), datetime(2000, 1, 1))


@lru_cache(maxsize=2048)
def compile_cron(expr: str) -> _CronTable:
    """Parse a normalized expression; raises CronSimError if it is invalid."""
    fields = expr.split()
    try:
        return _CronTable(fields, _sim(fields), never=False)
    except CronSimError as exc:
        # cronsim also rejects valid syntax that can never fire because no
        # listed month has the listed days ('0 0 30 2 *'). The contract
        # treats that as a spec that never fires (a warning), not an error.
        if str(exc) != "Bad day-of-month":
            raise
        month = len(fields) - 2
        _sim(["0", "0", "1", fields[month], "*"])  # the month field alone
        relaxed = [*fields[:month], "*", fields[-1]]
        return _CronTable(fields, _sim(relaxed), never=True)


def cron_forward(table: _CronTable, tz: tzinfo, u: int, stop: int) -> Iterator[int]:
    """Slots s with u <= s <= stop, increasing and distinct."""
    if table.never:
        return
    fixed = table.fixed
    last = u - 1
    while u <= stop:
        seg = zone_segment(tz, u)
        o = seg.offset
        hi_wall = min(seg.end, stop + 1) + o
        lo_wall = u + o
        if fixed:
            # A gap ending at u: its matching times fire once, at u.
            if (
                seg.gap_from is not None
                and u == seg.start
                and u > last
                and table.next_wall(u + seg.gap_from, u + o + 1) is not None
            ):
                last = u
                yield u
            if seg.floor is not None and seg.floor > lo_wall:
                lo_wall = seg.floor
        w = table.next_wall(lo_wall, hi_wall)
        while w is not None:
            s = w - o
            if s > last:
                last = s
                yield s
            day, x = divmod(w, DAY)
            tod = table.next_tod(x + 1) if x + 1 < DAY else None
            if tod is None:  # the day is over: find the next matching day
                w = table.next_wall((day + 1) * DAY, hi_wall)
            else:  # same day, which is known to match
                w = day * DAY + tod
                if w >= hi_wall:
                    w = None
        u = seg.end


def cron_backward(table: _CronTable, tz: tzinfo, t: int, floor: int) -> int | None:
    """The newest slot s with floor < s <= t."""
    if table.never:
        return None
    u = t
    while u > floor:
        seg = zone_segment(tz, u)
        o = seg.offset
        lo_wall = max(seg.start, floor + 1) + o
        if table.fixed and seg.floor is not None and seg.floor > lo_wall:
            lo_wall = seg.floor
        w = table.prev_wall(u + o, lo_wall)
        if w is not None:
            return w - o
        if (
            table.fixed
            and seg.gap_from is not None
            and seg.start > floor
            and table.next_wall(seg.start + seg.gap_from, seg.start + o + 1) is not None
        ):
            return seg.start
        u = seg.start - 1
    return None


def cron_count(table: _CronTable, tz: tzinfo, u: int, stop: int) -> int:
    """Number of slots s with u <= s <= stop, one day (not one slot) at a time."""
    if table.never:
        return 0
    n = 0
    while u <= stop:
        seg = zone_segment(tz, u)
        o = seg.offset
        lo_wall = u + o
        if table.fixed:
            if (
                seg.gap_from is not None
                and u == seg.start
                and table.next_wall(u + seg.gap_from, u + o) is not None
                and table.next_wall(u + o, u + o + 1) is None
            ):
                n += 1  # the gap's slot, unless it merges with one at u itself
            if seg.floor is not None and seg.floor > lo_wall:
                lo_wall = seg.floor
        n += table.count_walls(lo_wall, min(seg.end, stop + 1) + o)
        u = seg.end
    return n
