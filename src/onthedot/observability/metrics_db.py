"""The gauges whose truth is the database, computed at scrape time from the storage's read verbs
(`queue_stats`, `list_workers`, `list_schedule_rows`): a Prometheus custom collector.

A scrape while the database is down answers `onthedot_database_up 0` and nothing else from
here, rather than failing the whole scrape.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from onthedot.clock import Clock
from onthedot.domain.errors import OnthedotError
from onthedot.domain.jobs import QueueStats
from onthedot.domain.ledger import LedgerRow
from onthedot.domain.serving import alive as worker_alive
from onthedot.observability.events import EventBus
from onthedot.observability.hooks import Instrumentation
from onthedot.observability.metrics_health import health_families
from onthedot.storage.interface import Storage, WorkerRow

if TYPE_CHECKING:
    from onthedot.schedules.health import HealthReport

STATES = ("queued", "running", "succeeded", "failed", "cancelled")


class _Registry(Protocol):
    def declared_or_invalid(self) -> tuple[Mapping[str, Any], Mapping[str, Any]]: ...


class _Schedules(Protocol):
    @property
    def registry(self) -> _Registry: ...


class _Health(Protocol):
    def report(self) -> HealthReport: ...


class MetricsApp(Protocol):
    """What the metrics read from an App."""

    @property
    def health(self) -> _Health: ...

    @property
    def events(self) -> EventBus: ...

    @property
    def instrumentation(self) -> Instrumentation: ...

    @property
    def lease(self) -> float: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def schedules(self) -> _Schedules: ...

    def queue_stats(self) -> list[QueueStats]: ...


class DatabaseCollector(Collector):
    """Yields the database gauges on every collect (one read of each verb)."""

    def __init__(self, app: MetricsApp, *, late_after: float = 60.0) -> None:
        self.app = app
        self.late_after = late_after

    def describe(self) -> Iterable[Metric]:
        return []  # the metrics depend on the database: registered without a fixed list

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("onthedot_database_up", "1 when the database answered.")
        try:
            storage = self.app.storage
            now = self.app.clock.fixed_now() or storage.db_now()
            queues = self.app.queue_stats()
            workers = storage.list_workers()
            rows = storage.list_schedule_rows()
            health = self.app.health.report()
        except (OnthedotError, OSError):
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _queue_metrics(queues)
        yield from _worker_metrics(workers, self.app.lease)
        _, invalid = self.app.schedules.registry.declared_or_invalid()
        yield from _schedule_metrics(rows, now, self.late_after, len(invalid))
        for family in health_families(health):  # schedule health: observability/metrics_health
            gauge = GaugeMetricFamily(family.name, family.help, labels=list(family.labels))
            for values, value in family.samples:
                gauge.add_metric(list(values), value)
            yield gauge


def _queue_metrics(queues: list[QueueStats]) -> Iterator[Metric]:
    jobs = GaugeMetricFamily("onthedot_jobs", "Jobs by queue and state.", labels=["queue", "state"])
    ready = GaugeMetricFamily(
        "onthedot_queue_ready", "Queued jobs whose run time has come.", labels=["queue"]
    )
    running = GaugeMetricFamily(
        "onthedot_queue_running", "Jobs running now (leased to a worker).", labels=["queue"]
    )
    oldest = GaugeMetricFamily(
        "onthedot_queue_oldest_ready_age_seconds",
        "Age of the oldest ready job of each queue (0 when none is ready).",
        labels=["queue"],
    )
    paused = GaugeMetricFamily(
        "onthedot_queue_paused", "1 when the queue is paused.", labels=["queue"]
    )
    for q in queues:
        for state in STATES:
            jobs.add_metric([q.queue, state], getattr(q, state))
        ready.add_metric([q.queue], q.ready)
        running.add_metric([q.queue], q.running)
        oldest.add_metric([q.queue], q.oldest_ready_age or 0.0)
        paused.add_metric([q.queue], int(q.paused))
    yield from (jobs, ready, running, oldest, paused)


def _worker_metrics(workers: list[WorkerRow], lease: float) -> Iterator[Metric]:
    alive = sum(1 for w in workers if worker_alive(w, lease))
    yield GaugeMetricFamily(
        "onthedot_workers_alive", "Workers heartbeating within the lease.", value=alive
    )
    yield GaugeMetricFamily(
        "onthedot_workers_stale", "Registered workers past the lease.", value=len(workers) - alive
    )


def _schedule_metrics(
    rows: list[LedgerRow], now: datetime, late_after: float, invalid: int
) -> Iterator[Metric]:
    lag = GaugeMetricFamily(
        "onthedot_schedule_lag_seconds",
        "How far an active schedule's next slot is overdue (0 when on time).",
        labels=["schedule"],
    )
    missed = CounterMetricFamily(
        "onthedot_schedule_missed",
        "Slots a schedule missed (paused, or past its catch-up window).",
        labels=["schedule"],
    )
    coalesced = CounterMetricFamily(
        "onthedot_schedule_coalesced",
        "Overdue slots a schedule folded into one run.",
        labels=["schedule"],
    )
    paused = late = missed_all = 0
    for row in rows:
        if row.removed_at is not None:
            continue
        overdue = 0.0
        if row.paused:
            paused += 1
        elif row.next_due_at is not None:
            overdue = max(0.0, (now - row.next_due_at).total_seconds())
        late += overdue > late_after
        missed_all += row.missed_total
        lag.add_metric([row.key], overdue)
        missed.add_metric([row.key], row.missed_total)
        coalesced.add_metric([row.key], row.coalesced_total)
    yield from (lag, missed, coalesced)
    yield GaugeMetricFamily(
        "onthedot_schedules_paused", "Schedules paused by an operator.", value=paused
    )
    yield GaugeMetricFamily(
        "onthedot_schedules_late",
        f"Active schedules overdue by more than {late_after:g}s (nobody ticking).",
        value=late,
    )
    yield GaugeMetricFamily(
        "onthedot_schedules_invalid", "Declared schedules failing validation.", value=invalid
    )
    yield CounterMetricFamily(
        "onthedot_schedules_missed", "Slots missed by all schedules.", value=missed_all
    )
