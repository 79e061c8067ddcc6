"""Time, injected. Nothing else in onthedot reads the wall clock.

Whether something is *due* is always decided by the database clock (PostgreSQL `now()`,
SQLite's own clock), so a worker whose clock is off changes neither whether nor how often a slot
fires. The local clock only decides how long to sleep. A `ManualClock` replaces both, for tests:
storage verbs then receive its time explicitly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The local idea of now (aware, UTC); used for sleeping, never for deciding what's due."""
        ...

    def fixed_now(self) -> datetime | None:
        """The time storage verbs must use, or None to use the database clock."""
        ...

    def sleep(self, seconds: float, wake: threading.Event | None = None) -> bool:
        """Sleep up to `seconds`; return True if `wake` was set."""
        ...


class SystemClock:
    """The real clock. `offset` shifts the local view (a test hook for clock skew)."""

    def __init__(self, offset: timedelta = timedelta(0)) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def fixed_now(self) -> datetime | None:
        return None

    def sleep(self, seconds: float, wake: threading.Event | None = None) -> bool:
        if wake is None:
            time.sleep(max(0.0, seconds))
            return False
        return wake.wait(max(0.0, seconds))


class ManualClock:
    """A clock that moves only when told to; storage verbs use its time, not the database's."""

    def __init__(self, start: datetime | str | None = None) -> None:
        if start is None:
            start = datetime(2030, 1, 1, tzinfo=UTC)
        elif isinstance(start, str):
            start = datetime.fromisoformat(start.replace("Z", "+00:00"))
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime (add tzinfo=UTC)")
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def fixed_now(self) -> datetime | None:
        return self.now()

    def set(self, value: datetime) -> None:
        if value.tzinfo is None:
            raise ValueError("ManualClock.set needs an aware datetime")
        with self._lock:
            self._now = value.astimezone(UTC)

    def advance(self, delta: timedelta | float) -> datetime:
        if not isinstance(delta, timedelta):
            delta = timedelta(seconds=delta)
        with self._lock:
            self._now += delta
            return self._now

    def sleep(self, seconds: float, wake: threading.Event | None = None) -> bool:
        # Time does not pass by itself; yield briefly so loops driven by a manual clock don't spin.
        if wake is None:
            time.sleep(min(seconds, 0.01))
            return False
        return wake.wait(min(seconds, 0.01))


class ClockOf:
    """Whichever clock `get()` returns at each call: the storage follows the App's clock, which
    a test may replace after the storage is built."""

    def __init__(self, get: Callable[[], Clock]) -> None:
        self._get = get

    def now(self) -> datetime:
        return self._get().now()

    def fixed_now(self) -> datetime | None:
        return self._get().fixed_now()

    def sleep(self, seconds: float, wake: threading.Event | None = None) -> bool:
        return self._get().sleep(seconds, wake)


def utcnow_wall() -> datetime:
    """The host clock, for timestamps that decide nothing (log lines, worker start time)."""
    return datetime.now(UTC)
