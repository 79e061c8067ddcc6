"""Time, injected. Nothing else in onthedot reads the wall clock, the monotonic clock or sleeps
on its own: `worker/` and `schedules/` read `monotonic()` and wait with `sleep()`/`asleep()` of
the clock they were given.

Whether something is *due* is always decided by the database clock (PostgreSQL `now()`,
SQLite's own clock), so a worker whose clock is off changes neither whether nor how often a slot
fires. The local clock only decides how long to sleep. A `ManualClock` replaces both, for tests:
storage verbs then receive its time explicitly, and the loops paced on it (the scheduler, the
claimer, the keeper's services) move only when the test moves it.

What must stay real seconds whatever the app's clock (a job's timeout, a stop's grace, a child
process's deadlines, the lease proof of `lease_clock`) is paced on `REAL`, a `SystemClock`.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Waitable(Protocol):
    """What a sleep can be woken by: a `threading.Event`, a storage `Wakeup`."""

    def wait(self, timeout: float) -> bool: ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The local idea of now (aware, UTC); used for sleeping, never for deciding what's due."""
        ...

    def fixed_now(self) -> datetime | None:
        """The time storage verbs must use, or None to use the database clock."""
        ...

    def monotonic(self) -> float:
        """Seconds that never step: how long a rescuer has watched a lease."""
        ...

    def sleep(self, seconds: float, wake: Waitable | None = None) -> bool:
        """Sleep up to `seconds`; return True if `wake` was set."""
        ...

    async def asleep(self, seconds: float) -> None:
        """Sleep up to `seconds` in a coroutine."""
        ...


class SystemClock:
    """The real clock. `offset` shifts the local view (a test hook for clock skew)."""

    def __init__(self, offset: timedelta = timedelta(0)) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def fixed_now(self) -> datetime | None:
        return None

    def monotonic(self) -> float:
        # Leaves out a suspended machine's sleep: a rescuer must never think more time passed.
        return time.monotonic()

    def sleep(self, seconds: float, wake: Waitable | None = None) -> bool:
        if wake is None:
            time.sleep(max(0.0, seconds))
            return False
        return wake.wait(max(0.0, seconds))

    async def asleep(self, seconds: float) -> None:
        import asyncio  # here: a SQLite worker never imports it (a running loop has already)

        await asyncio.sleep(max(0.0, seconds))


# Real seconds, whatever a test's clock says: job timeouts, grace periods, child processes.
REAL = SystemClock()


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
        self._origin = self._now
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def fixed_now(self) -> datetime | None:
        return self.now()

    def monotonic(self) -> float:
        """Seconds of manual time since the clock was made: it moves only when the test moves
        it."""
        return (self.now() - self._origin).total_seconds()

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

    def sleep(self, seconds: float, wake: Waitable | None = None) -> bool:
        # Time does not pass by itself; yield briefly so loops driven by a manual clock don't spin.
        seconds = min(max(0.0, seconds), 0.01)
        if wake is None:
            time.sleep(seconds)
            return False
        return wake.wait(seconds)

    async def asleep(self, seconds: float) -> None:
        import asyncio

        await asyncio.sleep(min(max(0.0, seconds), 0.01))


def backoff_delay(errors: int, *, first: float = 0.1, cap: float = 10.0) -> float:
    """How long to wait after `errors` failures in a row before the next try: `first` seconds,
    doubling with each failure, at most `cap` (the one backoff of every loop that retries the
    database: claims, outcomes, heartbeats, the scheduler's tick, LISTEN reconnects)."""
    return min(first * 2.0 ** min(max(errors, 0), 30), cap)


_BOOTTIME: int | None = getattr(time, "CLOCK_BOOTTIME", None)


def lease_clock() -> float:
    """Seconds on the clock a worker proves its claims on (`worker/leases.py`): monotonic
    (never stepped) and, where the system has CLOCK_BOOTTIME (Linux), counting the time a
    suspended machine slept, which `time.monotonic()` leaves out. A worker must never think
    less time passed than did; a rescuer, the reverse, so rescuers use `time.monotonic()`."""
    if _BOOTTIME is None:
        return time.monotonic()
    return time.clock_gettime(_BOOTTIME)


class FollowingClock:
    """Forwards to `target`, which may be replaced after the components were built (the App's
    clock, swapped for a ManualClock by a test): everyone handed this clock follows."""

    def __init__(self, target: Clock) -> None:
        self.target = target

    def now(self) -> datetime:
        return self.target.now()

    def fixed_now(self) -> datetime | None:
        return self.target.fixed_now()

    def monotonic(self) -> float:
        return self.target.monotonic()

    def sleep(self, seconds: float, wake: Waitable | None = None) -> bool:
        return self.target.sleep(seconds, wake)

    async def asleep(self, seconds: float) -> None:
        await self.target.asleep(seconds)
