"""A schedule's definition, validated: what to enqueue, when, and under which policies."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from onthedot.domain.durations import format_duration, parse_duration
from onthedot.domain.expectations import (
    Deadline,
    Expectations,
    MaxRuntime,
    parse_expectations,
)
from onthedot.domain.fields import text_problem
from onthedot.domain.payload import JsonObject, JsonValue
from onthedot.domain.specs import Spec, SpecError, fingerprint, load_timezone, parse_spec

CATCHUP_POLICIES = ("latest", "all", "none")
OVERLAP_POLICIES = ("allow", "skip", "serialize")
COMMAND_JOB = "onthedot.command"
MAX_KEY_LENGTH = 200
DEFAULT_MAX_PER_TICK = 100
DEFAULT_GRACE = timedelta(seconds=60)  # catchup="none" without a grace: the enqueue cutoff


class JobSignature(Protocol):
    """What validating a schedule needs of a registered job."""

    @property
    def runtime(self) -> bool:
        """Opened to runtime schedules (`@app.job(runtime=True)`)."""

    def check_arguments(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Raise TypeError/ValueError unless the arguments fit the job."""


class JobDefaults(Protocol):
    """What a schedule's job takes from its registered function (a JobFunction)."""

    @property
    def queue(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def timeout(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class Problem:
    key: str
    message: str
    level: str = "error"  # "error" | "warning"

    def __str__(self) -> str:
        return f"{self.level}: schedule {self.key!r}: {self.message}"


@dataclass(frozen=True, slots=True)
class ScheduleDef:
    """A valid schedule. `job` is a registered job name; command schedules use COMMAND_JOB."""

    key: str
    spec: Spec
    tz: ZoneInfo
    job: str
    args: tuple[JsonValue, ...] = ()
    kwargs: JsonObject = field(default_factory=dict)
    source: str = "code"
    catchup: str = "latest"
    catchup_window: timedelta = timedelta(hours=24)
    overlap: str = "allow"
    jitter: timedelta | None = None
    queue: str | None = None
    priority: int | None = None
    grace: timedelta | None = None  # None: not given (see `enqueue_grace`, `late_after`)
    max_per_tick: int = DEFAULT_MAX_PER_TICK
    max_runtime: MaxRuntime = None
    deadline: Deadline | None = None
    ping: str | None = None

    @property
    def enqueue_grace(self) -> timedelta:
        """With catchup="none": how late a slot may still be enqueued (the grace, else 60 s)."""
        return self.grace if self.grace is not None else DEFAULT_GRACE

    @property
    def expectations(self) -> Expectations:
        """What the schedule promises, as declared (operators may override it)."""
        return Expectations(self.grace, self.max_runtime, self.deadline, self.ping)

    @property
    def timezone(self) -> str:
        return self.tz.key

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.spec, self.tz)

    def definition_json(self) -> JsonObject:
        """Everything but the timing, as stored for runtime schedules and hashed for deploys."""
        return {
            "job": self.job,
            "args": list(self.args),
            "kwargs": self.kwargs,
            "catchup": self.catchup,
            "catchup_window": format_duration(self.catchup_window),
            "overlap": self.overlap,
            "jitter": None if self.jitter is None else format_duration(self.jitter),
            "queue": self.queue,
            "priority": self.priority,
            "max_per_tick": self.max_per_tick,
            **self.expectations.to_json(),  # only the ones set
        }

    def describe(self) -> str:
        return self.spec.describe()


@dataclass(frozen=True, slots=True)
class Declaration:
    """A schedule as written by the user, before validation (so every problem can be reported
    at once): its fields hold whatever the user passed, hence `Any`."""

    key: str
    spec: Any
    job: Any
    args: Any = None
    kwargs: Any = None
    timezone: Any = "UTC"
    catchup: Any = "latest"
    catchup_window: Any = "1d"
    overlap: Any = "allow"
    jitter: Any = None
    queue: Any = None
    priority: Any = None
    grace: Any = None
    max_per_tick: Any = DEFAULT_MAX_PER_TICK
    max_runtime: Any = None
    deadline: Any = None
    ping: Any = None
    command: Any = None
    shell: bool = False
    command_timeout: Any = None
    source: str = "code"


def command_key(command: str | list[str]) -> str:
    """A stable key for a command schedule: readable prefix plus a digest of the whole command,
    so two long commands sharing a prefix never collide and the key never needs truncation."""
    text = command if isinstance(command, str) else json.dumps(command)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    readable = command if isinstance(command, str) else " ".join(command)
    words = "-".join("".join(c if c.isalnum() or c in "_." else " " for c in readable).split())
    return f"command:{words[:48].strip('-')}:{digest}"


def runtime_refusal(name: str, job: JobSignature | None) -> str | None:
    """Why a runtime schedule (created from the web admin, the CLI or the Python API, or stored
    by an older version) may not fire the job `name`; None when it may. The one rule: shell
    commands are scheduled in code only, and any other job only once its code opened it with
    `@app.job(runtime=True)`."""
    if name == COMMAND_JOB:
        return (
            f"a runtime schedule cannot run shell commands ({COMMAND_JOB}): declare command "
            "schedules in code, app.schedule(key, spec, command=...)"
        )
    if job is not None and not job.runtime:
        return (
            f"job {name!r} is not open to runtime schedules: register it with "
            "@app.job(runtime=True)"
        )
    return None


def validate(
    decl: Declaration, jobs: Mapping[str, JobSignature]
) -> tuple[ScheduleDef | None, list[Problem]]:
    """Check one declaration against the registered jobs. Returns the definition (None when
    any error was found) and every problem found."""
    problems: list[Problem] = []
    key = decl.key

    def err(message: str) -> None:
        problems.append(Problem(key, message))

    if not isinstance(key, str) or not key.strip():
        err("key must be a non-empty string")
    elif len(key) > MAX_KEY_LENGTH:
        err(f"key is {len(key)} characters, over the limit of {MAX_KEY_LENGTH}")
    elif not key.strip("."):
        err("key must not be dots only: it would be a `..` segment of the admin's URLs")
    elif (problem := text_problem(key, "key", name=True)) is not None:
        err(problem)

    spec: Spec | None = None
    try:
        spec = parse_spec(decl.spec)
    except SpecError as exc:
        err(str(exc))
    tz: ZoneInfo | None = None
    try:
        tz = load_timezone(decl.timezone)
    except SpecError as exc:
        err(str(exc))

    job_name, args, kwargs = _job_and_arguments(decl, jobs, err)

    catchup = decl.catchup
    if catchup not in CATCHUP_POLICIES:
        err(f"catchup {catchup!r} is not one of {', '.join(CATCHUP_POLICIES)}")
    overlap = decl.overlap
    if overlap not in OVERLAP_POLICIES:
        err(f"overlap {overlap!r} is not one of {', '.join(OVERLAP_POLICIES)}")
    window = _duration(decl.catchup_window, "catchup_window", err, allow_zero=True)
    if window is not None and window == timedelta(0) and catchup != "none":
        err("catchup_window can be zero only with catchup='none'")
    expect, expect_problems = parse_expectations(
        {
            "grace": decl.grace,
            "max_runtime": decl.max_runtime,
            "deadline": decl.deadline,
            "ping": decl.ping,
        }
    )
    for problem in expect_problems:
        err(problem)
    jitter = None
    if decl.jitter is not None:
        jitter = _duration(decl.jitter, "jitter", err, allow_zero=False)
        if jitter is not None and spec is not None and jitter >= spec.min_period():
            err(
                f"jitter {format_duration(jitter)} is not shorter than the period "
                f"({format_duration(spec.min_period())}): use a smaller jitter"
            )
    if decl.queue is not None and (not isinstance(decl.queue, str) or not decl.queue):
        err(f"queue {decl.queue!r} must be a non-empty string")
    elif decl.queue is not None and (problem := text_problem(decl.queue, "queue", name=True)):
        err(problem)
    if decl.priority is not None and (
        isinstance(decl.priority, bool) or not isinstance(decl.priority, int)
    ):
        err(f"priority {decl.priority!r} must be an int")
    max_per_tick = decl.max_per_tick
    if isinstance(max_per_tick, bool) or not isinstance(max_per_tick, int) or max_per_tick < 1:
        err(f"max_per_tick {max_per_tick!r} must be a positive int")

    if spec is not None and tz is not None and not problems:
        probe = spec.next_after(_EPOCH_PROBE, tz)
        if probe is None:
            problems.append(Problem(key, f"spec {spec.canonical()!r} never fires", "warning"))
    if any(p.level == "error" for p in problems):
        return None, problems
    assert spec is not None and tz is not None and job_name is not None
    assert window is not None
    return (
        ScheduleDef(
            key=key,
            spec=spec,
            tz=tz,
            job=job_name,
            args=tuple(args),
            kwargs=kwargs,
            source=decl.source,
            catchup=catchup,
            catchup_window=window,
            overlap=overlap,
            jitter=jitter,
            queue=decl.queue,
            priority=decl.priority,
            grace=expect.grace,
            max_per_tick=max_per_tick,
            max_runtime=expect.max_runtime,
            deadline=expect.deadline,
            ping=expect.ping,
        ),
        problems,
    )


def _job_and_arguments(
    decl: Declaration, jobs: Mapping[str, JobSignature], err: Callable[[str], None]
) -> tuple[str | None, list[JsonValue], JsonObject]:
    args = [] if decl.args is None else decl.args
    kwargs = {} if decl.kwargs is None else decl.kwargs
    if not isinstance(args, list | tuple):
        err(f"args must be a list, got {type(args).__name__}")
        args = []
    if not isinstance(kwargs, dict):
        err(f"kwargs must be a dict, got {type(kwargs).__name__}")
        kwargs = {}
    if decl.command is not None:
        if decl.job is not None:
            err("give either a job or a command, not both")
            return None, [], {}
        if decl.source == "dynamic":
            err(str(runtime_refusal(COMMAND_JOB, None)))
            return None, [], {}
        command = decl.command
        if isinstance(command, str):
            if not command.strip():
                err("command is empty")
        elif not (
            isinstance(command, list | tuple)
            and command
            and all(isinstance(c, str) for c in command)
        ):
            err("command must be a string or a non-empty list of strings")
        timeout = None
        if decl.command_timeout is not None:
            t = _duration(decl.command_timeout, "command_timeout", err, allow_zero=False)
            timeout = None if t is None else t.total_seconds()
        cmd = command if isinstance(command, str) else list(command)
        return COMMAND_JOB, [cmd], {"shell": bool(decl.shell), "timeout": timeout}
    job = decl.job
    name = job if isinstance(job, str) else getattr(job, "name", None)
    if not isinstance(name, str):
        err(f"job must be a registered job or its name, got {job!r}")
        return None, [], {}
    jf = jobs.get(name)
    refusal = runtime_refusal(name, jf) if decl.source == "dynamic" else None
    if refusal is not None:  # before its arguments: nothing about the job is told
        err(refusal)
        return name, list(args), dict(kwargs)
    if jf is None:
        err(f"unknown job {name!r}: register it with @app.job")
        return name, list(args), dict(kwargs)
    try:
        jf.check_arguments(list(args), dict(kwargs))
    except (TypeError, ValueError) as exc:
        err(str(exc))
    return name, list(args), dict(kwargs)


def _duration(
    value: Any, what: str, err: Callable[[str], None], *, allow_zero: bool
) -> timedelta | None:
    try:
        return parse_duration(value, what=what, allow_zero=allow_zero)
    except SpecError as exc:
        err(str(exc))
        return None


def definition_to_declaration(
    key: str,
    spec: str,
    timezone: str,
    data: dict[str, Any],  # a stored definition
) -> Declaration:
    """Rebuild the declaration of a runtime schedule from its stored definition."""
    job = data.get("job")
    command = None
    kwargs = data.get("kwargs") or {}
    args = data.get("args") or []
    shell = False
    command_timeout = None
    if job == COMMAND_JOB:
        job = None
        command = args[0] if args else None
        shell = bool(kwargs.get("shell"))
        command_timeout = kwargs.get("timeout")
        args, kwargs = [], {}
    return Declaration(
        key=key,
        spec=spec,
        job=job,
        args=args,
        kwargs=kwargs,
        timezone=timezone,
        catchup=data.get("catchup", "latest"),
        catchup_window=data.get("catchup_window", "1d"),
        overlap=data.get("overlap", "allow"),
        jitter=data.get("jitter"),
        queue=data.get("queue"),
        priority=data.get("priority"),
        grace=data.get("grace"),
        max_per_tick=data.get("max_per_tick", DEFAULT_MAX_PER_TICK),
        max_runtime=data.get("max_runtime"),
        deadline=data.get("deadline"),
        ping=data.get("ping"),
        command=command,
        shell=shell,
        command_timeout=command_timeout,
        source="dynamic",
    )


def _epoch_probe() -> datetime:
    from datetime import UTC, datetime

    return datetime(2000, 1, 1, tzinfo=UTC)


_EPOCH_PROBE = _epoch_probe()
