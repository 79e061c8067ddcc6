"""Durations: parsing and canonical formatting.

A duration is written as a number of seconds (``90``, ``"90"``, ``1.5``), a
``timedelta``, or a string of one or more ``<number><unit>`` parts from the
largest unit to the smallest, with optional spaces: ``"30s"``, ``"15m"``,
``"2h"``, ``"1d"``, ``"1w"``, ``"1h30m"``, ``"1h 30m"``, ``"1.5h"``,
``"2 weeks"``.

Units: ``s`` (``sec``, ``second`` ...), ``m`` (``min``, ``minute`` ...),
``h`` (``hr``, ``hour`` ...), ``d`` (``day``), ``w`` (``week``). Months and
years are not durations (their length varies); calendar intervals handle them.

Every problem is reported as a :class:`SpecError` whose message is one line
naming the bad value and saying how to fix it.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation

__all__ = [
    "SpecError",
    "duration_or_reason",
    "format_duration",
    "parse_duration",
    "quote",
]


class SpecError(ValueError):
    """A timing spec, duration or time zone that cannot be used.

    The message is a single line that names the offending value and says how
    to fix it.
    """


_SECOND = 1
_MINUTE = 60
_HOUR = 3600
_DAY = 86400
_WEEK = 7 * _DAY

_UNIT_SECONDS: dict[str, int] = {}
for _names, _seconds in (
    (("w", "wk", "wks", "week", "weeks"), _WEEK),
    (("d", "day", "days"), _DAY),
    (("h", "hr", "hrs", "hour", "hours"), _HOUR),
    (("m", "min", "mins", "minute", "minutes"), _MINUTE),
    (("s", "sec", "secs", "second", "seconds"), _SECOND),
):
    for _name in _names:
        _UNIT_SECONDS[_name] = _seconds

_NUMBER = r"[0-9]+(?:\.[0-9]+)?|\.[0-9]+"
_BARE_RE = re.compile(rf"(?:{_NUMBER})")
_PART_RE = re.compile(rf"\s*(?P<num>{_NUMBER})\s*(?P<unit>[a-z]+)\s*")

_HINT = "use a number with a unit like 30s, 15m, 2h or 1d"
_MAX_MICROSECONDS = timedelta.max // timedelta(microseconds=1)
_MAX_QUOTE = 80


def quote(value: object) -> str:
    """``repr`` of a value for an error message: always one line, never huge."""
    if isinstance(value, str) and len(value) > _MAX_QUOTE:
        value = value[: _MAX_QUOTE - 3] + "..."
    text = repr(value)
    if len(text) > _MAX_QUOTE + 10:
        text = text[: _MAX_QUOTE + 7] + "..."
    return text


def _microseconds(number: Decimal, unit_seconds: int) -> int | str:
    total = number * unit_seconds * 1_000_000
    if total != total.to_integral_value():
        return "the smallest step is one microsecond"
    return int(total)


def _from_text(text: str) -> int | str:
    """Microseconds for a duration string, or the reason it is invalid."""
    body = text.strip().lower()
    if not body:
        return f"it is empty: {_HINT}"
    if body.startswith("-"):
        return "a duration cannot be negative"
    if _BARE_RE.fullmatch(body):
        return _microseconds(Decimal(body), _SECOND)
    total = 0
    position = 0
    previous_unit = None
    while position < len(body):
        match = _PART_RE.match(body, position)
        if match is None:
            return _HINT
        unit = match.group("unit")
        unit_seconds = _UNIT_SECONDS.get(unit)
        if unit_seconds is None:
            if unit in ("mo", "mon", "month", "months", "y", "yr", "year", "years"):
                return (
                    "months and years have no fixed length: "
                    "use days or weeks, or a calendar interval"
                )
            return f"unknown unit {unit!r}: {_HINT}"
        if previous_unit is not None and unit_seconds >= previous_unit:
            return "write each unit once, from the largest to the smallest, like 1h30m"
        previous_unit = unit_seconds
        try:
            part = _microseconds(Decimal(match.group("num")), unit_seconds)
        except InvalidOperation:  # pragma: no cover - the regex only lets numbers through
            return _HINT
        if isinstance(part, str):
            return part
        total += part
        position = match.end()
    return total


def duration_or_reason(
    value: str | int | float | timedelta, *, allow_zero: bool = False
) -> timedelta | str:
    """The duration ``value`` stands for, or a short reason why it is not one.

    Used by :func:`parse_duration` and by the spec parser, which words its
    own messages.
    """
    micros: int | str
    if isinstance(value, bool):
        return f"a boolean is not a duration: {_HINT}"
    if isinstance(value, timedelta):
        micros = value // timedelta(microseconds=1)
    elif isinstance(value, int):
        micros = value * 1_000_000
    elif isinstance(value, float):
        if not math.isfinite(value):
            return f"it is not a finite number: {_HINT}"
        micros = _microseconds(Decimal(repr(value)), _SECOND)
    elif isinstance(value, str):
        micros = _from_text(value)
    else:
        return f"a {type(value).__name__} is not a duration: {_HINT}"
    if isinstance(micros, str):
        return micros
    if micros < 0:
        return "a duration cannot be negative"
    if micros == 0 and not allow_zero:
        return "it must be longer than zero"
    if micros > _MAX_MICROSECONDS:
        return "it is too long"
    return timedelta(microseconds=micros)


def parse_duration(
    value: str | int | float | timedelta,
    *,
    what: str = "duration",
    allow_zero: bool = False,
) -> timedelta:
    """Parse a duration; ``what`` names it in error messages.

    >>> parse_duration("1h30m")
    datetime.timedelta(seconds=5400)

    Zero is accepted only with ``allow_zero=True``; negative durations never.
    Raises :class:`SpecError` (and nothing else) for bad input.
    """
    result = duration_or_reason(value, allow_zero=allow_zero)
    if isinstance(result, str):
        raise SpecError(f"invalid {what} {quote(value)}: {result}")
    return result


def format_duration(value: timedelta) -> str:
    """Canonical short form: ``1h30m``, ``1m30s``, ``1d``, ``2w``, ``1.5s``, ``0s``.

    ``parse_duration(format_duration(d)) == d`` for every positive ``d``.
    """
    micros = value // timedelta(microseconds=1)
    if micros < 0:
        return "-" + format_duration(-value)
    if micros == 0:
        return "0s"
    seconds, fraction = divmod(micros, 1_000_000)
    parts: list[str] = []
    for unit, size in (("w", _WEEK), ("d", _DAY), ("h", _HOUR), ("m", _MINUTE)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    if seconds or fraction:
        text = str(seconds)
        if fraction:
            text += "." + f"{fraction:06d}".rstrip("0")
        parts.append(f"{text}s")
    return "".join(parts)
