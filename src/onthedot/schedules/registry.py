"""Schedules declared in code: the registry on `app.schedules`, validation, and views."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from onthedot.domain.definitions import (
    Declaration,
    Problem,
    ScheduleDef,
    command_key,
    definition_to_declaration,
    validate,
)
from onthedot.domain.errors import ScheduleError
from onthedot.domain.jobs import iso
from onthedot.domain.ledger import LedgerRow
from onthedot.schedules.controls import OperatorControls

if TYPE_CHECKING:
    from onthedot.app import App


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


class ScheduleRegistry(OperatorControls):
    """`app.schedules`: declared schedules, plus the runtime API (see `schedules.runtime`)."""

    def __init__(self, app: App) -> None:
        self.app = app
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
        catchup_window: Any = "24h",
        overlap: str = "allow",
        jitter: Any = None,
        queue: str | None = None,
        priority: int | None = None,
        grace: Any = "60s",
        max_per_tick: int = 100,
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
            _, found = validate(decl, self.app.jobs)
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
                sched, _ = validate(decl, self.app.jobs)
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
        cache_key = (row.key, row.spec, row.timezone, json.dumps(row.definition, sort_keys=True))
        if cache_key not in self._dynamic_cache:
            decl = definition_to_declaration(row.key, row.spec, row.timezone, row.definition or {})
            sched, _ = validate(decl, self.app.jobs)
            if len(self._dynamic_cache) >= _DYNAMIC_CACHE_LIMIT:
                self._dynamic_cache.clear()
            self._dynamic_cache[cache_key] = sched
        return self._dynamic_cache[cache_key]

    def dynamic_problems(self, row: LedgerRow) -> list[Problem]:
        decl = definition_to_declaration(row.key, row.spec, row.timezone, row.definition or {})
        return validate(decl, self.app.jobs)[1]

    # -- views ------------------------------------------------------------------------------
    def view(
        self, row: LedgerRow | None, sched: ScheduleDef | None, now: datetime
    ) -> dict[str, Any]:
        """The JSON object of `schedules list --json` for one schedule."""
        key = row.key if row is not None else (sched.key if sched else "")
        nexts: list[str] = []
        if sched is not None:
            t = row.cursor if row is not None and row.cursor > now else now
            for _ in range(3):
                n = sched.spec.next_after(t, sched.tz)
                if n is None:
                    break
                nexts.append(iso(n) or "")
                t = n
        status = "active"
        if row is None:
            status = "pending"  # declared, not yet seen by a worker
        elif row.removed_at is not None:
            status = "removed"
        elif row.paused:
            status = "paused"
        elif sched is None:
            status = "invalid" if row.source == "dynamic" else "removed"
        return {
            "key": key,
            "spec": sched.spec.canonical() if sched else (row.spec if row else None),
            "description": sched.describe() if sched else None,
            "timezone": sched.timezone if sched else (row.timezone if row else None),
            "source": row.source if row is not None else "code",
            "status": status,
            "job": sched.job if sched else ((row.definition or {}).get("job") if row else None),
            "next": nexts,
            "last_slot": iso(row.last_slot) if row else None,
            "last_outcome": row.last_outcome if row else None,
            "last_job_id": row.last_job_id if row else None,
            "missed": row.missed_total if row else 0,
            "coalesced": row.coalesced_total if row else 0,
            "cursor": iso(row.cursor) if row else None,
            "next_due_at": iso(row.next_due_at) if row else None,
            "paused": bool(row and row.paused),
            "paused_until": iso(row.paused_until) if row else None,
            "paused_by": row.paused_by if row else None,
            "pause_note": row.pause_note if row else None,
        }

    def views(self) -> list[dict[str, Any]]:
        """Every schedule the code declares or the database holds, by key. One that fails
        validation is listed with status "invalid" and its `problems`; it never hides the
        others."""
        storage = self.app.storage
        now = self.app.clock.fixed_now() or storage.db_now()
        rows = {r.key: r for r in storage.list_schedule_rows()}
        declared, invalid = self._declared_or_invalid()
        keys = sorted(set(rows) | set(declared) | set(invalid))
        out = []
        for key in keys:
            row = rows.get(key)
            code = row is None or row.source == "code"
            sched = declared.get(key) if row is None or code else self.definition_for(row)
            view = self.view(row, sched, now)
            if code and key in invalid:
                decl = next(d for d in self._declared if d.key == key)
                view.update(key=key, status="invalid", problems=invalid[key])
                view["spec"] = view["spec"] or (decl.spec if isinstance(decl.spec, str) else None)
                view["timezone"] = view["timezone"] or (
                    decl.timezone if isinstance(decl.timezone, str) else None
                )
            elif row is not None and sched is None and row.source == "dynamic":
                view["problems"] = [
                    p.message for p in self.dynamic_problems(row) if p.level == "error"
                ]
            out.append(view)
        return out

    def _declared_or_invalid(self) -> tuple[dict[str, ScheduleDef], dict[str, list[str]]]:
        """The valid declared schedules, and the error messages of the invalid ones by key."""
        if self._valid is not None or self.check().ok:
            return self.declared(), {}
        invalid: dict[str, list[str]] = {}
        for problem in self.check().errors:
            invalid.setdefault(problem.key, []).append(problem.message)
        valid: dict[str, ScheduleDef] = {}
        for decl in self._declared:
            sched, _ = validate(decl, self.app.jobs)
            if decl.key not in invalid and sched is not None:
                valid[sched.key] = sched
        return valid, invalid

    def preview(
        self, key: str, start: datetime, end: datetime, limit: int = 1000
    ) -> list[datetime]:
        """Slots of a schedule in (start, end]."""
        sched = self.get_definition(key)
        out = []
        for slot in sched.spec.slots_between(start, end, sched.tz):
            out.append(slot)
            if len(out) >= limit:
                break
        return out

    def get_definition(self, key: str) -> ScheduleDef:
        declared = self.declared()
        if key in declared:
            return declared[key]
        row = self.app.storage.get_schedule_row(key)
        if row is None:
            raise ScheduleError(f"no schedule with key {key!r}")
        sched = self.definition_for(row)
        if sched is None:
            raise ScheduleError(
                f"schedule {key!r} is not valid in this code: "
                + "; ".join(p.message for p in self.dynamic_problems(row))
            )
        return sched
