"""Schedules created at runtime (source `dynamic`): create, update, delete, get, list.

They live in the ledger row itself (its `definition`), are validated with the same checker as
declared schedules, and take effect at the next tick of any worker.
"""

from __future__ import annotations

import getpass
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from onthedot.domain.errors import ScheduleError
from onthedot.domain.ledger import AuditEntry, LedgerRow
from onthedot.domain.schedule import (
    Declaration,
    Problem,
    ScheduleDef,
    definition_to_declaration,
    validate,
)
from onthedot.observability.events import ScheduleChanged

if TYPE_CHECKING:
    from onthedot.app import App
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
    "command",
    "shell",
    "command_timeout",
)


def default_actor() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (containers)
        return "unknown"


class RuntimeSchedules:
    """Mixed into `app.schedules`."""

    app: App

    if TYPE_CHECKING:  # provided by ScheduleRegistry

        def declared(self) -> dict[str, ScheduleDef]: ...

        def view(
            self, row: LedgerRow | None, sched: ScheduleDef | None, now: datetime
        ) -> dict[str, Any]: ...

        def views(self) -> list[dict[str, Any]]: ...

        def definition_for(self, row: LedgerRow) -> ScheduleDef | None: ...

    # -- helpers ----------------------------------------------------------------------------
    @property
    def _storage(self) -> Storage:
        return self.app.storage

    def _now(self) -> datetime:
        return self.app.clock.fixed_now() or self._storage.db_now()

    def _audit(
        self,
        action: str,
        key: str,
        actor: str | None,
        note: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        who = actor or default_actor()
        self._storage.add_audit(
            AuditEntry(
                actor=who,
                action=action,
                key=key,
                note=note,
                details=details,
                at=self.app.clock.fixed_now(),
            )
        )
        self.app.events.emit(ScheduleChanged(key=key, action=action, actor=who, note=note))
        for wake in list(self.app._schedule_wakeups):
            wake()

    def _validated(self, decl: Declaration) -> ScheduleDef:
        sched, problems = validate(decl, self.app.jobs)
        errors = [p for p in problems if p.level == "error"]
        if decl.key in self.declared():
            errors.append(
                Problem(decl.key, "the key belongs to a schedule declared in code; pick another")
            )
        if errors or sched is None:
            raise ScheduleError(
                f"schedule {decl.key!r} is invalid: " + "; ".join(p.message for p in errors)
            )
        return sched

    def _row(self, key: str) -> LedgerRow:
        row = self._storage.get_schedule_row(key)
        if row is None:
            if key in self.declared():
                raise ScheduleError(
                    f"schedule {key!r} is declared in code but no worker has started with it "
                    "yet: start a worker (or run onthedot.testing.tick) first"
                )
            raise ScheduleError(f"no schedule with key {key!r}")
        return row

    def _dynamic_row(self, key: str, verb: str) -> LedgerRow:
        row = self._storage.get_schedule_row(key)
        if row is None:
            if key in self.declared():
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
    ) -> dict[str, Any]:
        """Create a runtime schedule. Validated like a declared one; nothing is stored when any
        problem is found (the error lists them all). Its first slot is the first after now."""
        unknown = set(policies) - set(POLICY_FIELDS)
        if unknown:
            raise ScheduleError(
                f"schedule {key!r}: unknown option(s) {sorted(unknown)}; "
                f"known: {', '.join(POLICY_FIELDS)}"
            )
        if (
            isinstance(key, str)
            and key not in self.declared()
            and self._storage.get_schedule_row(key) is not None
        ):
            raise ScheduleError(f"schedule {key!r} already exists: use update() or another key")
        decl = Declaration(
            key=key, spec=spec, job=job, args=args, kwargs=kwargs, source="dynamic", **policies
        )
        sched = self._validated(decl)
        now = self._now()
        row = self._dynamic_ledger_row(sched, cursor=now, reason="created")
        self._storage.upsert_dynamic(row)
        self._audit("created", key, actor, details={"spec": row.spec, **(row.definition or {})})
        return self.get(key)

    def update(self, key: str, *, actor: str | None = None, **changes: Any) -> dict[str, Any]:
        """Change a runtime schedule. A timing change (spec or time zone) restarts its cursor at
        now: no slot of the new timing before the edit fires. Other changes apply at the next
        fire."""
        row = self._dynamic_row(key, "update")
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
        cursor = self._now() if timing_changed else row.cursor
        new_row = self._dynamic_ledger_row(
            sched, cursor=cursor, reason="timing changed" if timing_changed else row.repaired_reason
        )
        if not timing_changed:
            new_row = replace(new_row, next_due_at=row.next_due_at)
        if row.paused:
            new_row = replace(new_row, next_due_at=row.paused_until)
        self._storage.upsert_dynamic(new_row)
        self._audit(
            "updated",
            key,
            actor,
            details={
                "changes": {k: _jsonable(v) for k, v in changes.items()},
                "timing_changed": timing_changed,
            },
        )
        return self.get(key)

    def delete(self, key: str, *, keep_jobs: bool = False, actor: str | None = None) -> int:
        """Delete a runtime schedule at once. Its queued (not running) jobs are cancelled unless
        `keep_jobs`; returns how many were cancelled."""
        self._dynamic_row(key, "delete")
        cancelled = self._storage.delete_schedule(key, cancel_queued=not keep_jobs)
        self._audit(
            "deleted", key, actor, details={"cancelled_jobs": cancelled, "kept_jobs": keep_jobs}
        )
        return cancelled

    def get(self, key: str) -> dict[str, Any]:
        """One schedule (declared or runtime) as the JSON object `schedules list` shows."""
        row = self._storage.get_schedule_row(key)
        declared = self.declared()
        if row is None and key not in declared:
            raise ScheduleError(f"no schedule with key {key!r}")
        sched = (
            declared.get(key) if row is None or row.source == "code" else (self.definition_for(row))
        )
        return self.view(row, sched, self._now())

    def list(self) -> list[dict[str, Any]]:
        """Every schedule, declared and runtime."""
        return self.views()

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
