"""`onthedot import-beat module:celery_app`: print the `app.schedule(...)` lines equivalent to
a Celery app's `beat_schedule`, and one line for each thing that has no onthedot equivalent.

Nothing is written or enqueued: the output is Python to review and paste into the module
that defines your App. Celery itself must be importable (it is your project's dependency).
"""

from __future__ import annotations

import importlib
import json
import numbers
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import click

# Celery `options` onthedot carries over (when of this type); every other one is reported.
CARRIED_OPTIONS: dict[str, type] = {"queue": str, "priority": int}

# Celery reads a day or month name by its first three letters ("sunday", "Tues", "january");
# cron (and onthedot) takes exactly those three.
_WORD = re.compile(r"[A-Za-z]+")


RELATIVE_NOTE = (
    "relative=True (intervals aligned to the period) has no equivalent: onthedot "
    "intervals count from the schedule's anchor"
)


@dataclass(frozen=True)
class Converted:
    """One beat entry: the `app.schedule(...)` line (None when it has no equivalent) and the
    notes about what could not be carried over."""

    name: str
    line: str | None
    notes: list[str] = field(default_factory=list)


def convert_beat(beat_schedule: Mapping[str, Any], timezone: str) -> list[Converted]:
    """Convert every entry of a `beat_schedule` whose crontabs are in `timezone`."""
    return [convert_entry(name, entry, timezone) for name, entry in beat_schedule.items()]


def convert_entry(name: str, entry: Mapping[str, Any], timezone: str) -> Converted:
    notes: list[str] = []
    spec, spec_note, is_cron = _spec(entry.get("schedule"))
    if spec_note and spec is None:
        return Converted(name, None, [spec_note])
    if spec_note:
        notes.append(spec_note)
    if entry.get("relative") and spec_note != RELATIVE_NOTE:
        notes.append(RELATIVE_NOTE)
    task = entry.get("task")
    if not isinstance(task, str) or not task:
        return Converted(name, None, ["no 'task' name"])
    parts = [repr(name), repr(spec), repr(task)]
    args, kwargs = list(entry.get("args") or ()), dict(entry.get("kwargs") or {})
    for what, value in (("args", args), ("kwargs", kwargs)):
        if value:
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                return Converted(name, None, [f"{what} are not JSON: onthedot stores JSON only"])
            parts.append(f"{what}={value!r}")
    if is_cron and timezone != "UTC":
        parts.append(f"timezone={timezone!r}")
    options = dict(entry.get("options") or {})
    for key, kind in CARRIED_OPTIONS.items():
        carried = options.get(key)
        if isinstance(carried, kind) and not isinstance(carried, bool):
            parts.append(f"{key}={options.pop(key)!r}")
            if key == "priority":
                notes.append(
                    "priority carried as is: onthedot runs higher first, which is not what "
                    "every Celery broker does"
                )
    for key in sorted(options, key=str):
        notes.append(f"option {key!r}={options[key]!r} has no equivalent")
    for key in sorted(set(entry) - {"task", "schedule", "args", "kwargs", "options", "relative"}):
        notes.append(f"entry key {key!r} has no equivalent")
    return Converted(name, f"app.schedule({', '.join(parts)})", notes)


def _spec(schedule: Any) -> tuple[str | None, str | None, bool]:
    """(onthedot spec, note, is it a cron spec) for a beat `schedule` value."""
    from celery.schedules import crontab, solar
    from celery.schedules import schedule as interval

    if isinstance(schedule, crontab):
        fields = [
            schedule._orig_minute,
            schedule._orig_hour,
            schedule._orig_day_of_month,
            schedule._orig_month_of_year,
            schedule._orig_day_of_week,
        ]
        text = [_cron_field(f) for f in fields]
        note = None
        if text[2] != "*" and text[4] != "*":
            note = (
                "day_of_month and day_of_week both set: Celery runs when both match, cron "
                "(and onthedot) when either does"
            )
        return " ".join(text), note, True
    if isinstance(schedule, solar):
        return None, f"solar schedule ({schedule.event!r}) has no equivalent", False
    if type(schedule) is interval:
        spec, note, is_cron = _every(schedule.run_every)
        if note is None and getattr(schedule, "relative", False):
            note = RELATIVE_NOTE
        return spec, note, is_cron
    if isinstance(schedule, timedelta):
        return _every(schedule)
    if isinstance(schedule, numbers.Real) and not isinstance(schedule, bool):
        return _every(timedelta(seconds=float(schedule)))
    return None, f"custom schedule class {type(schedule).__qualname__} has no equivalent", False


def _cron_field(value: Any) -> str:
    if isinstance(value, str):
        return _WORD.sub(lambda m: m.group()[:3].lower(), value.replace(" ", ""))
    if isinstance(value, Iterable):
        return ",".join(_cron_field(v) for v in sorted(value, key=str))
    return str(value)


def _one_line(text: str) -> str:
    """`text` for a comment line: every line break or control character shown escaped, so
    nothing in a beat entry can end the comment."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _every(delta: timedelta) -> tuple[str | None, str | None, bool]:
    seconds = delta.total_seconds()
    if seconds <= 0 or seconds != int(seconds):
        return None, f"interval of {seconds}s: onthedot intervals are whole seconds > 0", False
    s = int(seconds)
    for unit, size in (("h", 3600), ("m", 60)):
        if s % size == 0:
            return f"every {s // size}{unit}", None, False
    return f"every {s}s", None, False


def load_celery(path: str) -> Any:
    """The Celery app at `module:attr` (default attribute `app`, then `celery`)."""
    module_name, _, attr = path.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise click.UsageError(f"cannot import {module_name!r}: {exc}") from None
    for name in [attr] if attr else ["app", "celery"]:
        obj = getattr(module, name, None)
        if obj is not None and hasattr(obj, "conf"):
            return obj
    raise click.UsageError(f"{path!r} names no Celery app (an object with .conf)")


@click.command("import-beat")
@click.argument("celery_app")
def import_beat(celery_app: str) -> None:
    """Print app.schedule(...) lines for CELERY_APP's beat_schedule (module:attr)."""
    app = load_celery(celery_app)
    beat = dict(app.conf.beat_schedule or {})
    timezone = str(app.conf.timezone or "UTC")
    header = f"# onthedot schedules for the beat_schedule of {celery_app} ({len(beat)} entries)"
    click.echo(_one_line(header))
    click.echo("# Each task name must be an onthedot job: @app.job(name='proj.tasks.add')")
    for item in convert_beat(beat, timezone):
        if item.line is None:
            click.echo(_one_line(f"# SKIPPED {item.name!r}: {'; '.join(item.notes)}"))
            continue
        for note in item.notes:
            click.echo(_one_line(f"# NOTE {item.name!r}: {note}"))
        click.echo(item.line)
