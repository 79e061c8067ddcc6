"""The audit log of schedule changes: every runtime edit and operator action is written there,
announced as a `ScheduleChanged` event, and wakes this process's schedulers."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import TYPE_CHECKING

from onthedot.clock import Clock
from onthedot.domain.fields import check_text
from onthedot.domain.ledger import AuditAction, AuditEntry
from onthedot.domain.payload import JsonObject
from onthedot.observability.events import EventBus, ScheduleChanged
from onthedot.wakeups import WakeupHub

if TYPE_CHECKING:
    from onthedot.storage.roles import LedgerStore


def default_actor() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (containers)
        return "unknown"


def check_operator_text(note: str | None, actor: str | None) -> None:
    """Raise ValueError naming the field unless the note (free text) and the actor (a name,
    printed one per line) can be stored by both databases."""
    if note is not None:
        check_text(note, "note")
    if actor is not None:
        check_text(actor, "actor", name=True)


class AuditTrail:
    """Writes and reads the audit log."""

    def __init__(
        self,
        storage: Callable[[], LedgerStore],
        clock: Clock,
        events: EventBus,
        wakeups: WakeupHub,
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._events = events
        self._wakeups = wakeups

    def record(
        self,
        action: AuditAction,
        key: str,
        actor: str | None,
        note: str | None = None,
        details: JsonObject | None = None,
    ) -> None:
        """Write one entry (the actor defaults to the OS user), emit it, wake the schedulers."""
        who = actor or default_actor()
        self._storage().add_audit(
            AuditEntry(
                actor=who,
                action=str(action),
                key=key,
                note=note,
                details=details,
                at=self._clock.fixed_now(),
            )
        )
        self._events.emit(ScheduleChanged(key=key, action=str(action), actor=who, note=note))
        self._wakeups.schedules_changed()

    def entries(self, key: str | None = None, *, limit: int = 100) -> list[AuditEntry]:
        """The audit log (of one schedule, or all), newest first."""
        return self._storage().list_audit(key, limit=limit)
