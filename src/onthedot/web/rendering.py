"""The Jinja2 environment (autoescape always on) and the filters the templates use to show
times, durations and JSON values."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from onthedot.domain.durations import format_duration
from onthedot.web.forms import key_path

TEMPLATES = Path(__file__).parent / "templates"


def build_environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,  # every value is escaped, whatever the template's name
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=when,
        local=local,
        ago=ago,
        seconds=seconds,
        duration=duration,
        pretty=pretty,
        short=short,
        number=number,
        key_path=key_path,
    )
    return env


def to_datetime(value: datetime | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def when(value: datetime | str | None) -> str:
    """UTC, to the second: `2030-01-31 09:00:00Z`."""
    dt = to_datetime(value)
    return "-" if dt is None else dt.strftime("%Y-%m-%d %H:%M:%SZ")


def local(value: datetime | str | None, tz: str | None) -> str:
    """In the schedule's time zone, with its abbreviation: `Fri 2030-01-31 10:00 CET`, and
    the seconds when there are any (`10:00:20 CET`: a sub-minute schedule's slots)."""
    dt = to_datetime(value)
    if dt is None:
        return "-"
    try:
        zone = ZoneInfo(tz or "UTC")
    except (ValueError, KeyError, OSError):
        zone = ZoneInfo("UTC")
    shown = dt.astimezone(zone)
    return shown.strftime("%a %Y-%m-%d %H:%M:%S %Z" if shown.second else "%a %Y-%m-%d %H:%M %Z")


def seconds(value: float | None) -> str:
    """A measured duration (an age, a wait, a run), rounded to the largest sensible units:
    `45s`, `3m 20s`, `2h 5m`, `3d 4h`. A configured one is shown by `duration`."""
    if value is None:
        return "-"
    total = int(abs(value))
    if total < 60:
        return f"{abs(value):.0f}s" if abs(value) >= 1 or value == 0 else f"{abs(value):.1f}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s" if secs else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def duration(value: timedelta | float | None) -> str:
    """A configured duration (a timeout, a catch-up window, a jitter) exactly as onthedot
    writes it everywhere, the CLI and the docs included: `30s`, `1h30m`, `1d`."""
    if value is None:
        return "-"
    return format_duration(value if isinstance(value, timedelta) else timedelta(seconds=value))


def ago(value: datetime | str | None, now: datetime) -> str:
    """`5m ago` or `in 5m` relative to `now`."""
    dt = to_datetime(value)
    if dt is None:
        return "-"
    delta = (now - dt).total_seconds()
    if abs(delta) < 1:
        return "now"
    return f"{seconds(delta)} ago" if delta > 0 else f"in {seconds(-delta)}"


def pretty(value: object) -> str:
    """JSON, indented; escaping happens in the template like for every value."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def short(value: object, limit: int = 120) -> str:
    """One line of at most `limit` characters (JSON for non-strings)."""
    if isinstance(value, str):
        line = value
    else:
        try:
            line = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            line = repr(value)
    line = " ".join(line.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def number(value: int | float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,}".replace(",", "\u202f")
