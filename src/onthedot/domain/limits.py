"""Flow control as data: a limit's declaration (concurrency, rate, burst, key), its checks, and
the limit keys a job's arguments put it under. Pure: never reads the clock or the database.

A limit key is the text `NAME|KEY`: the limit's name, and the key's value for this job ("" for a
limit without a key, `param=value` for a key naming a parameter, the callable's text otherwise).
The claim (storage/sql/limits.py) counts running jobs and takes tokens per limit key."""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SEPARATOR = "|"
_NAME = re.compile(r"^[A-Za-z0-9_.:\-]{1,100}$")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*$")
_UNIT = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0}
_UNIT |= {"h": 3600.0, "hour": 3600.0}

Key = str | Callable[..., Any] | None


def parse_rate(rate: str, where: str) -> float:
    """Starts per second from "10/s", "100/m" or "5/h"; ValueError in one line otherwise."""
    m = _RATE.match(rate) if isinstance(rate, str) else None
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(
            f"{where}: rate={rate!r} is not a rate: write a positive count per unit, "
            'like "10/s", "100/m" or "5/h"'
        )
    return float(m.group(1)) / _UNIT[m.group(2)]


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"limit name {name!r} is invalid: use 1-100 letters, digits, '_', '.', ':' or '-'"
        )
    return name


@dataclass(frozen=True, slots=True)
class LimitSpec:
    """One limit as declared in code (a job's own, or a named one from `app.limit`)."""

    name: str
    concurrency: int | None = None
    rate: float | None = None  # starts per second
    rate_text: str | None = None
    burst: int | None = None  # the token bucket's size (rate only): one second's by default
    key: Key = None

    @classmethod
    def declare(
        cls,
        name: str,
        *,
        concurrency: int | None = None,
        rate: str | None = None,
        burst: int | None = None,
        key: Key = None,
        where: str,
    ) -> LimitSpec:
        """The checked declaration; ValueError/TypeError in one line naming what was wrong."""
        if concurrency is not None and (
            isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
        ):
            raise ValueError(
                f"{where}: concurrency={concurrency!r} must be a whole number >= 1 "
                "(leave it out for no concurrency limit)"
            )
        per_second = None if rate is None else parse_rate(rate, where)
        if burst is not None:
            if rate is None:
                raise ValueError(f"{where}: burst= needs rate= (it is the token bucket's size)")
            if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
                raise ValueError(f"{where}: burst={burst!r} must be a whole number >= 1")
        if concurrency is None and rate is None:
            raise ValueError(f"{where}: a limit needs concurrency= or rate= (or both)")
        if per_second is not None and burst is None:
            burst = max(1, math.ceil(per_second))  # one second's starts at once
        if key is not None and not (isinstance(key, str) or callable(key)):
            raise TypeError(f"{where}: key= must be an argument name or a callable")
        if SEPARATOR in name:  # a job's own limit is named after it: any job name but this
            raise ValueError(f"{where}: a limited job's name may not hold {SEPARATOR!r}")
        return cls(name, concurrency, per_second, rate, burst, key)

    def check_signature(self, signature: inspect.Signature, where: str) -> None:
        """A key naming a parameter must name one of the job's."""
        if isinstance(self.key, str) and self.key not in signature.parameters:
            params = ", ".join(signature.parameters) or "none"
            raise ValueError(
                f"{where}: key={self.key!r} names no parameter of the job (its parameters: "
                f"{params}); give a parameter name or a callable over the arguments"
            )

    def settings(self) -> tuple[int | None, float | None, int | None]:
        return self.concurrency, self.rate, self.burst


def limit_key(spec: LimitSpec, arguments: Mapping[str, Any]) -> str:
    """The limit key of a job under `spec`, from its bound arguments (defaults applied)."""
    if spec.key is None:
        return spec.name + SEPARATOR
    if isinstance(spec.key, str):
        value = arguments.get(spec.key)
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        return f"{spec.name}{SEPARATOR}{spec.key}={text}"
    value = spec.key(**arguments)
    return f"{spec.name}{SEPARATOR}{value if isinstance(value, str) else json.dumps(value)}"


def split_key(lkey: str) -> tuple[str, str]:
    """(limit name, key text) of a limit key."""
    name, _, key = lkey.partition(SEPARATOR)
    return name, key


def shown(lkey: str) -> str:
    """How a limit key is printed: `stripe` or `stripe (customer_id=42)`."""
    name, key = split_key(lkey)
    return f"{name} ({key})" if key else name


def encode(keys: Sequence[str]) -> str:
    return json.dumps(list(keys))


def unique(keys: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(keys))


@dataclass(frozen=True, slots=True)
class KeyState:
    """A limit key as the claim sees it under its lock: the limit's effective settings (None:
    the limit is not registered yet), the jobs running under the key, the tokens available."""

    lkey: str
    registered: bool
    concurrency: int | None
    running: int
    tokens: float | None  # None: no rate


