"""Time zones: offsets, transitions, constant-offset segments, and the instant of a
fixed-time slot at a local wall-clock time (the daylight saving time machinery)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Final
from zoneinfo import ZoneInfo

from onthedot.domain.durations import SpecError, quote
from onthedot.domain.specs.instants import (
    DAY,
    EPOCH,
    FIRST_YEAR,
    LAST_YEAR,
    MAX_TS,
    MIN_TS,
    NAIVE_EPOCH,
    ONE_SECOND,
    year_of,
    year_start,
)

# Time zone transitions are found by sampling offsets this far apart and
# bisecting. Consecutive transitions in the tz database are at least ~4 days
# apart (the closest: Africa/Freetown 1939), so a day-long step misses none.
_PROBE: Final = DAY

_TZ_HINT: Final = "use an IANA name such as 'Europe/Paris' or 'UTC'"


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
    return 0 if delta is None else delta // ONE_SECOND


@lru_cache(maxsize=256)
def _fixed_offset(tz: tzinfo) -> int | None:
    """The offset of a zone that never changes it (UTC, Etc/GMT+5), else None."""
    delta = tz.utcoffset(None)
    return None if delta is None else delta // ONE_SECOND


@dataclass(frozen=True, slots=True)
class _Transitions:
    """Offset changes of one zone within one UTC year: instant, offset before, after."""

    at: tuple[int, ...]
    before: tuple[int, ...]
    after: tuple[int, ...]


_NO_TRANSITIONS: Final = _Transitions((), (), ())


@lru_cache(maxsize=4096)
def _transitions(tz: tzinfo, year: int) -> _Transitions:
    if year < FIRST_YEAR - 1 or year > LAST_YEAR + 1 or _fixed_offset(tz) is not None:
        return _NO_TRANSITIONS
    start = year_start(year)
    end = year_start(year + 1)
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
        return MAX_TS + 1
    year = year_of(ts)
    trans = _transitions(tz, year)
    i = bisect_right(trans.at, ts)
    if i < len(trans.at):
        return trans.at[i]
    return year_start(year + 1)


def _segment_start(tz: tzinfo, ts: int) -> int:
    """Start (inclusive) of the piece of constant offset containing ``ts``:
    the latest transition at or before ``ts`` in its UTC year, else the
    year's start."""
    if _fixed_offset(tz) is not None:
        return MIN_TS
    year = year_of(ts)
    trans = _transitions(tz, year)
    i = bisect_right(trans.at, ts)
    if i > 0:
        return trans.at[i - 1]
    return year_start(year)


def _transition_at(tz: tzinfo, ts: int) -> tuple[int, int] | None:
    """(offset before, offset after) if a transition happens exactly at ``ts``."""
    if _fixed_offset(tz) is not None:
        return None
    trans = _transitions(tz, year_of(ts))
    i = bisect_left(trans.at, ts)
    if i < len(trans.at) and trans.at[i] == ts:
        return trans.before[i], trans.after[i]
    return None


def _latest_transition(tz: tzinfo, ts: int) -> tuple[int, int, int] | None:
    """The latest transition at or before ``ts`` if it is less than 2 days old."""
    if _fixed_offset(tz) is not None:
        return None
    year = year_of(ts)
    for y in (year, year - 1):
        trans = _transitions(tz, y)
        i = bisect_right(trans.at, ts)
        if i > 0:
            t = trans.at[i - 1]
            if t > ts - 2 * DAY:
                return t, trans.before[i - 1], trans.after[i - 1]
            return None
        if year_start(y) <= ts - 2 * DAY:
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


def zone_segment(tz: tzinfo, ts: int) -> _Segment:
    """The segment containing ``ts``; the last one found per zone is kept."""
    seg = _LAST_SEGMENT.get(tz)
    if seg is not None and seg.start <= ts < seg.end:
        return seg
    fixed = _fixed_offset(tz)
    if fixed is not None:
        seg = _Segment(MIN_TS - 2 * DAY, MAX_TS + 2 * DAY, fixed, None, None)
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


def fixed_instant(tz: tzinfo, wall: int) -> int:
    """The instant of a fixed-time slot at local wall-clock time ``wall``.

    A real time maps to its first occurrence; a time in a gap maps to the
    first instant after the gap.
    """
    seg = zone_segment(tz, wall - zone_segment(tz, wall).offset)
    u = wall - seg.offset
    if seg.start <= u < seg.end and (seg.floor is None or wall >= seg.floor):
        return u  # the usual case: one occurrence, away from transitions
    naive = NAIVE_EPOCH + timedelta(seconds=wall)
    u0 = (naive.replace(tzinfo=tz) - EPOCH) // ONE_SECOND
    u1 = (naive.replace(tzinfo=tz, fold=1) - EPOCH) // ONE_SECOND
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
