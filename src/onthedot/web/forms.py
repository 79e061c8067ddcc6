"""Reading what a browser sends: every value is checked here, so a hostile string (markup, SQL,
a NUL byte, a megabyte of text, a number past 64 bits) becomes a 400 and never reaches a verb."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo

from onthedot.domain.durations import parse_duration
from onthedot.domain.jobs import JobFilter, JobState
from onthedot.domain.specs import SpecError

MAX_TEXT = 500  # filters, keys, notes
MAX_JSON = 100_000  # arguments of a runtime schedule
MAX_ID = 2**63 - 1
PAGE_SIZE = 50


class BadInput(ValueError):
    """A value a browser sent cannot be used: answered with 400 and the reason."""


class NotFound(LookupError):
    """The object named by the URL does not exist: answered with 404."""


def text(value: object, what: str, *, max_len: int = MAX_TEXT) -> str | None:
    """A stripped string, None when empty. Refuses NUL, other control characters but tab and
    newlines, and values longer than `max_len`."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"{what}: expected text")
    if len(value) > max_len:
        raise BadInput(f"{what} is {len(value)} characters long, over the limit of {max_len}")
    if any((ord(c) < 32 and c not in "\t\r\n") or ord(c) == 127 for c in value):
        raise BadInput(f"{what} contains control characters")
    value = value.strip()
    return value or None


def positive_id(value: object, what: str) -> int | None:
    raw = text(value, what, max_len=40)
    if raw is None:
        return None
    if not raw.isascii() or not raw.isdigit():
        raise BadInput(f"{what} must be a positive whole number")
    number = int(raw)
    if not 0 < number <= MAX_ID:
        raise BadInput(f"{what} is out of range")
    return number


def job_id(value: object) -> int:
    found = positive_id(value, "job id")
    if found is None:
        raise BadInput("job id is missing")
    return found


def state(value: object) -> JobState | None:
    raw = text(value, "state", max_len=20)
    if raw is None:
        return None
    try:
        return JobState(raw)
    except ValueError:
        raise BadInput(
            f"unknown state: use one of {', '.join(s.value for s in JobState)}"
        ) from None


def flag(value: object) -> bool:
    return value in ("1", "on", "true", "yes")


@dataclass(frozen=True, slots=True)
class JobQuery:
    """The jobs page's filter, from its query string or a bulk action's form."""

    state: JobState | None = None
    queue: str | None = None
    name: str | None = None
    schedule: str | None = None
    search: str | None = None
    before: int | None = None

    @classmethod
    def parse(cls, data: Mapping[str, object]) -> JobQuery:
        return cls(
            state=state(data.get("state")),
            queue=text(data.get("queue"), "queue"),
            name=text(data.get("name"), "name"),
            schedule=text(data.get("schedule"), "schedule"),
            search=text(data.get("search"), "search"),
            before=positive_id(data.get("before"), "before"),
        )

    def filter(self, *, limit: int = PAGE_SIZE, page: bool = True) -> JobFilter:
        return JobFilter(
            state=self.state,
            queue=self.queue,
            name=self.name,
            schedule_key=self.schedule,
            search=self.search,
            before_id=self.before if page else None,
            limit=limit,
        )

    def params(self, *, before: int | None = None) -> dict[str, str]:
        """The filter as query parameters (the page cursor only when given)."""
        out = {
            "state": self.state.value if self.state else "",
            "queue": self.queue or "",
            "name": self.name or "",
            "schedule": self.schedule or "",
            "search": self.search or "",
        }
        if before is not None:
            out["before"] = str(before)
        return {k: v for k, v in out.items() if v}

    def query(self, *, before: int | None = None) -> str:
        return urlencode(self.params(before=before))

    @property
    def empty(self) -> bool:
        return not self.params()


def local_path(value: object, default: str) -> str:
    """A path inside the admin to go back to; anything else (another host, a scheme) is
    replaced by `default`."""
    try:
        raw = text(value, "next", max_len=2000)
    except BadInput:
        return default
    if not raw or not raw.startswith("/") or raw.startswith("//") or "\\" in raw:
        return default
    return raw


def instant(value: object, what: str, tz: ZoneInfo, now: datetime) -> datetime | None:
    """An instant: ISO-8601 (an offset or Z, else in `tz`; the `datetime-local` input's
    format works) or a duration from now such as `2h`."""
    raw = text(value, what, max_len=64)
    if raw is None:
        return None
    if raw[:1].isdigit() and "-" not in raw and ":" not in raw:
        try:
            return now + parse_duration(raw, what=what)
        except SpecError as exc:
            raise BadInput(str(exc)) from None
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        raise BadInput(
            f"{what}: use ISO-8601 like 2030-01-31T09:00 or a duration like 2h"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=tz)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        raise BadInput(f"{what} is out of range") from None


def json_value(
    value: object, what: str, kind: type[list[object]] | type[dict[str, object]]
) -> object:
    raw = text(value, what, max_len=MAX_JSON)
    if raw is None:
        return None
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadInput(f"{what} is not valid JSON") from None
    if not isinstance(parsed, kind):
        raise BadInput(f"{what} must be a JSON {'array' if kind is list else 'object'}")
    return parsed


def whole(value: object, what: str) -> int | None:
    raw = text(value, what, max_len=12)
    if raw is None:
        return None
    try:
        number = int(raw)
    except ValueError:
        raise BadInput(f"{what} must be a whole number") from None
    if abs(number) > 1_000_000:
        raise BadInput(f"{what} is out of range")
    return number


def schedule_fields(form: Mapping[str, object], *, creating: bool) -> dict[str, object]:
    """The fields of the create/edit form of a runtime schedule, as keyword arguments of
    `app.schedules.create` / `update` (empty ones left out, so an edit keeps them)."""
    out: dict[str, object] = {}
    for name in ("spec", "job", "timezone", "catchup", "catchup_window", "overlap", "jitter"):
        value = text(form.get(name), name.replace("_", " "))
        if value is not None:
            out[name] = value
    queue = text(form.get("queue"), "queue")
    if queue is not None:
        out["queue"] = queue
    priority = whole(form.get("priority"), "priority")
    if priority is not None:
        out["priority"] = priority
    args = json_value(form.get("args"), "arguments", list)
    if args is not None:
        out["args"] = args
    kwargs = json_value(form.get("kwargs"), "keyword arguments", dict)
    if kwargs is not None:
        out["kwargs"] = kwargs
    if creating:
        for required in ("spec", "job"):
            if required not in out:
                raise BadInput(f"{required} is required")
    return out


def key_path(key: object) -> str:
    """The path of a schedule's page: the key is ONE path segment, every `/`, `\\`, `?`, `#`
    and `%` percent-encoded, so a key such as `../queues/default` can never make a browser
    resolve the URL to another object (the server decodes `%2F` before routing, and the
    `{key:path}` route takes the rest of the path, so the schedule is still found). A key of
    dots only (`..`) would still be a dot segment (browsers treat `%2E%2E` like `..`):
    validation refuses such keys; an older one gets a URL that resolves to no action."""
    return "/schedules/" + quote(str(key), safe=":@!$&'()*+,;=-._~")
