"""Timing specs: parsing, and the slots they produce.

This module implements "Timing specs" and "Daylight saving time" of the
scheduling contract (``SCHEDULING.md``). It is pure: no I/O besides loading
time zone data, and it never reads the clock. Every instant goes in as an
aware ``datetime`` and comes out as an aware UTC ``datetime`` with
``microsecond == 0``.

Spec syntax accepted by :func:`parse_spec`:

* **Cron**, 5 fields ``minute hour day-of-month month day-of-week`` or 6 fields
  with seconds first. Names (``JAN``, ``mon``; case-insensitive), ranges,
  lists, steps, ``L`` and ``LW`` (day-of-month), ``5L`` and ``5#3``
  (day-of-week), and the aliases ``@yearly @annually @monthly @weekly @daily
  @midnight @hourly``, normalized to their 5-field form.
* **Interval**: ``every <duration> [from <anchor>]``, e.g. ``every 90s``,
  ``every 1h30m``, ``every 2 weeks``, ``every 15m from 2024-01-01T00:05:00Z``.
  The anchor is an ISO 8601 time with a UTC offset (``Z`` or ``+02:00``) or a
  bare date (midnight UTC); it defaults to 1970-01-01T00:00:00Z. Slots are
  ``anchor + k * interval`` for k >= 0, in UTC, whole seconds.
* **Calendar interval**: ``every [N] <day|days|week|weeks|month|months>
  [at HH:MM[:SS]] [from YYYY-MM-DD]``, e.g. ``every 2 weeks at 09:00 from
  2024-01-05``, ``every 3 days at 06:00``, ``every month at 23:30 from
  2024-01-31`` (short units ``d``, ``w``, ``mo`` work too). A text spec is a
  calendar interval when it has ``at`` or counts months; ``every 2 weeks``
  alone is an *interval* of 14 x 24 hours. The anchor date defaults to
  1970-01-01; slots before it do not exist.

How slots are computed (see the contract for the rules):

* Cron: ``cronsim`` parses and validates the expression and decides which
  days and which hours/minutes/seconds match (Vixie/Debian day rule, ``L``,
  ``LW``, ``5L``, ``5#3``). This module searches the local wall clock itself
  and maps wall-clock times to instants per constant-offset segment of the
  time zone, because cronsim's own time zone handling departs from the
  contract in a few places (wildcard specs in 30-minute-shift zones and at
  midnight gaps, and fixed-time specs queried from the second occurrence of
  an overlap can return an instant that is not after the query). Fixed-time
  specs (5 fields, minute and hour not starting with ``*``): a slot in a gap
  fires at the first instant after the gap, a slot in an overlap at its first
  occurrence, and slots landing on one instant are one slot. Wildcard specs
  fire at every real instant whose local wall-clock time matches.
* Calendar interval: slot k is ``anchor + k * period`` (months clamp to the
  month's last day, always computed from the anchor), at the local time
  ``at``, mapped like a fixed-time cron slot: 02:30 on New York's
  spring-forward day fires at 03:00 EDT, the end of the gap (not at 03:30,
  which shifting by the gap's length, as PEP 495 does, would give).
* Interval: integer arithmetic on UTC seconds.

A cron spec whose days exist in none of its months (``0 0 30 2 *``, which
cronsim itself refuses) or that matches no day of the 400-year Gregorian
cycle is valid but never fires: ``next_after`` returns None.

Instants before year 3 or after year 9997 are outside the supported range:
there are no slots there.
"""

from __future__ import annotations

import abc
import calendar as _calendar
import hashlib
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from functools import lru_cache
from itertools import pairwise
from typing import ClassVar, Final
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError
from cronsim.explain import Expression

from onthedot.domain.durations import (
    SpecError,
    duration_or_reason,
    format_duration,
    quote,
)

__all__ = [
    "CalendarSpec",
    "CronSpec",
    "IntervalSpec",
    "Spec",
    "SpecError",
    "calendar",
    "every",
    "fingerprint",
    "load_timezone",
    "parse_spec",
]

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
# The Gregorian calendar (dates and weekdays) repeats every 400 years.
_CYCLE_DAYS: Final = 146097
# Time zone transitions are found by sampling offsets this far apart and
# bisecting. Consecutive transitions in the tz database are at least ~4 days
# apart (the closest: Africa/Freetown 1939), so a day-long step misses none.
_PROBE: Final = _DAY

_TZ_HINT: Final = "use an IANA name such as 'Europe/Paris' or 'UTC'"
_SPEC_HINT: Final = (
    "use a cron expression like '*/5 * * * *', an interval like 'every 15m' "
    "or a calendar interval like 'every 1 day at 09:00'"
)


