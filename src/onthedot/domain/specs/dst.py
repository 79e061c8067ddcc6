"""A DST gap between two instants, described for people: no slot in it is not a problem, but
the health view shows it (a wildcard spec has no slot in a gap; a fixed-time slot inside it
fires at the first instant after it, per the contract)."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from onthedot.domain.specs.base import Spec

_RESOLUTION = timedelta(seconds=1)


def dst_note(spec: Spec, tz: ZoneInfo, start: datetime, end: datetime | None) -> str | None:
    """One line about the first DST gap (clocks jumping forward) in (start, end], or None."""
    if end is None or end <= start or spec.kind == "interval":
        return None
    before, after = start.astimezone(tz).utcoffset(), end.astimezone(tz).utcoffset()
    if before is None or after is None or after <= before:
        return None
    lo, hi = start, end  # the offset changes in (lo, hi]: find the instant
    while hi - lo > _RESOLUTION:
        mid = lo + (hi - lo) / 2
        if mid.astimezone(tz).utcoffset() == before:
            lo = mid
        else:
            hi = mid
    at = hi.replace(microsecond=0)
    wall_from = (at + before).replace(tzinfo=None)
    wall_to = (at + after).replace(tzinfo=None)
    span = f"{wall_from:%Y-%m-%d %H:%M} to {wall_to:%H:%M} ({tz.key})"
    if spec.fixed_time():
        return (
            f"DST gap {span}: a slot at a wall-clock time inside it fires at "
            f"{wall_to:%H:%M}, the first instant after it"
        )
    return f"DST gap {span}: no slot at the wall-clock times inside it (they do not exist)"
