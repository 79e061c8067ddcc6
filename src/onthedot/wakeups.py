"""In-process wake-ups: what this process does itself, its own workers and schedulers hear of
at once, without waiting for the database (LISTEN, `data_version`) or a poll to tell them.

- jobs: an enqueue or a scheduler tick that inserted jobs names their queues; idle workers of
  those queues claim.
- schedules: a runtime schedule change wakes the schedulers, so their next tick sees it.

The App owns one hub and hands it to the enqueue path, the workers and the schedulers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

JobsListener = Callable[[set[str]], None]
SchedulesListener = Callable[[], None]
L = TypeVar("L")


class WakeupHub:
    """Listeners registered by the components running in this process. Registering returns the
    function that removes the listener again; notifying calls each listener on the caller's
    thread (a listener only sets a flag or writes to a socket)."""

    def __init__(self) -> None:
        self._jobs: list[JobsListener] = []
        self._schedules: list[SchedulesListener] = []

    def on_jobs(self, listener: JobsListener) -> Callable[[], None]:
        """Call `listener(queues)` whenever jobs were added to `queues` in this process."""
        self._jobs.append(listener)
        return lambda: _discard(self._jobs, listener)

    def jobs_added(self, queues: Iterable[str]) -> None:
        """Jobs were added to `queues` (read only when someone listens)."""
        if not self._jobs:
            return
        names = set(queues)
        for listener in list(self._jobs):
            listener(names)

    def on_schedules_changed(self, listener: SchedulesListener) -> Callable[[], None]:
        """Call `listener()` whenever a runtime schedule changed in this process."""
        self._schedules.append(listener)
        return lambda: _discard(self._schedules, listener)

    def schedules_changed(self) -> None:
        for listener in list(self._schedules):
            listener()


def _discard(listeners: list[L], listener: L) -> None:
    if listener in listeners:
        listeners.remove(listener)
