"""Parsing timing specs from text, and the builders every() and calendar()."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

from onthedot.domain.durations import SpecError, duration_or_reason, quote
from onthedot.domain.specs.base import Spec
from onthedot.domain.specs.cron_syntax import SPEC_HINT
from onthedot.domain.specs.instants import EPOCH, EPOCH_DATE, ONE_SECOND
from onthedot.domain.specs.kinds import CalendarSpec, CronSpec, IntervalSpec

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
            anchor = EPOCH_DATE
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
    if duration % ONE_SECOND:
        raise SpecError(f"invalid interval spec {quote(text)}: use a whole number of seconds")
    anchor_value: datetime = EPOCH
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
    """Parse a timing spec (see the package docstring for the syntax).

    A :class:`Spec` passes through unchanged. Bad input raises
    :class:`SpecError` (and nothing else) with a one-line message.
    """
    if isinstance(spec, Spec):
        return spec
    if not isinstance(spec, str):
        raise SpecError(f"invalid spec {quote(spec)}: expected a string; {SPEC_HINT}")
    text = spec.strip()
    if not text:
        raise SpecError(f"empty spec: {SPEC_HINT}")
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
    return IntervalSpec(every=value, anchor=EPOCH if anchor is None else anchor)


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
        anchor = EPOCH_DATE
    elif isinstance(anchor, str):
        parsed_anchor = _parse_date(anchor.strip())
        if parsed_anchor is None:
            raise SpecError(
                f"invalid calendar anchor {quote(anchor)}: use YYYY-MM-DD, like 2024-01-05"
            )
        anchor = parsed_anchor
    return CalendarSpec(count=count, unit=unit, at=at, anchor=anchor)
