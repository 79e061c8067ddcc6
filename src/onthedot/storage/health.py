"""The storage verbs of schedule health (docs/health.md), part of the one Storage protocol
(`interface.Storage` inherits them; the conformance suite covers them as every other verb).

Time: as every verb, "now" is the storage's clock (the database clock unless fixed)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from onthedot.domain.payload import JsonObject
from onthedot.domain.watch import (
    AlertRecord,
    HealthState,
    ProblemRecord,
    WatchDecision,
    WatchFacts,
)


class WatchTransaction(Protocol):
    """An open evaluation (see HealthVerbs.watch)."""

    now: datetime  # the transaction's clock
    facts: list[WatchFacts]  # the schedules due for a check, their health rows locked

    def apply(self, decisions: Sequence[WatchDecision], *, alerts: bool) -> list[ProblemRecord]:
        """Open the decisions' problems (a (schedule, slot, kind) already there is not opened
        again), resolve and refresh the others, write the health rows; with `alerts`, add an
        alert to deliver for each problem opened and each resolved. Returns the problems
        opened and resolved by this call, as stored."""


class HealthStorage(Protocol):
    def set_expectations(
        self, key: str, overrides: JsonObject | None, *, actor: str, note: str | None = None
    ) -> bool:
        """Replace an operator's expectation overrides of one schedule (None: clear them) and
        have it checked now. False when the key has no health row."""

    def health_states(self, keys: Collection[str] | None = None) -> list[HealthState]:
        """Health rows (with `keys`, those of these keys), by key."""

    def recheck_health(self, keys: Sequence[str]) -> int:
        """Have these schedules checked at the next tick (their definitions changed)."""

    def watch(self, *, limit: int) -> AbstractContextManager[WatchTransaction]:
        """Open one evaluation transaction holding up to `limit` health rows whose check is due
        (skipping rows another scheduler holds), with what the database knows of each."""

    def health_facts(self, keys: Collection[str] | None = None) -> list[WatchFacts]:
        """The same facts as `watch` reads, of every watched schedule (or of `keys`), due or
        not, without locking anything: for a read-only check."""

    def list_problems(
        self, *, key: str | None = None, open_only: bool = True, limit: int = 500
    ) -> list[ProblemRecord]:
        """Problems (of one schedule, or all), newest first; open ones only unless told."""

    def claim_alerts(self, worker_id: str, *, limit: int, hold: float) -> list[AlertRecord]:
        """Claim up to `limit` alerts due for delivery for `hold` seconds (no other caller gets
        them meanwhile; an unfinished claim expires), oldest first."""

    def finish_alert(
        self, alert_id: int, worker_id: str, *, error: str | None, retry_at: datetime | None
    ) -> bool:
        """Record one delivery attempt of an alert this worker claimed: sent (no error), to be
        tried again at `retry_at`, or given up (an error and no retry). False when the claim
        was lost (expired and taken by another)."""

    def prune_health(self, *, older_than: datetime) -> dict[str, int]:
        """Delete problems resolved before `older_than` and alerts delivered or given up that
        were created before it; counts per table."""

    def ping_targets(self) -> dict[str, str]:
        """The ping URL of every schedule that has one, by key (as last evaluated)."""
