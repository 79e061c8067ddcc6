"""Jobs finished per minute over the last day, read incrementally for the overview's charts.

A minute that is over never changes (a job finishes now, not in the past), so after the first
read only the minutes since the last read are asked for: with a million jobs a day the overview
pays the scan of the day once per process, then a few rows per refresh."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Protocol

MINUTE = 60
DAY = 24 * 3600
SETTLE = 2 * MINUTE  # minutes younger than this may still grow (clocks of hosts differ)

Count = tuple[datetime, str, int]


class FinishedCounts(Protocol):
    """Where the counts come from (`app.operations`)."""

    def finished_counts(self, *, since: datetime, bucket_seconds: int = 3600) -> list[Count]: ...


class Throughput:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed: dict[int, dict[str, int]] = {}  # minute start -> state -> count
        self._through: int | None = None  # every minute before this one is in _closed

    def counts(self, source: FinishedCounts, now: datetime) -> list[Count]:
        """(minute start, state, count) for every minute of the day before `now`."""
        current = int(now.timestamp()) // MINUTE * MINUTE
        start = current - DAY + MINUTE
        boundary = current - SETTLE
        with self._lock:
            through = self._through
            if through is None or through < start or through > current:
                through = None  # first read, or the clock jumped: read the whole day
        since = start if through is None else through
        rows = source.finished_counts(
            since=datetime.fromtimestamp(since, UTC), bucket_seconds=MINUTE
        )
        fresh: list[Count] = []
        with self._lock:
            if through is None:
                self._closed = {}
            for at, state, n in rows:
                t = int(at.timestamp())
                if t < boundary:
                    self._closed.setdefault(t, {})[state] = n
                else:
                    fresh.append((at, state, n))
            self._through = max(boundary, since)
            for t in [t for t in self._closed if t < start]:
                del self._closed[t]
            closed = [
                (datetime.fromtimestamp(t, UTC), state, n)
                for t, states in self._closed.items()
                for state, n in states.items()
            ]
        return closed + fresh
