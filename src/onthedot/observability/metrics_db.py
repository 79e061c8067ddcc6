"""The gauges whose truth is the database, computed at scrape time from the App's reads (queue
stats, workers, the schedule views the web admin shows): a Prometheus custom collector, the one
exposition of these gauges (`/metrics` of the web admin and of `onthedot worker
--metrics-port`). A schedule is late by the web admin's rule (`schedules.views.is_late`).

A scrape while the database is down answers `onthedot_database_up 0` and nothing else from
here, rather than failing the whole scrape.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from onthedot.domain.errors import OnthedotError
from onthedot.domain.jobs import QueueStats
from onthedot.domain.limits import KeyLoad, LimitRow, split_key
from onthedot.domain.serving import alive as worker_alive
from onthedot.domain.workers import WorkerRow
from onthedot.observability.events import EventBus
from onthedot.observability.hooks import Instrumentation
from onthedot.observability.metrics_health import gauges, health_families
from onthedot.schedules.views import ScheduleView, is_late, overdue

if TYPE_CHECKING:
    from onthedot.schedules.health import HealthReport

STATES = ("queued", "running", "succeeded", "failed", "cancelled")


class _Schedules(Protocol):
    def views(self) -> list[ScheduleView]: ...


class _Operations(Protocol):
    def now(self) -> datetime: ...

    def workers(self) -> list[WorkerRow]: ...

    def ping(self, *, check_schema: bool = True) -> None: ...

    def schema_version(self) -> tuple[int, int]: ...


class _Limits(Protocol):
    def loads(self) -> tuple[list[LimitRow], list[KeyLoad]]: ...


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
    def operations(self) -> _Operations: ...

    @property
    def schedules(self) -> _Schedules: ...

    @property
    def limits(self) -> _Limits: ...

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
            now = self.app.operations.now()
            queues = self.app.queue_stats()
            workers = self.app.operations.workers()
            views = self.app.schedules.views()
            health = self.app.health.report()
            limits, loads = self.app.limits.loads()
        except (OnthedotError, OSError):
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _queue_metrics(queues)
        yield from _worker_metrics(workers, self.app.lease)
        yield from _limit_metrics(limits, loads)
        yield from _schedule_metrics(views, now, self.late_after)
        yield from gauges(health_families(health))  # schedule health: metrics_health.py


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


TOP_KEYS = 5  # the keys of a limit with their own series; the rest are summed as "(other)"


def _limit_metrics(limits: list[LimitRow], loads: list[KeyLoad]) -> Iterator[Metric]:
    """Per limit, running and waiting jobs of its busiest keys (bounded label cardinality)."""
    running = GaugeMetricFamily(
        "onthedot_limit_running",
        f"Jobs running under a limit, for its {TOP_KEYS} busiest keys and '(other)'.",
        labels=["limit", "key"],
    )
    waiting = GaugeMetricFamily(
        "onthedot_limit_waiting",
        "Jobs queued under a limit (as their first limit), by key as onthedot_limit_running.",
        labels=["limit", "key"],
    )
    by_limit: dict[str, list[KeyLoad]] = {r.effective.name: [] for r in limits}
    for load in loads:
        by_limit.setdefault(split_key(load.lkey)[0], []).append(load)
    for name, keys in sorted(by_limit.items()):
        keys.sort(key=lambda k: (-k.running, -k.waiting, k.lkey))
        for k in keys[:TOP_KEYS]:
            label = split_key(k.lkey)[1]
            running.add_metric([name, label], k.running)
            waiting.add_metric([name, label], k.waiting)
        rest = keys[TOP_KEYS:]
        if rest:
            running.add_metric([name, "(other)"], sum(k.running for k in rest))
            waiting.add_metric([name, "(other)"], sum(k.waiting for k in rest))
    yield from (running, waiting)


def _worker_metrics(workers: list[WorkerRow], lease: float) -> Iterator[Metric]:
    alive = sum(1 for w in workers if worker_alive(w, lease))
    yield GaugeMetricFamily(
        "onthedot_workers_alive", "Workers heartbeating within the lease.", value=alive
    )
    yield GaugeMetricFamily(
        "onthedot_workers_stale", "Registered workers past the lease.", value=len(workers) - alive
    )


def _schedule_metrics(
    views: list[ScheduleView], now: datetime, late_after: float
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
    paused = late = invalid = missed_all = 0
    for view in views:
        status = view["status"]
        invalid += status == "invalid"
        if status in ("pending", "removed") or view["cursor"] is None:
            continue  # no ledger row yet, or removed
        paused += status == "paused"
        late += is_late(view, now, late_after)
        missed_all += view["missed"]
        lag.add_metric([view["key"]], overdue(view, now))
        missed.add_metric([view["key"]], view["missed"])
        coalesced.add_metric([view["key"]], view["coalesced"])
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
        "onthedot_schedules_invalid", "Schedules failing validation.", value=invalid
    )
    yield CounterMetricFamily(
        "onthedot_schedules_missed", "Slots missed by all schedules.", value=missed_all
    )
