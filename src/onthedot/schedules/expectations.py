"""The operator's control over a schedule's expectations (declared or runtime): `expect`
overrides the code's `grace`, `max_runtime`, `deadline` and `ping` at run time, audited; the
overrides live on the schedule's health row and survive deploys until cleared (or `reset`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from onthedot.domain.errors import ScheduleError
from onthedot.domain.expectations import (
    EXPECTATION_FIELDS,
    Expectations,
    parse_expectations,
    stored_expectations,
)
from onthedot.domain.ledger import AuditAction
from onthedot.domain.payload import JsonObject
from onthedot.schedules.audit import default_actor

if TYPE_CHECKING:
    from onthedot.domain.ledger import LedgerRow
    from onthedot.schedules.audit import AuditTrail
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.storage.health import HealthStorage

UNCHANGED: Any = object()  # an expectation `expect` leaves as it is


class ExpectationControls:
    """Read and override the expectations of any schedule."""

    def __init__(
        self,
        storage: Callable[[], HealthStorage],
        registry: ScheduleRegistry,
        audit: AuditTrail,
        require_row: Callable[[str, str | None, str | None], LedgerRow],
    ) -> None:
        self._storage = storage
        self._registry = registry
        self._audit = audit
        self._require_row = require_row  # the ledger row, made for a declared schedule

    def expect(
        self,
        key: str,
        *,
        grace: Any = UNCHANGED,
        max_runtime: Any = UNCHANGED,
        deadline: Any = UNCHANGED,
        ping: Any = UNCHANGED,
        clear: bool = False,
        note: str | None = None,
        actor: str | None = None,
    ) -> Expectations:
        """Override the expectations of schedule `key` from now on: `grace="10m"`,
        `max_runtime="30m"` or `"auto"`, `deadline="06:00"` or `"4h"`, `ping="https://..."`.
        None turns one off (for `grace`: back to the default, one period within [1 min, 1 h]);
        a field not given keeps its override. `clear=True` drops every override first (back
        to the code's, or the runtime definition's). Returns the expectations now in force."""
        row = self._require_row(key, note, actor)
        given = {
            f: v
            for f, v in zip(EXPECTATION_FIELDS, (grace, max_runtime, deadline, ping), strict=True)
            if v is not UNCHANGED
        }
        parsed, problems = parse_expectations(given)
        if problems:
            raise ScheduleError(f"schedule {key!r}: " + "; ".join(problems))
        encoded = parsed.to_json()
        state = next(iter(self._storage().health_states([key])), None)
        overrides: JsonObject = {} if clear or state is None else dict(state.overrides or {})
        overrides.update({f: encoded.get(f) for f in given})
        who = actor or default_actor()
        stored = overrides or None
        if not self._storage().set_expectations(key, stored, actor=who, note=note):
            raise ScheduleError(f"schedule {key!r} has no health row yet: start a worker first")
        self._audit.record(
            AuditAction.EXPECTED, key, who, note, {"overrides": stored, "cleared": clear}
        )
        return self._declared(row).with_overrides(stored)

    def expectations(self, key: str) -> Expectations:
        """The expectations in force for `key`: its definition's, with an operator's
        overrides on top."""
        row = self._require_row(key, None, None)
        state = next(iter(self._storage().health_states([key])), None)
        return self._declared(row).with_overrides(state.overrides if state else None)

    def _declared(self, row: LedgerRow) -> Expectations:
        registry = self._registry
        sched = (
            registry.declared().get(row.key)
            if row.source == "code"
            else registry.definition_for(row)
        )
        return sched.expectations if sched is not None else stored_expectations(row.definition)
