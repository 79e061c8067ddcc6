"""The parts of schedule health the App composes (docs/health.md): the check each scheduler
runs at its tick, the webhook notifier beside it, the pinger of every worker, and the reader
the CLI, the web admin and the metrics share."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from onthedot.clock import Clock
from onthedot.observability.events import EventBus
from onthedot.schedules.alerts import (
    ENV_ADMIN_URL,
    ENV_WEBHOOK,
    AlertNotifier,
    check_webhook_url,
)
from onthedot.schedules.health import HealthReader
from onthedot.schedules.pings import Pinger
from onthedot.schedules.watcher import HealthWatcher

if TYPE_CHECKING:
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.schedules.scheduler import Service
    from onthedot.storage.interface import Storage


class HealthServices:
    """`alert_webhook` and `admin_url` default to $ONTHEDOT_ALERT_WEBHOOK and
    $ONTHEDOT_ADMIN_URL (the admin's address, for the alerts' links). `jobs`: whether the app
    registered jobs of its own (a bare App reads the expectations the schedulers applied)."""

    def __init__(
        self,
        storage: Callable[[], Storage],
        registry: ScheduleRegistry,
        events: EventBus,
        clock: Clock,
        *,
        lease: float,
        retention: timedelta,
        alert_webhook: str | None,
        admin_url: str | None,
        jobs: Callable[[], bool],
    ) -> None:
        webhook = alert_webhook or os.environ.get(ENV_WEBHOOK) or None
        self.alert_webhook = None if webhook is None else check_webhook_url(webhook)
        self.admin_url = admin_url or os.environ.get(ENV_ADMIN_URL) or None
        self._storage = storage
        self._registry = registry
        self._events = events
        self._clock = clock
        self._lease = lease
        self._retention = retention
        self.reader = HealthReader(
            storage, registry, lease, self._now, lambda: bool(len(registry) or jobs())
        )
        self.pinger = Pinger(self._declared_pings, lambda: storage().ping_targets())
        self._pinging = False
        self._lock = threading.Lock()

    def _now(self, storage: Storage) -> datetime:
        return storage.db_now()

    def _declared_pings(self) -> dict[str, str]:
        declared, _ = self._registry.declared_or_invalid()
        return {key: s.ping for key, s in declared.items() if s.ping}

    def watcher(self) -> HealthWatcher:
        """A scheduler's health check (it queues alerts when this app has a webhook)."""
        return HealthWatcher(
            self._registry, self._events, lease=self._lease, alerts=self.alert_webhook is not None
        )

    def services(self, worker_id: str, storage: Storage) -> list[Service]:
        """What runs beside a scheduler: the alert notifier, when there is a webhook."""
        if self.alert_webhook is None:
            return []
        notifier = AlertNotifier(
            storage,
            self.alert_webhook,
            worker_id=worker_id,
            clock=self._clock,
            admin_url=self.admin_url,
            retention=self._retention,
        )
        return [notifier]

    def start_pings(self) -> None:
        """Ping the schedules that have a `ping` from this process's jobs (once per app)."""
        with self._lock:
            if not self._pinging:
                self._pinging = True
                self._events.subscribe(self.pinger)
                self.pinger.start()

    def close(self) -> None:
        self.pinger.stop()
