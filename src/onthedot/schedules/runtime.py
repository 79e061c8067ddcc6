"""Schedules created at runtime (source `dynamic`): create, update, delete, get, list.

They live in the ledger row itself (its `definition`), are validated with the same checker as
declared schedules, and take effect at the next tick of any worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from onthedot.clock import Clock
from onthedot.domain.definitions import (
    Declaration,
    Problem,
    ScheduleDef,
    definition_to_declaration,
)
from onthedot.domain.errors import ScheduleError
from onthedot.domain.fields import text_problem
from onthedot.domain.ledger import AuditAction, LedgerRow
from onthedot.schedules.audit import check_operator_text

if TYPE_CHECKING:
    from onthedot.schedules.audit import AuditTrail
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.schedules.views import ScheduleView, ScheduleViews
    from onthedot.storage.interface import Storage

POLICY_FIELDS = (
    "timezone",
    "catchup",
    "catchup_window",
    "overlap",
    "jitter",
    "queue",
    "priority",
    "grace",
    "max_per_tick",
    "max_runtime",
    "deadline",
    "ping",
    "command",
    "shell",
    "command_timeout",
)


class RuntimeSchedules:
    """Create, update and delete runtime schedules; each change is audited."""

    def __init__(
        self,
        storage: Callable[[], Storage],
        clock: Clock,
        registry: ScheduleRegistry,
        audit: AuditTrail,
        views: ScheduleViews,
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._registry = registry
        self._audit = audit
        self._views = views

    def _validated(self, decl: Declaration) -> ScheduleDef:
        sched, problems = self._registry.validate(decl)
        errors = [p for p in problems if p.level == "error"]
        if decl.key in self._registry.declared():
            errors.append(
                Problem(decl.key, "the key belongs to a schedule declared in code; pick another")
            )
        if errors or sched is None:
            raise ScheduleError(
                f"schedule {decl.key!r} is invalid: " + "; ".join(p.message for p in errors)
            )
        return sched

    def _dynamic_row(self, key: str, verb: str, actor: str | None) -> LedgerRow:
        check_operator_text(None, actor)
        row = (
            None
            if text_problem(key, "key")
            else next(iter(self._storage().list_schedule_rows([key])), None)
        )
        if row is None:
            if key in self._registry.declared():
                raise ScheduleError(
                    f"cannot {verb} {key!r}: it is declared in code; change the code instead"
                )
            raise ScheduleError(f"no runtime schedule with key {key!r}")
        if row.source != "dynamic":
            raise ScheduleError(
                f"cannot {verb} {key!r}: it is declared in code; change the code instead"
            )
        return row

    # -- CRUD -------------------------------------------------------------------------------
    def create(
        self,
        key: str,
        spec: Any,
        job: Any = None,
        args: Any = None,
        kwargs: Any = None,
        *,
        actor: str | None = None,
        **policies: Any,
    ) -> ScheduleView:
        """Create a runtime schedule. Validated like a declared one; nothing is stored when any
        problem is found (the error lists them all). Its first slot is the first after now."""
        unknown = set(policies) - set(POLICY_FIELDS)
        if unknown:
            raise ScheduleError(
                f"schedule {key!r}: unknown option(s) {sorted(unknown)}; "
                f"known: {', '.join(POLICY_FIELDS)}"
            )
        check_operator_text(None, actor)
        if (
            text_problem(key, "key", name=True) is None  # else reported by the validation
            and key not in self._registry.declared()
            and self._storage().list_schedule_rows([key])
        ):
            raise ScheduleError(f"schedule {key!r} already exists: use update() or another key")
        decl = Declaration(
            key=key, spec=spec, job=job, args=args, kwargs=kwargs, source="dynamic", **policies
        )
        sched = self._validated(decl)
        now = self._views.now()
        row = self._dynamic_ledger_row(sched, cursor=now, reason="created")
        self._storage().upsert_dynamic(row)
        self._audit.record(
            AuditAction.CREATED, key, actor, details={"spec": row.spec, **(row.definition or {})}
        )
        return self._views.get(key)

    def update(self, key: str, *, actor: str | None = None, **changes: Any) -> ScheduleView:
        """Change a runtime schedule. A timing change (spec or time zone) restarts its cursor at
        now: no slot of the new timing before the edit fires. Other changes apply at the next
        fire."""
        row = self._dynamic_row(key, "update", actor)
        allowed = {"spec", "job", "args", "kwargs", *POLICY_FIELDS}
        unknown = set(changes) - allowed
        if unknown:
            raise ScheduleError(
                f"schedule {key!r}: unknown field(s) {sorted(unknown)}; known: {sorted(allowed)}"
            )
        old = definition_to_declaration(row.key, row.spec, row.timezone, row.definition or {})
        fields = {f: getattr(old, f) for f in ("spec", "job", "args", "kwargs", *POLICY_FIELDS)}
        if "job" in changes and changes["job"] is not None:
            fields["command"] = None
        if "command" in changes and changes["command"] is not None:
            fields["job"] = None
        fields.update(changes)
        decl = Declaration(key=key, source="dynamic", **fields)
        sched = self._validated(decl)
        timing_changed = sched.fingerprint != row.fingerprint
        cursor = self._views.now() if timing_changed else row.cursor
        new_row = self._dynamic_ledger_row(
            sched, cursor=cursor, reason="timing changed" if timing_changed else row.repaired_reason
        )
        if not timing_changed:
            new_row = replace(new_row, next_due_at=row.next_due_at)
        if row.paused:
            new_row = replace(new_row, next_due_at=row.paused_until)
        self._storage().upsert_dynamic(new_row)
        self._storage().recheck_health([key])  # its expectations may have changed
        self._audit.record(
            AuditAction.UPDATED,
            key,
            actor,
            details={
                "changes": {k: _jsonable(v) for k, v in changes.items()},
                "timing_changed": timing_changed,
            },
        )
        return self._views.get(key)

    def delete(self, key: str, *, keep_jobs: bool = False, actor: str | None = None) -> int:
        """Delete a runtime schedule at once. Its queued (not running) jobs are cancelled unless
        `keep_jobs`; returns how many were cancelled."""
        self._dynamic_row(key, "delete", actor)
        cancelled = self._storage().delete_schedule(key, cancel_queued=not keep_jobs)
        self._audit.record(
            AuditAction.DELETED,
            key,
            actor,
            details={"cancelled_jobs": cancelled, "kept_jobs": keep_jobs},
        )
        return cancelled

    def _dynamic_ledger_row(
        self, sched: ScheduleDef, *, cursor: datetime, reason: str | None
    ) -> LedgerRow:
        return LedgerRow(
            key=sched.key,
            source="dynamic",
            fingerprint=sched.fingerprint,
            spec=sched.spec.canonical(),
            timezone=sched.timezone,
            cursor=cursor,
            next_due_at=sched.spec.next_after(cursor, sched.tz),
            definition=sched.definition_json(),
            repaired_reason=reason,
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool | type(None) | list | dict):
        return value
    return str(value)
