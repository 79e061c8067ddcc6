"""A schedule's expectations: how late its slot's job may start (`grace`), how long it may run
(`max_runtime`, a duration or "auto"), by when it must have succeeded (`deadline`), and the
optional outbound heartbeat (`ping`). Parsing, the defaults, and the operator's overrides.

Every schedule is watched: without `grace`, the default is one period of the spec, at least
one minute and at most one hour (`default_grace`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from onthedot.domain.durations import format_duration, parse_duration, quote
from onthedot.domain.fields import text_problem
from onthedot.domain.payload import JsonObject
from onthedot.domain.specs import Spec, SpecError, parse_spec

GRACE_FLOOR = timedelta(minutes=1)
GRACE_CEILING = timedelta(hours=1)
# max_runtime="auto": a run is overrunning past AUTO_FACTOR x the p95 of its recent successful
# runs (at least AUTO_FLOOR), once AUTO_SAMPLES of them are known.
AUTO_FACTOR = 3
AUTO_FLOOR = timedelta(seconds=10)
AUTO_SAMPLES = 5
DURATIONS_KEPT = 20  # recent successful run times kept per schedule
MAX_PING_LENGTH = 2000
EXPECTATION_FIELDS = ("grace", "max_runtime", "deadline", "ping")

MaxRuntime = timedelta | Literal["auto"] | None

_TIME_OF_DAY = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$")


@dataclass(frozen=True, slots=True)
class Deadline:
    """By when a slot's job must have succeeded: a local time of day (the first such time after
    the slot, in the schedule's zone; "06:00"), or a duration after the slot ("4h")."""

    at: time | None = None
    after: timedelta | None = None

    def text(self) -> str:
        if self.at is not None:
            return self.at.strftime("%H:%M:%S" if self.at.second else "%H:%M")
        assert self.after is not None
        return format_duration(self.after)

    def instant(self, slot: datetime, tz: ZoneInfo) -> datetime:
        """The deadline of `slot`. A local time that does not exist that day (a DST gap) is the
        first instant after the gap, as a fixed-time schedule fires."""
        if self.after is not None:
            return slot + self.after
        assert self.at is not None
        daily = _daily(self.at)
        found = daily.next_after(slot, tz)
        assert found is not None  # a daily calendar spec always has a next slot
        return found


@lru_cache(maxsize=1024)
def _daily(at: time) -> Spec:
    return parse_spec(f"every 1 day at {at.strftime('%H:%M:%S')}")


@dataclass(frozen=True, slots=True)
class Expectations:
    """What a schedule promises; `grace` None means the default (see `late_after`)."""

    grace: timedelta | None = None
    max_runtime: MaxRuntime = None
    deadline: Deadline | None = None
    ping: str | None = None

    def late_after(self, spec: Spec) -> timedelta:
        """How long after its slot a job may start before the slot is late."""
        return self.grace if self.grace is not None else default_grace(spec)

    def runtime_limit(self, durations: Sequence[float]) -> timedelta | None:
        """How long one run may last (None: no limit, or "auto" without enough history)."""
        if self.max_runtime is None or isinstance(self.max_runtime, timedelta):
            return self.max_runtime
        if len(durations) < AUTO_SAMPLES:
            return None
        p95 = percentile(durations, 95)
        return max(timedelta(seconds=AUTO_FACTOR * p95), AUTO_FLOOR)

    def to_json(self) -> JsonObject:
        """The expectations as stored (only the ones set)."""
        out: JsonObject = {}
        if self.grace is not None:
            out["grace"] = format_duration(self.grace)
        if self.max_runtime is not None:
            out["max_runtime"] = (
                "auto" if self.max_runtime == "auto" else format_duration(self.max_runtime)
            )
        if self.deadline is not None:
            out["deadline"] = self.deadline.text()
        if self.ping is not None:
            out["ping"] = self.ping
        return out

    def describe(self) -> str:
        """`grace=10m max_runtime=30m deadline=06:00 ping=https://hc-ping.com/…` (the ones
        set; a ping without its secret path)."""
        grace = "default" if self.grace is None else format_duration(self.grace)
        parts = [f"grace={grace}"]
        runtime = self.max_runtime
        if runtime is not None:
            parts.append(f"max_runtime={'auto' if runtime == 'auto' else format_duration(runtime)}")
        if self.deadline is not None:
            parts.append(f"deadline={self.deadline.text()}")
        if self.ping is not None:
            parts.append(f"ping={redact(self.ping)}")
        return " ".join(parts)

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> Expectations:
        """These expectations with an operator's overrides on top (a field present in the
        overrides wins, None included: "off"; for grace, None is the default). Invalid stored
        values are ignored rather than raised: a watcher never stops on one bad row."""
        if not overrides:
            return self
        parsed, problems = parse_expectations(
            {f: overrides[f] for f in EXPECTATION_FIELDS if f in overrides}
        )
        if problems:
            return self
        return Expectations(
            grace=parsed.grace if "grace" in overrides else self.grace,
            max_runtime=parsed.max_runtime if "max_runtime" in overrides else self.max_runtime,
            deadline=parsed.deadline if "deadline" in overrides else self.deadline,
            ping=parsed.ping if "ping" in overrides else self.ping,
        )