@dataclass
class Picker:
    """The claim's choice among candidate jobs: round-robin across the home keys (the caller
    gives them least recently started first), a job taken only if every limit it sits under
    allows it; the counts and tokens it takes are tracked as it goes."""

    states: dict[str, KeyState]

    def __post_init__(self) -> None:
        self.running = {k: s.running for k, s in self.states.items()}
        self.tokens = {k: s.tokens for k, s in self.states.items()}
        self.taken: dict[str, int] = {}
        self.held: dict[str, int] = {}  # limit name -> jobs it held back in this claim

    def allows(self, lkey: str) -> bool:
        s = self.states.get(lkey)
        if s is None or not s.registered:
            return False
        if s.concurrency is not None and self.running[lkey] >= s.concurrency:
            return False
        tokens = self.tokens[lkey]
        return tokens is None or tokens >= 1.0

    def take(self, keys: Sequence[str]) -> None:
        for k in keys:
            self.running[k] += 1
            tokens = self.tokens[k]
            if tokens is not None:
                self.tokens[k] = tokens - 1.0
            self.taken[k] = self.taken.get(k, 0) + 1

    def pick(self, queues: Sequence[Sequence[tuple[int, list[str]]]], limit: int) -> list[int]:
        """Ids to claim: one job per home key per round, in the given key order."""
        chosen: list[int] = []
        cursors = [0] * len(queues)
        blocked = [False] * len(queues)
        progress = True
        while progress and len(chosen) < limit:
            progress = False
            for i, jobs in enumerate(queues):
                if len(chosen) >= limit:
                    break
                while not blocked[i] and cursors[i] < len(jobs):
                    job_id, keys = jobs[cursors[i]]
                    cursors[i] += 1
                    refused = next((k for k in keys if not self.allows(k)), None)
                    if refused is None:
                        self.take(keys)
                        chosen.append(job_id)
                        progress = True
                        break
                    name = split_key(refused)[0]
                    self.held[name] = self.held.get(name, 0) + 1
                    if not self.allows(keys[0]):
                        blocked[i] = True  # the home key itself is full: the rest wait too
        return chosen

    def saturated(self) -> list[tuple[str, int]]:
        """The keys this claim filled to their concurrency: (limit key, concurrency)."""
        full = []
        for k in sorted(self.taken):
            s = self.states[k]
            if s.concurrency is not None and self.running[k] >= s.concurrency:
                full.append((k, s.concurrency))
        return full


class LimitedClaim(list[Any]):
    """The jobs a limited claim took (a list of ClaimedJob), with what it saw: the jobs each
    limit held back, and the keys it filled to their concurrency (for events and metrics)."""

    def __init__(
        self,
        jobs: Iterable[Any] = (),
        held: Mapping[str, int] | None = None,
        saturated: Sequence[tuple[str, int]] = (),
    ) -> None:
        super().__init__(jobs)
        self.held = dict(held or {})
        self.saturated = list(saturated)


@dataclass(frozen=True, slots=True)
class LimitSetting:
    """A limit's settings as the database keeps them (rate in starts per second)."""

    name: str
    concurrency: int | None
    rate: float | None
    burst: int | None


@dataclass(frozen=True, slots=True)
class LimitRow:
    """A registered limit: its effective settings, the code's, and whether an operator
    overrode them (`onthedot limits set`)."""

    effective: LimitSetting
    code: LimitSetting
    overridden: bool


@dataclass(frozen=True, slots=True)
class KeyLoad:
    """One limit key's load: jobs running under it, queued under it (as their first limit),
    tokens available now (None: no rate)."""

    lkey: str
    running: int
    waiting: int
    tokens: float | None


def rate_text(per_second: float | None) -> str:
    """A rate as the shortest exact "n/s", "n/m" or "n/h"."""
    if per_second is None:
        return "-"
    for unit, seconds in (("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        n = per_second * seconds
        if abs(n - round(n)) < 1e-9 and round(n) >= 1:
            return f"{round(n)}/{unit}"
    return f"{per_second * 3600:g}/h"


def holds(
    lkeys: Sequence[str], settings: Mapping[str, LimitSetting], loads: Mapping[str, KeyLoad]
) -> list[str]:
    """What of a queued job's limit keys holds it back, one line each (none: nothing does).
    `settings`: the registered limits by name (in force); `loads`: the keys' loads by key.
    The one rule `onthedot jobs explain` and schedule health (cause held_by_limit) tell."""
    lines = []
    for lkey in lkeys:
        name, _ = split_key(lkey)
        setting = settings.get(name)
        if setting is None:
            lines.append(
                f"limit {shown(lkey)} is not registered yet: a worker that knows the job "
                "records it at its start"
            )
            continue
        load = loads.get(lkey) or KeyLoad(lkey, 0, 0, None)
        if setting.concurrency is not None and load.running >= setting.concurrency:
            lines.append(
                f"limit {shown(lkey)} at {load.running}/{setting.concurrency} running; "
                "next start when one of them ends"
            )
        elif setting.rate is not None and load.tokens is not None and load.tokens < 1:
            wait = (1.0 - load.tokens) / setting.rate
            lines.append(
                f"limit {shown(lkey)} at its rate {rate_text(setting.rate)}; "
                f"next start allowed in {wait:.1f} s"
            )
    return lines