# --------------------------------------------------------------------------
# Instants as integer seconds


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


# --------------------------------------------------------------------------
# Time zones: offsets and transitions


def load_timezone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; :class:`SpecError` if there is no such zone."""
    if not isinstance(name, str) or not name:
        raise SpecError(f"unknown time zone {quote(name)}: {_TZ_HINT}")
    try:
        return ZoneInfo(name)
    except Exception:  # ZoneInfoNotFoundError, ValueError, OSError, ...
        raise SpecError(f"unknown time zone {quote(name)}: {_TZ_HINT}") from None


def _offset(tz: tzinfo, ts: int) -> int:
    """UTC offset in seconds of ``tz`` at instant ``ts``."""
    delta = datetime.fromtimestamp(ts, tz).utcoffset()
    return 0 if delta is None else delta // _ONE_SECOND


@lru_cache(maxsize=256)
def _fixed_offset(tz: tzinfo) -> int | None:
    """The offset of a zone that never changes it (UTC, Etc/GMT+5), else None."""
    delta = tz.utcoffset(None)
    return None if delta is None else delta // _ONE_SECOND


@dataclass(frozen=True, slots=True)
class _Transitions:
    """Offset changes of one zone within one UTC year: instant, offset before, after."""

    at: tuple[int, ...]
    before: tuple[int, ...]
    after: tuple[int, ...]


_NO_TRANSITIONS: Final = _Transitions((), (), ())


@lru_cache(maxsize=4096)
def _transitions(tz: tzinfo, year: int) -> _Transitions:
    if year < _FIRST_YEAR - 1 or year > _LAST_YEAR + 1 or _fixed_offset(tz) is not None:
        return _NO_TRANSITIONS
    start = _year_start(year)
    end = _year_start(year + 1)
    at: list[int] = []
    before: list[int] = []
    after: list[int] = []
    u = start - 1
    o = _offset(tz, u)
    while u < end:
        v = min(u + _PROBE, end)
        ov = _offset(tz, v)
        if ov == o:
            u = v
            continue
        lo, hi = u, v  # offset(lo) == o != offset(hi): one transition in (lo, hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _offset(tz, mid) == o:
                lo = mid
            else:
                hi = mid
        oh = _offset(tz, hi)
        if hi < end:
            at.append(hi)
            before.append(o)
            after.append(oh)
        u, o = hi, oh
    return _Transitions(tuple(at), tuple(before), tuple(after))


def _segment_end(tz: tzinfo, ts: int) -> int:
    """End (exclusive) of the piece of constant offset that contains ``ts``.

    The piece ends at the next transition, or at the end of the UTC year (a
    boundary that is not a transition) so that searches move one year at a
    time.
    """
    if _fixed_offset(tz) is not None:
        return _MAX_TS + 1
    year = _year_of(ts)
    trans = _transitions(tz, year)
    i = bisect_right(trans.at, ts)
    if i < len(trans.at):
        return trans.at[i]
    return _year_start(year + 1)


def _segment_start(tz: tzinfo, ts: int) -> int:
    """Start (inclusive) of the piece of constant offset containing ``ts``:
    the latest transition at or before ``ts`` in its UTC year, else the
    year's start."""
    if _fixed_offset(tz) is not None:
        return _MIN_TS
    year = _year_of(ts)
    trans = _transitions(tz, year)
    i = bisect_right(trans.at, ts)
    if i > 0:
        return trans.at[i - 1]
    return _year_start(year)


def _transition_at(tz: tzinfo, ts: int) -> tuple[int, int] | None:
    """(offset before, offset after) if a transition happens exactly at ``ts``."""
    if _fixed_offset(tz) is not None:
        return None
    trans = _transitions(tz, _year_of(ts))
    i = bisect_left(trans.at, ts)
    if i < len(trans.at) and trans.at[i] == ts:
        return trans.before[i], trans.after[i]
    return None


def _latest_transition(tz: tzinfo, ts: int) -> tuple[int, int, int] | None:
    """The latest transition at or before ``ts`` if it is less than 2 days old."""
    if _fixed_offset(tz) is not None:
        return None
    year = _year_of(ts)
    for y in (year, year - 1):
        trans = _transitions(tz, y)
        i = bisect_right(trans.at, ts)
        if i > 0:
            t = trans.at[i - 1]
            if t > ts - 2 * _DAY:
                return t, trans.before[i - 1], trans.after[i - 1]
            return None
        if _year_start(y) <= ts - 2 * _DAY:
            return None
    return None