def default_grace(spec: Spec) -> timedelta:
    """The grace of a schedule that declares none: one period of its spec, at least a minute
    (a tick is a second, a busy worker can take a few) and at most an hour."""
    return min(max(period(spec), GRACE_FLOOR), GRACE_CEILING)


@lru_cache(maxsize=4096)
def period(spec: Spec) -> timedelta:
    """`spec.min_period()`, computed once per spec (a cron's walks its times of day)."""
    return spec.min_period()


def percentile(values: Sequence[float], pct: float) -> float:
    """The `pct` percentile of `values` (nearest rank; 0.0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil, at least the first
    return ordered[int(rank) - 1]


def parse_expectations(values: Mapping[str, Any]) -> tuple[Expectations, list[str]]:
    """Parse `grace`, `max_runtime`, `deadline` and `ping` as written by a user (absent or None:
    not set). Returns the expectations and every problem found, one line each."""
    problems: list[str] = []
    grace = _duration(values.get("grace"), "grace", problems.append, allow_zero=True)
    max_runtime: MaxRuntime = None
    raw = values.get("max_runtime")
    if isinstance(raw, str) and raw.strip().lower() == "auto":
        max_runtime = "auto"
    elif raw is not None:
        found = _duration(raw, "max_runtime", problems.append, allow_zero=False)
        if found is None and problems and "invalid max_runtime" in problems[-1]:
            problems[-1] += " (or 'auto': a multiple of its own p95)"
        max_runtime = found
    deadline = _deadline(values.get("deadline"), problems.append)
    ping = _ping(values.get("ping"), problems.append)
    return Expectations(grace, max_runtime, deadline, ping), problems


def stored_expectations(definition: Mapping[str, Any] | None) -> Expectations:
    """The expectations of a stored definition, leniently: an invalid one counts as unset (a
    watcher never stops on one bad row)."""
    values = {f: (definition or {}).get(f) for f in EXPECTATION_FIELDS}
    parsed, problems = parse_expectations(values)
    return Expectations() if problems else parsed


def _duration(
    value: Any, what: str, err: Callable[[str], None], *, allow_zero: bool
) -> timedelta | None:
    if value is None:
        return None
    try:
        return parse_duration(value, what=what, allow_zero=allow_zero)
    except SpecError as exc:
        err(str(exc))
        return None


def _deadline(value: Any, err: Callable[[str], None]) -> Deadline | None:
    if value is None:
        return None
    if isinstance(value, time):
        return Deadline(at=value.replace(microsecond=0, tzinfo=None))
    if isinstance(value, str) and ":" in value:
        match = _TIME_OF_DAY.match(value.strip())
        if match is None:
            err(
                f"invalid deadline {quote(value)}: a time of day is HH:MM or HH:MM:SS on the "
                "24-hour clock, like 06:00"
            )
            return None
        hour, minute, second = (int(g) if g else 0 for g in match.groups())
        return Deadline(at=time(hour, minute, second))
    try:
        return Deadline(after=parse_duration(value, what="deadline"))
    except SpecError as exc:
        err(f"{exc} (or a time of day in the schedule's zone, like 06:00)")
        return None


def _ping(value: Any, err: Callable[[str], None]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        err(f"ping must be a URL string, got {type(value).__name__}")
        return None
    if (problem := text_problem(value, "ping URL")) is not None:
        err(problem)
        return None
    if len(value) > MAX_PING_LENGTH:
        err(f"ping URL is {len(value)} characters, over the limit of {MAX_PING_LENGTH}")
        return None
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        err("ping URL must not contain spaces or control characters")
        return None
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        err(f"ping URL {quote(value)} is not a URL: {exc}")
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        err(f"ping URL {quote(redact(value))} must be an http:// or https:// URL with a host")
        return None
    return value


def redact(url: str) -> str:
    """A ping URL fit to show: scheme and host, the rest (a check's secret id) elided."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(invalid URL)"
    host = parts.hostname or ""
    if not parts.scheme or not host:
        return url[:40]  # not a URL with a host: nothing that looks like a check's id
    if parts.port:
        host = f"{host}:{parts.port}"
    rest = "/…" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{host}{rest}"
