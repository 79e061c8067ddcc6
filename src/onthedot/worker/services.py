"""Small periodic services on one thread (the keeper's heartbeat, rescue, prune ...): each has
its own schedule and its own error handling, so one that fails (a rescue whose statement times
out) delays neither another's turn nor its own next try beyond its backoff.

A service's `turn(now)` does its work and returns the seconds until its next turn; `now` is the
keeper clock's `monotonic()`, the clock the schedule is kept on (a test's `ManualClock` moves
it). A database error (`OnthedotError`, `OSError`) is reported as a `DatabaseError` event
named after the service and retried after `after_error(errors)` seconds; any other error is
a bug and ends the thread, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from onthedot.clock import backoff_delay
from onthedot.domain.errors import OnthedotError


@dataclass(slots=True)
class Service:
    """One periodic task: `turn(now)` -> seconds until the next turn; `after_error(errors)` ->
    seconds until the retry after the `errors`-th failure in a row (default: `backoff_delay`);
    `ready(now)`, if given, may call a turn before it is due (work waiting to be reported)."""

    name: str
    turn: Callable[[float], float]
    after_error: Callable[[int], float] = backoff_delay
    ready: Callable[[float], bool] | None = None
    due: float = float("-inf")  # the clock's monotonic instant of the next turn
    errors: int = 0  # failures in a row
    runs: int = 0  # turns that completed

    def is_due(self, now: float) -> bool:
        return now >= self.due or (self.ready is not None and self.ready(now))

    def step(self, now: float, report: Callable[[str, BaseException, int], None]) -> None:
        """Take a turn if one is due; a database error is reported and retried later."""
        if not self.is_due(now):
            return
        try:
            self.due = now + self.turn(now)
        except (OnthedotError, OSError) as exc:
            self.errors += 1
            report(self.name, exc, self.errors)
            self.due = now + self.after_error(self.errors)
        else:
            self.errors = 0
            self.runs += 1

    def defer(self, until: float) -> None:
        """No turn before `until` (another service saw the database fail)."""
        self.due = max(self.due, until)