def _overlap_floor(tz: tzinfo, ts: int) -> int | None:
    """Lowest wall-clock time a fixed-time slot may have in the segment of ``ts``.

    After clocks fall back, the repeated wall-clock times already had their
    (first) occurrence before the transition.
    """
    latest = _latest_transition(tz, ts)
    if latest is None:
        return None
    t, before, after = latest
    return t + before if before > after else None


@dataclass(frozen=True, slots=True)
class _Segment:
    """A stretch of constant UTC offset: instants [start, end).

    ``start`` and ``end`` are transitions or UTC year boundaries.
    ``gap_from`` is the offset before ``start`` when clocks jumped forward at
    ``start`` (the wall-clock times [start + gap_from, start + offset) do not
    exist). ``floor`` is the lowest wall-clock time a fixed-time slot may have
    here: after clocks fall back, repeated times already had their first
    occurrence.
    """

    start: int
    end: int
    offset: int
    gap_from: int | None
    floor: int | None


_LAST_SEGMENT: dict[tzinfo, _Segment] = {}


def _segment(tz: tzinfo, ts: int) -> _Segment:
    """The segment containing ``ts``; the last one found per zone is kept."""
    seg = _LAST_SEGMENT.get(tz)
    if seg is not None and seg.start <= ts < seg.end:
        return seg
    fixed = _fixed_offset(tz)
    if fixed is not None:
        seg = _Segment(_MIN_TS - 2 * _DAY, _MAX_TS + 2 * _DAY, fixed, None, None)
    else:
        start = _segment_start(tz, ts)
        at = _transition_at(tz, start)
        seg = _Segment(
            start,
            _segment_end(tz, ts),
            _offset(tz, ts),
            at[0] if at is not None and at[0] < at[1] else None,
            _overlap_floor(tz, start),
        )
    if len(_LAST_SEGMENT) > 1024:
        _LAST_SEGMENT.clear()
    _LAST_SEGMENT[tz] = seg
    return seg


def _fixed_instant(tz: tzinfo, wall: int) -> int:
    """The instant of a fixed-time slot at local wall-clock time ``wall``.

    A real time maps to its first occurrence; a time in a gap maps to the
    first instant after the gap.
    """
    seg = _segment(tz, wall - _segment(tz, wall).offset)
    u = wall - seg.offset
    if seg.start <= u < seg.end and (seg.floor is None or wall >= seg.floor):
        return u  # the usual case: one occurrence, away from transitions
    naive = _NAIVE_EPOCH + timedelta(seconds=wall)
    u0 = (naive.replace(tzinfo=tz) - _EPOCH) // _ONE_SECOND
    u1 = (naive.replace(tzinfo=tz, fold=1) - _EPOCH) // _ONE_SECOND
    real = [u for u in (u0, u1) if u + _offset(tz, u) == wall]
    if real:
        return min(real)
    lo, hi = min(u0, u1), max(u0, u1)
    # Smallest instant in (lo, hi] whose wall-clock time is past ``wall``.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid + _offset(tz, mid) > wall:
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------
# Cron: parsing with cronsim, wall-clock search over its parsed fields

