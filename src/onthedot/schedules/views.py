"""Read views of schedules: the JSON object `schedules list` shows for each, and `explain`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, NotRequired, TypedDict

from onthedot.clock import Clock
from onthedot.commandline import CommandLine
from onthedot.domain.errors import ScheduleError
from onthedot.domain.jobs import iso
from onthedot.domain.payload import JsonValue
from onthedot.schedules.explain import explain

if TYPE_CHECKING:
    from onthedot.domain.definitions import ScheduleDef
    from onthedot.domain.ledger import LedgerRow
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.storage.interface import Storage


class ScheduleView(TypedDict):
    """The JSON object `schedules list --json` shows for one schedule (instants as ISO text)."""

    key: str
    spec: str | None
    description: str | None
    timezone: str | None
    source: str
    status: str  # active, pending, paused, removed, invalid
    job: JsonValue
    next: list[str]
    last_slot: str | None
    last_outcome: str | None
    last_job_id: int | None
    missed: int
    coalesced: int
    cursor: str | None
    next_due_at: str | None
    paused: bool
    paused_until: str | None
    paused_by: str | None
    pause_note: str | None
    problems: NotRequired[list[str]]  # why an invalid schedule is invalid


def overdue(view: ScheduleView, now: datetime) -> float:
    """Seconds an active schedule's next slot is overdue (0 when on time, and for a schedule
    that is not active: paused, pending, removed or invalid)."""
    due = view.get("next_due_at")
    if view.get("status") != "active" or not due:
        return 0.0
    return max(0.0, (now - datetime.fromisoformat(due)).total_seconds())


def is_late(view: ScheduleView, now: datetime, late_after: float) -> bool:
    """The one "late schedule" rule (the web admin's pages, `/metrics` and the workers'
    metrics): active, its next slot overdue by more than `late_after` seconds, so no worker
    running the scheduler is ticking it."""
    return overdue(view, now) > late_after


class ScheduleViews:
    """Every schedule, declared or runtime, as its ledger row and its definition show it."""

    def __init__(
        self,
        storage: Callable[[], Storage],
        clock: Clock,
        registry: ScheduleRegistry,
        commands: Callable[[], CommandLine] = CommandLine,
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._registry = registry
        self._commands = commands  # how a worker is started where the app runs (hints)

    def now(self) -> datetime:
        """The app's clock when it is fixed (tests), else the database clock."""
        return self._storage().db_now()

    def view(self, row: LedgerRow | None, sched: ScheduleDef | None, now: datetime) -> ScheduleView:
        """The JSON object of `schedules list --json` for one schedule."""
        key = row.key if row is not None else (sched.key if sched else "")
        nexts: list[str] = []
        if sched is not None and not (row is not None and row.paused and not row.paused_until):
            t = row.cursor if row is not None and row.cursor > now else now
            if row is not None and row.paused and row.paused_until and row.paused_until > t:
                t = row.paused_until  # a paused schedule lists only slots after its pause
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

    def views(self) -> list[ScheduleView]:
        """Every schedule the code declares or the database holds, by key. One that fails
        validation is listed with status "invalid" and its `problems`; it never hides the
        others."""
        storage = self._storage()
        now = storage.db_now()
        rows = {r.key: r for r in storage.list_schedule_rows()}
        declared, invalid = self._registry.declared_or_invalid()
        keys = sorted(set(rows) | set(declared) | set(invalid))
        out = []
        for key in keys:
            row = rows.get(key)
            code = row is None or row.source == "code"
            sched = declared.get(key) if row is None or code else self._registry.definition_for(row)
            view = self.view(row, sched, now)
            if code and key in invalid:
                decl = self._registry.declaration(key)
                view["key"], view["status"], view["problems"] = key, "invalid", invalid[key]
                view["spec"] = view["spec"] or (decl.spec if isinstance(decl.spec, str) else None)
                view["timezone"] = view["timezone"] or (
                    decl.timezone if isinstance(decl.timezone, str) else None
                )
            elif row is not None and sched is None and row.source == "dynamic":
                view["problems"] = [
                    p.message for p in self._registry.dynamic_problems(row) if p.level == "error"
                ]
            out.append(view)
        return out

    def get(self, key: str) -> ScheduleView:
        """One schedule (declared or runtime) as the JSON object `schedules list` shows."""
        row = next(iter(self._storage().list_schedule_rows([key])), None)
        declared = self._registry.declared()
        if row is None and key not in declared:
            raise ScheduleError(f"no schedule with key {key!r}")
        sched = (
            declared.get(key)
            if row is None or row.source == "code"
            else (self._registry.definition_for(row))
        )
        return self.view(row, sched, self.now())

    def get_definition(self, key: str) -> ScheduleDef:
        declared = self._registry.declared()
        if key in declared:
            return declared[key]
        row = next(iter(self._storage().list_schedule_rows([key])), None)
        if row is None:
            raise ScheduleError(f"no schedule with key {key!r}")
        sched = self._registry.definition_for(row)
        if sched is None:
            raise ScheduleError(
                f"schedule {key!r} is not valid in this code: "
                + "; ".join(p.message for p in self._registry.dynamic_problems(row))
            )
        return sched

    def explain(self, key: str) -> str:
        """Why schedule `key` did or did not fire, in plain words (`schedules explain`)."""
        storage = self._storage()
        now = storage.db_now()
        return explain(self._registry, storage, now, key, commands=self._commands())
