"""Schedules declared in code: the registry, its validation, and the definition that governs each
ledger row (declared or runtime)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from onthedot.domain.definitions import (
    Declaration,
    Problem,
    ScheduleDef,
    command_key,
    definition_to_declaration,
    runtime_refusal,
    validate,
)
from onthedot.domain.errors import ScheduleError
from onthedot.domain.ledger import LedgerRow

if TYPE_CHECKING:
    from onthedot.jobs import JobFunction


# Validated runtime definitions kept between ticks. Above the number of runtime schedules, so
# the same definition object comes back tick after tick (the scheduler's decider memoizes by
# it) rather than being rebuilt and re-derived once the cache overflows.
_DYNAMIC_CACHE_LIMIT = 1 << 17


@dataclass(frozen=True, slots=True)
class CheckReport:
    problems: tuple[Problem, ...]
    checked: int

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.level == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def render(self) -> str:
        lines = [str(p) for p in self.problems]
        lines.append(
            f"{self.checked} schedule(s) checked: {len(self.errors)} error(s), "
            f"{len(self.warnings)} warning(s)"
        )
        return "\n".join(lines)


class ScheduleRegistry:
    """The schedules declared in code, validated against the registered `jobs`; also validates
    the stored definitions of runtime schedules."""

    def __init__(self, jobs: Mapping[str, JobFunction[Any, Any]]) -> None:
        self._jobs = jobs
        self._declared: list[Declaration] = []
        self._valid: dict[str, ScheduleDef] | None = None
        self._dynamic_cache: dict[tuple[str, str, str, str], ScheduleDef | None] = {}

    # -- declaring --------------------------------------------------------------------------
    def declare(
        self,
        key: str | None,
        spec: Any,
        job: Any = None,
        args: Any = None,
        kwargs: Any = None,
        *,
        timezone: str = "UTC",
        catchup: str = "latest",
        catchup_window: Any = "1d",
        overlap: str = "allow",
        jitter: Any = None,
        queue: str | None = None,
        priority: int | None = None,
        grace: Any = None,
        max_per_tick: int = 100,
        max_runtime: Any = None,
        deadline: Any = None,
        ping: str | None = None,
        command: str | list[str] | None = None,
        shell: bool = False,
        command_timeout: Any = None,
    ) -> Declaration:
        """Declare a schedule. Problems are collected, not raised, so `onthedot check` (and a
        worker refusing to start) can report every one at once; `app.schedules.check()` runs
        the same validation."""
        if key is None and command is not None:
            key = command_key(command)
        decl = Declaration(
            key=key if key is not None else "",
            spec=spec,
            job=job,
            args=args,
            kwargs=kwargs,
            timezone=timezone,
            catchup=catchup,
            catchup_window=catchup_window,
            overlap=overlap,
            jitter=jitter,
            queue=queue,
            priority=priority,
            grace=grace,
            max_per_tick=max_per_tick,
            max_runtime=max_runtime,
            deadline=deadline,
            ping=ping,
            command=command,
            shell=shell,
            command_timeout=command_timeout,
        )
        self._declared.append(decl)
        self._valid = None
        return decl

    def __iter__(self) -> Iterator[Declaration]:
        return iter(self._declared)

    def __len__(self) -> int:
        return len(self._declared)

    # -- validating -------------------------------------------------------------------------
    def check(self) -> CheckReport:
        """Validate every declared schedule; report every problem with its key."""
        problems: list[Problem] = []
        seen: dict[str, int] = {}
        for decl in self._declared:
            seen[decl.key] = seen.get(decl.key, 0) + 1
        for key, n in seen.items():
            if n > 1:
                problems.append(Problem(key, f"declared {n} times: keys must be unique"))
        for decl in self._declared:
            _, found = validate(decl, self._jobs)
            problems.extend(found)
        return CheckReport(tuple(problems), len(self._declared))

    def declared(self) -> dict[str, ScheduleDef]:
        """The valid declared schedules by key. Raises ScheduleError with the full report when
        any declaration is invalid."""
        if self._valid is None:
            report = self.check()
            if not report.ok:
                raise ScheduleError(report.render())
            valid: dict[str, ScheduleDef] = {}
            for decl in self._declared:
                sched, _ = validate(decl, self._jobs)
                assert sched is not None
                valid[sched.key] = sched
            self._valid = valid
        return self._valid

    def code_hash(self) -> str:
        """A digest of everything the code declares: a new value means newer schedule code."""
        items = sorted(
            (key, s.fingerprint, json.dumps(s.definition_json(), sort_keys=True))
            for key, s in self.declared().items()
        )
        return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:32]

    def definition_for(self, row: LedgerRow) -> ScheduleDef | None:
        """The definition that governs a ledger row: the code's for `code` rows (None when the
        code no longer declares it), the stored one for `dynamic` rows (None if invalid)."""
        if row.source == "code":
            return self.declared().get(row.key)
        if row.definition is not None and not isinstance(row.definition, dict):
            return None  # stored JSON onthedot would not decode (domain/nesting.py)
        cache_key = (row.key, row.spec, row.timezone, json.dumps(row.definition, sort_keys=True))
        if cache_key not in self._dynamic_cache:
            decl = definition_to_declaration(row.key, row.spec, row.timezone, row.definition or {})
            sched, _ = validate(decl, self._jobs)
            if len(self._dynamic_cache) >= _DYNAMIC_CACHE_LIMIT:
                self._dynamic_cache.clear()
            self._dynamic_cache[cache_key] = sched
        return self._dynamic_cache[cache_key]

    def dynamic_problems(self, row: LedgerRow) -> list[Problem]:
        decl = definition_to_declaration(row.key, row.spec, row.timezone, row.definition or {})
        return validate(decl, self._jobs)[1]

    def runtime_jobs(self) -> list[str]:
        """The names of the jobs runtime schedules may fire, sorted (the web admin's choice)."""
        return sorted(n for n, job in self._jobs.items() if runtime_refusal(n, job) is None)

    def validate(self, decl: Declaration) -> tuple[ScheduleDef | None, list[Problem]]:
        """Validate one declaration against the registered jobs (runtime schedules use it)."""
        return validate(decl, self._jobs)

    def queue_of(self, sched: ScheduleDef) -> str:
        """The queue a schedule's jobs go to: its own, else its job's (`default` for a job
        this code does not register)."""
        job = self._jobs.get(sched.job)
        return sched.queue or (job.queue if job is not None else "default")

    def declaration(self, key: str) -> Declaration:
        """The (first) declaration of `key`, as written in code."""
        return next(d for d in self._declared if d.key == key)

    def declared_or_invalid(self) -> tuple[dict[str, ScheduleDef], dict[str, list[str]]]:
        """The valid declared schedules, and the error messages of the invalid ones by key."""
        if self._valid is not None or self.check().ok:
            return self.declared(), {}
        invalid: dict[str, list[str]] = {}
        for problem in self.check().errors:
            invalid.setdefault(problem.key, []).append(problem.message)
        valid: dict[str, ScheduleDef] = {}
        for decl in self._declared:
            sched, _ = validate(decl, self._jobs)
            if decl.key not in invalid and sched is not None:
                valid[sched.key] = sched
        return valid, invalid
