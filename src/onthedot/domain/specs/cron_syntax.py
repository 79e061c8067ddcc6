"""Cron text: aliases, normalization, and a few words on why a rejected field is wrong."""

from __future__ import annotations

import re
from typing import Final

from cronsim import CronSimError

from onthedot.domain.durations import SpecError, quote
from onthedot.domain.specs.cron import compile_cron

SPEC_HINT: Final = (
    "use a cron expression like '*/5 * * * *', an interval like 'every 15m' "
    "or a calendar interval like 'every 1 day at 09:00'"
)

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


def normalize_cron(text: str) -> tuple[str, bool]:
    """(normalized expression, has seconds) for a cron spec; SpecError if invalid."""
    raw = text.strip()
    if not raw:
        raise SpecError(f"empty spec: {SPEC_HINT}")
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
                f"month day-of-week) or 6 with seconds first, got {len(fields)}; {SPEC_HINT}"
            )
    expr = " ".join(fields)
    try:
        compile_cron(expr)
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
            f"invalid cron spec {quote(text)}: not a valid cron expression; {SPEC_HINT}"
        ) from None
    return expr, len(fields) == 6
