"""The parts of schedule health the App composes (docs/health.md): the check each scheduler
runs at its tick, and the reader the CLI, the web admin and the metrics share."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from onthedot.clock import Clock
from onthedot.observability.events import EventBus
from onthedot.schedules.health import HealthReader
from onthedot.schedules.watcher import HealthWatcher

if TYPE_CHECKING:
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.storage.interface import Storage


class HealthServices:
    """Builds each scheduler's health check; holds the reader."""

    def __init__(
        self,
        storage: Callable[[], Storage],
        registry: ScheduleRegistry,
        events: EventBus,
        clock: Clock,
        *,
        lease: float,
        retention: timedelta,
    ) -> None:
        self._storage = storage
        self._registry = registry
        self._events = events
        self._clock = clock
        self._lease = lease
        self._retention = retention
        self.reader = HealthReader(storage, registry, lease, self._now)

    def _now(self, storage: Storage) -> datetime:
        return self._clock.fixed_now() or storage.db_now()

    def watcher(self) -> HealthWatcher:
        """A scheduler's health check."""
        return HealthWatcher(self._registry, self._events, lease=self._lease)