_ALIASES: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELD_NAMES: Final = ("second", "minute", "hour", "day-of-month", "month", "day-of-week")
_FIELD_RANGES: Final = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_MONTH_NAMES: Final = frozenset(
    ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
)
_DAY_NAMES: Final = frozenset(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))


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
        "second_set",
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
        self.second_set = frozenset(self.seconds)
        self.minute_set = frozenset(self.minutes)
        self.hour_set = frozenset(self.hours)
        self.months = frozenset(sim.months)
        self.per_day = len(self.seconds) * len(self.minutes) * len(self.hours)
        self.first_tod = self.hours[0] * 3600 + self.minutes[0] * 60 + self.seconds[0]
        self.last_tod = self.hours[-1] * 3600 + self.minutes[-1] * 60 + self.seconds[-1]
        self.never = never
        if not never:
            start = _day_index(date(2000, 1, 1))
            self.never = self.next_day(start, start + _CYCLE_DAYS + 1) is None

    # -- days ---------------------------------------------------------------

    def day_matches(self, day: int) -> bool:
        d = _day_of(day)
        return d.month in self.months and self.sim.match_day(d)

    def next_day(self, day: int, end: int) -> int | None:
        """First matching day in [day, end)."""
        while day < end:
            d = _day_of(day)
            if d.month not in self.months:
                if d.year >= _LAST_YEAR + 1:
                    return None
                day = _day_index(date(d.year + d.month // 12, d.month % 12 + 1, 1))
                continue
            if self.sim.match_day(d):
                return day
            day += 1
        return None

    def prev_day(self, day: int, start: int) -> int | None:
        """Last matching day in [start, day]."""
        while day >= start:
            d = _day_of(day)
            if d.month not in self.months:
                if d.year <= _FIRST_YEAR - 1:
                    return None
                day = _day_index(d.replace(day=1)) - 1
                continue
            if self.sim.match_day(d):
                return day
            day -= 1
        return None

    def count_days(self, day: int, end: int) -> int:
        """Number of matching days in [day, end)."""
        count = 0
        while day < end:
            d = _day_of(day)
            if d.month not in self.months:
                if d.year >= _LAST_YEAR + 1:
                    break
                day = _day_index(date(d.year + d.month // 12, d.month % 12 + 1, 1))
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
        if x >= _DAY:
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
        day, x = divmod(lo, _DAY)
        if self.day_matches(day):
            t = self.next_tod(x)
            if t is not None:
                found = day * _DAY + t
                return found if found < hi else None
        nxt = self.next_day(day + 1, (hi - 1) // _DAY + 1)
        if nxt is None:
            return None
        found = nxt * _DAY + self.first_tod
        return found if found < hi else None

    def prev_wall(self, hi: int, lo: int) -> int | None:
        """Largest matching wall-clock time in [lo, hi]."""
        if hi < lo:
            return None
        day, x = divmod(hi, _DAY)
        if self.day_matches(day):
            t = self.prev_tod(x)
            if t is not None:
                found = day * _DAY + t
                return found if found >= lo else None
        prv = self.prev_day(day - 1, lo // _DAY)
        if prv is None:
            return None
        found = prv * _DAY + self.last_tod
        return found if found >= lo else None

    def count_walls(self, lo: int, hi: int) -> int:
        """Number of matching wall-clock times in [lo, hi)."""
        if lo >= hi:
            return 0
        day_lo, x_lo = divmod(lo, _DAY)
        day_hi, x_hi = divmod(hi, _DAY)
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
def _compile(expr: str) -> _CronTable:
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


def _field_hint(index: int, text: str) -> str:
    """Why a cron field that cronsim rejected is wrong, in a few words."""
    name = _FIELD_NAMES[index]
    lo, hi = _FIELD_RANGES[index]
    if re.search(r"/(?:,|$)", text):
        return "a step needs a number after '/', like */5"
    if re.search(r"/0+(?:,|$)", text):
        return "a step must be at least 1"
    if index == 5 and "#" in text:
        for nth in re.findall(r"#([0-9]*)", text):
            if not nth or not 1 <= int(nth) <= 5:
                return "the n in day#n must be between 1 and 5, like 5#3 (third Friday)"
    allowed: frozenset[str] = frozenset()
    if index == 3:
        allowed = frozenset({"L", "LW"})
    elif index == 4:
        allowed = _MONTH_NAMES
    elif index == 5:
        allowed = _DAY_NAMES | {"L"}
    for word in re.findall(r"[A-Z]+", text):
        if word not in allowed:
            if index == 4:
                return f"unknown name {word!r}: use 1-12 or JAN-DEC"
            if index == 5:
                return f"unknown name {word!r}: use 0-7 or SUN-SAT, 5L (last Friday) or 5#3"
            if index == 3:
                return f"unexpected {word!r}: use 1-31, L (last day) or LW (last weekday)"
            return f"unexpected {word!r}: use numbers {lo}-{hi}"
    pieces = re.split(r"[,/#-]", text)
    for piece in pieces:
        if piece.isdigit() and not lo <= int(piece) <= hi and "/" + piece not in text:
            return f"values must be between {lo} and {hi}"
    for start, end in re.findall(r"([0-9]+)-([0-9]+)", text):
        if int(start) > int(end):
            return "a range must go from low to high, like 1-5"
    if index == 3 and text != "*" and "," not in text and "-" not in text:
        return f"use 1-31, L or LW; no month has day {text}"
    return f"expected a {name} value, a range like 1-5, a list like 1,3 or a step like */5"


def _normalize_cron(text: str) -> tuple[str, bool]:
    """(normalized expression, has seconds) for a cron spec; SpecError if invalid."""
    raw = text.strip()
    if not raw:
        raise SpecError(f"empty spec: {_SPEC_HINT}")
    if raw.startswith("@"):
        word = raw.split()[0].lower()
        if word == "@reboot":
            raise SpecError(
                f"invalid cron spec {quote(text)}: @reboot is not a recurring time: "
                "use @daily, @hourly or a cron expression"
            )
        if word not in _ALIASES or len(raw.split()) != 1:
            raise SpecError(
                f"invalid cron spec {quote(text)}: unknown alias {quote(raw)}: use one of "
                "@yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly"
            )
        fields = _ALIASES[word].split()
    else:
        if not raw.isascii():
            raise SpecError(
                f"invalid cron spec {quote(text)}: "
                "only ASCII letters, digits and * , - / # are allowed"
            )
        fields = raw.upper().split()
        if len(fields) not in (5, 6):
            raise SpecError(
                f"invalid cron spec {quote(text)}: expected 5 fields (minute hour day-of-month "
                f"month day-of-week) or 6 with seconds first, got {len(fields)}; {_SPEC_HINT}"
            )
    expr = " ".join(fields)
    try:
        _compile(expr)
    except CronSimError as exc:
        message = str(exc)
        offset = 6 - len(fields)
        for index, name in enumerate(_FIELD_NAMES):
            if message == f"Bad {name}" and index - offset >= 0:
                hint = _field_hint(index, fields[index - offset])
                raise SpecError(
                    f"invalid cron spec {quote(text)}: bad {name} field "
                    f"{quote(fields[index - offset])} ({hint})"
                ) from None
        raise SpecError(f"invalid cron spec {quote(text)}: {message}") from None
    except Exception:  # defensive: cronsim must never leak another exception type
        raise SpecError(
            f"invalid cron spec {quote(text)}: not a valid cron expression; {_SPEC_HINT}"
        ) from None
    return expr, len(fields) == 6


def _cron_forward(table: _CronTable, tz: tzinfo, u: int, stop: int) -> Iterator[int]:
    """Slots s with u <= s <= stop, increasing and distinct."""
    if table.never:
        return
    fixed = table.fixed
    last = u - 1
    while u <= stop:
        seg = _segment(tz, u)
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
            day, x = divmod(w, _DAY)
            tod = table.next_tod(x + 1) if x + 1 < _DAY else None
            if tod is None:  # the day is over: find the next matching day
                w = table.next_wall((day + 1) * _DAY, hi_wall)
            else:  # same day, which is known to match
                w = day * _DAY + tod
                if w >= hi_wall:
                    w = None
        u = seg.end


def _cron_backward(table: _CronTable, tz: tzinfo, t: int, floor: int) -> int | None:
    """The newest slot s with floor < s <= t."""
    if table.never:
        return None
    u = t
    while u > floor:
        seg = _segment(tz, u)
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


def _cron_count(table: _CronTable, tz: tzinfo, u: int, stop: int) -> int:
    """Number of slots s with u <= s <= stop, one day (not one slot) at a time."""
    if table.never:
        return 0
    n = 0
    while u <= stop:
        seg = _segment(tz, u)
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


# --------------------------------------------------------------------------
# Specs


@lru_cache(maxsize=65536)
def _cached_next(spec: Spec, tz: tzinfo, after: int) -> datetime | None:
    found = spec._next(after, tz)
    if found is None or found > _MAX_TS:
        return None
    return _from_ts(found)


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
        """Whether the contract's fixed-time DST rules apply (see module doc)."""

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
        a = _to_ts(after, "after")
        if a >= _MAX_TS:
            return None
        return _cached_next(self, tz, max(a, _MIN_TS - 1))

    def slots_between(self, start: datetime, end: datetime, tz: ZoneInfo) -> Iterator[datetime]:
        """Slots in (start, end], increasing and distinct, computed lazily."""
        a = max(_to_ts(start, "start"), _MIN_TS - 1)
        b = min(_to_ts(end, "end"), _MAX_TS)
        return (_from_ts(s) for s in self._slots(a, b, tz)) if a < b else iter(())

    def count_between(self, start: datetime, end: datetime, tz: ZoneInfo) -> int:
        """Number of slots in (start, end], without walking them one by one."""
        a = max(_to_ts(start, "start"), _MIN_TS - 1)
        b = min(_to_ts(end, "end"), _MAX_TS)
        return self._count(a, b, tz) if a < b else 0

    def last_at_or_before(self, t: datetime, tz: ZoneInfo, floor: datetime) -> datetime | None:
        """The newest slot in (floor, t], or None."""
        b = min(_to_ts(t, "t"), _MAX_TS)
        a = max(_to_ts(floor, "floor"), _MIN_TS - 1)
        if a >= b:
            return None
        found = self._last(b, a, tz)
        return None if found is None else _from_ts(found)


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
        expr, seconds = _normalize_cron(self.expr)
        object.__setattr__(self, "expr", expr)
        object.__setattr__(self, "seconds", seconds)

    def canonical(self) -> str:
        return self.expr

    def fixed_time(self) -> bool:
        return _compile(self.expr).fixed

    def describe(self) -> str:
        parts = self.expr.split()
        if not self.seconds:
            parts.insert(0, "0")
        try:
            return Expression(parts).explain()
        except Exception:  # pragma: no cover - cronsim's explainer is best effort
            return f"cron {self.expr}"

    def min_period(self) -> timedelta:
        return timedelta(seconds=_compile(self.expr).min_gap())

    def _next(self, after: int, tz: tzinfo) -> int | None:
        return next(_cron_forward(_compile(self.expr), tz, after + 1, _MAX_TS), None)

    def _slots(self, after: int, stop: int, tz: tzinfo) -> Iterator[int]:
        return _cron_forward(_compile(self.expr), tz, after + 1, stop)

    def _count(self, after: int, stop: int, tz: tzinfo) -> int:
        return _cron_count(_compile(self.expr), tz, after + 1, stop)

    def _last(self, t: int, floor: int, tz: tzinfo) -> int | None:
        return _cron_backward(_compile(self.expr), tz, t, floor)


def _iso_utc(value: datetime) -> str:
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


@dataclass(frozen=True, slots=True)
class IntervalSpec(Spec):
    """Every ``every`` (whole seconds) of elapsed time: slots at
    ``anchor + k * every`` for k >= 0, in UTC. Time zones do not matter."""

    kind: ClassVar[str] = "interval"
    every: timedelta
    anchor: datetime = _EPOCH
    # Derived integer seconds, so that evaluation is pure integer arithmetic.
    _step: int = field(init=False, repr=False, compare=False, default=0)
    _origin: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        every_value = duration_or_reason(self.every)
        if isinstance(every_value, str):
            raise SpecError(f"invalid interval {quote(self.every)}: {every_value}")
        if every_value % _ONE_SECOND:
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
        if not _MIN_TS <= _to_ts(anchor, "anchor") <= _MAX_TS:
            raise SpecError(
                f"invalid interval anchor {quote(anchor)}: use a year between "
                f"{_FIRST_YEAR} and {_LAST_YEAR}"
            )
        object.__setattr__(self, "anchor", anchor)
        object.__setattr__(self, "_step", every_value // _ONE_SECOND)
        object.__setattr__(self, "_origin", _to_ts(anchor, "anchor"))

    def canonical(self) -> str:
        text = f"every {format_duration(self.every)}"
        if self.anchor != _EPOCH:
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
        if self.anchor != _EPOCH:
            text += f" starting {_iso_utc(self.anchor)}"
        return text

    def min_period(self) -> timedelta:
        return self.every

    def next_after(self, after: datetime, tz: ZoneInfo) -> datetime | None:
        found = self._next(_to_ts(after, "after"), tz)
        return None if found is None else _from_ts(found)

    def _next(self, after: int, tz: tzinfo) -> int | None:
        origin, step = self._origin, self._step
        found = origin if after < origin else origin + ((after - origin) // step + 1) * step
        return found if found <= _MAX_TS else None

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
    anchor: date = _EPOCH_DATE

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
        if not _FIRST_YEAR <= self.anchor.year <= _LAST_YEAR:
            raise SpecError(
                f"invalid calendar anchor {quote(self.anchor)}: use a year between "
                f"{_FIRST_YEAR} and {_LAST_YEAR}"
            )
        object.__setattr__(self, "at", self.at.replace(fold=0))

    def _unit_text(self) -> str:
        return self.unit if self.count == 1 else self.unit + "s"

    def canonical(self) -> str:
        text = f"every {self.count} {self._unit_text()} at {_format_time(self.at)}"
        if self.anchor != _EPOCH_DATE:
            text += f" from {self.anchor.isoformat()}"
        return text

    def fixed_time(self) -> bool:
        return True

    def describe(self) -> str:
        head = f"Every {self.unit}" if self.count == 1 else f"Every {self.count} {self.unit}s"
        text = f"{head} at {_format_time(self.at)}"
        if self.anchor != _EPOCH_DATE:
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
            if year > _LAST_YEAR:
                return None
            last = _calendar.monthrange(year, month0 + 1)[1]
            day = _day_index(date(year, month0 + 1, min(anchor.day, last)))
        else:
            day = _day_index(anchor) + k * self.count * (7 if self.unit == "week" else 1)
            if day > _MAX_TS // _DAY - 1:
                return None
        at = self.at
        return day * _DAY + at.hour * 3600 + at.minute * 60 + at.second

    def _instant(self, k: int, tz: tzinfo) -> int | None:
        wall = self._wall(k)
        if wall is None:
            return None
        found = _fixed_instant(tz, wall)
        return found if found <= _MAX_TS else None

    def _first_after(self, t: int, tz: tzinfo) -> int:
        """Smallest k >= 0 whose slot is after t (slots past the supported
        range count as after everything)."""
        local = _day_of((t + _segment(tz, t).offset) // _DAY)
        if self.unit == "month":
            months = (local.year - self.anchor.year) * 12 + local.month - self.anchor.month
            k = months // self.count
        else:
            period = self.count * (7 if self.unit == "week" else 1)
            k = (_day_index(local) - _day_index(self.anchor)) // period
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


# --------------------------------------------------------------------------
# Parsing

_CALENDAR_RE: Final = re.compile(
    r"every (?:(?P<count>[0-9]+) ?)?(?P<unit>days?|weeks?|months?|d|w|mo)"
    r"(?: at (?P<at>\S+))?(?: from (?P<anchor>\S+))?",
    re.IGNORECASE,
)
_INTERVAL_RE: Final = re.compile(
    r"every (?P<duration>.+?)(?: from (?P<anchor>\S+))?", re.IGNORECASE
)
_CALENDAR_EVERY_RE: Final = re.compile(
    r"\s*(?P<count>[0-9]+)?\s*(?P<unit>days?|weeks?|months?|d|w|mo)\s*", re.IGNORECASE
)
_TIME_RE: Final = re.compile(r"(?P<h>[0-9]{1,2}):(?P<m>[0-9]{2})(?::(?P<s>[0-9]{2}))?")
_UNIT_NAMES: Final = {
    "d": "day", "day": "day", "days": "day",
    "w": "week", "week": "week", "weeks": "week",
    "mo": "month", "month": "month", "months": "month",
}  # fmt: skip


def _parse_time(text: str) -> time | None:
    match = _TIME_RE.fullmatch(text)
    if match is None:
        return None
    h, m, s = int(match["h"]), int(match["m"]), int(match["s"] or 0)
    if h > 23 or m > 59 or s > 59:
        return None
    return time(h, m, s)


def _parse_date(text: str) -> date | None:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _parse_anchor(text: str) -> datetime | str:
    """An interval anchor (aware, UTC), or the reason it is not one."""
    hint = "use an ISO 8601 time with a UTC offset, like 2024-01-01T00:05:00Z, or a date"
    day = _parse_date(text)
    if day is not None:
        return datetime.combine(day, time(), UTC)
    if not text.isascii() or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ].+", text):
        return hint
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return hint
    if value.tzinfo is None:
        return "the anchor needs a UTC offset, like 2024-01-01T00:05:00Z"
    if value.microsecond:
        return "the anchor must be a whole second"
    return value.astimezone(UTC)


def _make_calendar(spec_text: str, count: int, unit: str, at: time, anchor: date) -> CalendarSpec:
    try:
        return CalendarSpec(count=count, unit=unit, at=at, anchor=anchor)
    except SpecError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise SpecError(f"invalid calendar spec {quote(spec_text)}: {reason}") from None


def _parse_every(text: str) -> Spec:
    flat = " ".join(text.split())
    match = _CALENDAR_RE.fullmatch(flat)
    if match is not None:
        unit = _UNIT_NAMES[match["unit"].lower()]
        if match["at"] is not None or unit == "month":
            count = int(match["count"]) if match["count"] is not None else 1
            at = time(0, 0)
            if match["at"] is not None:
                parsed_at = _parse_time(match["at"])
                if parsed_at is None:
                    raise SpecError(
                        f"invalid calendar spec {quote(text)}: bad time {quote(match['at'])}: "
                        "use HH:MM or HH:MM:SS on a 24-hour clock, like 09:00"
                    )
                at = parsed_at
            anchor = _EPOCH_DATE
            if match["anchor"] is not None:
                parsed_anchor = _parse_date(match["anchor"])
                if parsed_anchor is None:
                    raise SpecError(
                        f"invalid calendar spec {quote(text)}: bad anchor date "
                        f"{quote(match['anchor'])}: use YYYY-MM-DD, like 2024-01-05"
                    )
                anchor = parsed_anchor
            return _make_calendar(text, count, unit, at, anchor)
    match = _INTERVAL_RE.fullmatch(flat)
    if match is None:
        raise SpecError(
            f"invalid spec {quote(text)}: write 'every <duration>' like 'every 15m', "
            "or 'every <n> <days|weeks|months> at HH:MM' like 'every 1 day at 09:00'"
        )
    body = match["duration"]
    if re.search(r"(?:^| )at ", body, re.IGNORECASE):
        raise SpecError(
            f"invalid interval spec {quote(text)}: 'at' needs a calendar unit: write "
            "'every 1 day at 09:00', 'every 2 weeks at 09:00' or 'every 1 month at 09:00'"
        )
    duration = duration_or_reason(body)
    if isinstance(duration, str):
        raise SpecError(f"invalid interval spec {quote(text)}: {duration}")
    if duration % _ONE_SECOND:
        raise SpecError(f"invalid interval spec {quote(text)}: use a whole number of seconds")
    anchor_value: datetime = _EPOCH
    if match["anchor"] is not None:
        parsed = _parse_anchor(match["anchor"])
        if isinstance(parsed, str):
            raise SpecError(
                f"invalid interval spec {quote(text)}: "
                f"bad anchor {quote(match['anchor'])}: {parsed}"
            )
        anchor_value = parsed
    try:
        return IntervalSpec(every=duration, anchor=anchor_value)
    except SpecError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise SpecError(f"invalid interval spec {quote(text)}: {reason}") from None


def parse_spec(spec: str | Spec) -> Spec:
    """Parse a timing spec (see the module docstring for the syntax).

    A :class:`Spec` passes through unchanged. Bad input raises
    :class:`SpecError` (and nothing else) with a one-line message.
    """
    if isinstance(spec, Spec):
        return spec
    if not isinstance(spec, str):
        raise SpecError(f"invalid spec {quote(spec)}: expected a string; {_SPEC_HINT}")
    text = spec.strip()
    if not text:
        raise SpecError(f"empty spec: {_SPEC_HINT}")
    head = text.split(None, 1)[0].lower()
    if head == "every":
        return _parse_every(text)
    if head.startswith("every"):
        raise SpecError(f"invalid spec {quote(spec)}: put a space after 'every', like 'every 15m'")
    return CronSpec(text)


def every(
    duration: str | int | float | timedelta, *, anchor: datetime | None = None
) -> IntervalSpec:
    """An interval spec: ``every("90m")``, ``every(300, anchor=...)``."""
    value = duration_or_reason(duration)
    if isinstance(value, str):
        raise SpecError(f"invalid interval {quote(duration)}: {value}")
    return IntervalSpec(every=value, anchor=_EPOCH if anchor is None else anchor)


def calendar(
    every: str, *, at: str | time = "00:00", anchor: date | str | None = None
) -> CalendarSpec:
    """A calendar interval: ``calendar("2w", at="09:00", anchor="2024-01-05")``.

    ``every`` is ``<n><unit>`` with unit ``d``/``day(s)``, ``w``/``week(s)`` or
    ``mo``/``month(s)``.
    """
    match = _CALENDAR_EVERY_RE.fullmatch(every) if isinstance(every, str) else None
    if match is None:
        raise SpecError(
            f"invalid calendar period {quote(every)}: use a count and a unit, "
            "like 3d, 2w or 1mo (mo = months)"
        )
    count = int(match["count"]) if match["count"] is not None else 1
    unit = _UNIT_NAMES[match["unit"].lower()]
    if isinstance(at, str):
        parsed_at = _parse_time(at.strip())
        if parsed_at is None:
            raise SpecError(
                f"invalid calendar time {quote(at)}: "
                "use HH:MM or HH:MM:SS on a 24-hour clock, like 09:00"
            )
        at = parsed_at
    if anchor is None:
        anchor = _EPOCH_DATE
    elif isinstance(anchor, str):
        parsed_anchor = _parse_date(anchor.strip())
        if parsed_anchor is None:
            raise SpecError(
                f"invalid calendar anchor {quote(anchor)}: use YYYY-MM-DD, like 2024-01-05"
            )
        anchor = parsed_anchor
    return CalendarSpec(count=count, unit=unit, at=at, anchor=anchor)


def fingerprint(spec: Spec, tz: ZoneInfo) -> str:
    """The timing fingerprint: 16 hex digits of sha256(kind, canonical text, zone)."""
    key = getattr(tz, "key", None) or str(tz)
    payload = f"{spec.kind}\n{spec.canonical()}\n{key}".encode()
    return hashlib.sha256(payload).hexdigest()[:16]
