"""Prometheus metrics (the `onthedot[prometheus]` extra). Two sources, each where its truth is:

- counters and histograms fed by the App's events (`EventMetrics`): jobs enqueued, started,
  finished by state, retried, rescued, their run time and their wait from ready to start. They
  count what this process saw (a worker's jobs), as Prometheus counters do;
- gauges read from the database at scrape time (`DatabaseCollector`, see `metrics_db.py`):
  ready and running jobs per queue, the oldest ready job's age, workers alive, schedule lag and
  missed / coalesced totals. Every process reports the same values there.

`instrument(app)` subscribes the event metrics to the app (once) and returns them; `render(app)`
is what `/metrics` serves (the web admin's, and `onthedot worker --metrics-port`'s).
Importing this module imports prometheus_client; nothing else in onthedot does.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from onthedot.observability.events import (
    DatabaseError,
    Event,
    JobCancelled,
    JobEnqueued,
    JobFailed,
    JobRescued,
    JobRetried,
    JobStarted,
    JobSucceeded,
    LimitHeld,
    LimitSaturated,
)
from onthedot.observability.metrics_db import DatabaseCollector, MetricsApp

__all__ = ["CONTENT_TYPE", "EventMetrics", "instrument", "render"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
EXTENSION: Final = "prometheus"

# Seconds: from a few milliseconds (a quick job, a hot queue) to an hour (a long batch job).
BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    600.0, 1800.0, 3600.0,
)  # fmt: skip


class EventMetrics:
    """The event-fed counters and histograms, in their own registry (with the database gauges
    of `app` registered beside them)."""

    def __init__(self, app: MetricsApp, late_after: float = 60.0) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        labels = ("job", "queue")
        self.enqueued = Counter(
            "onthedot_jobs_enqueued", "Jobs enqueued by this process.", labels, registry=r
        )
        self.started = Counter(
            "onthedot_jobs_started", "Job attempts started by this process.", labels, registry=r
        )
        self.finished = Counter(
            "onthedot_jobs_finished",
            "Jobs finished for good by this process, by final state.",
            (*labels, "state"),
            registry=r,
        )
        self.retried = Counter(
            "onthedot_jobs_retried",
            "Failed attempts that will run again (after their backoff).",
            labels,
            registry=r,
        )
        self.rescued = Counter(
            "onthedot_jobs_rescued",
            "Jobs of dead workers rescued by this process: requeued, or failed (no attempt left).",
            ("job", "queue", "outcome"),
            registry=r,
        )
        self.duration = Histogram(
            "onthedot_job_duration_seconds",
            "Run time of each attempt, by its outcome.",
            (*labels, "outcome"),
            buckets=BUCKETS,
            registry=r,
        )
        self.wait = Histogram(
            "onthedot_job_wait_seconds",
            "Time from a job's ready instant (its run_at) to the start of its attempt.",
            labels,
            buckets=BUCKETS,
            registry=r,
        )
        self.limit_held = Counter(
            "onthedot_limit_claims_held",
            "Ready jobs a claim of this process left queued because a limit was full.",
            ("limit",),
            registry=r,
        )
        self.limit_saturated = Counter(
            "onthedot_limit_saturated",
            "Limit keys this process's claims filled to their concurrency (at most one a minute "
            "per key).",
            ("limit",),
            registry=r,
        )
        self.database_errors = Counter(
            "onthedot_database_errors",
            "Database errors a worker thread waited out, by where they happened.",
            ("where",),
            registry=r,
        )
        r.register(DatabaseCollector(app, late_after=late_after))
        self._unsubscribe = app.events.subscribe(
            self,
            JobEnqueued,
            JobStarted,
            JobSucceeded,
            JobRetried,
            JobFailed,
            JobCancelled,
            JobRescued,
            DatabaseError,
            LimitHeld,
            LimitSaturated,
        )

    def close(self) -> None:
        """Stop counting (the registry keeps its values)."""
        self._unsubscribe()

    def __call__(self, event: Event) -> None:
        if isinstance(event, JobSucceeded):
            self.finished.labels(event.job, event.queue, "succeeded").inc()
            self.duration.labels(event.job, event.queue, "succeeded").observe(event.duration)
        elif isinstance(event, JobStarted):
            self.started.labels(event.job, event.queue).inc()
            if event.waited is not None:
                self.wait.labels(event.job, event.queue).observe(event.waited)
        elif isinstance(event, JobEnqueued):
            self.enqueued.labels(event.job, event.queue).inc()
        elif isinstance(event, JobRetried):
            self.retried.labels(event.job, event.queue).inc()
            if event.duration is not None:
                self.duration.labels(event.job, event.queue, "retried").observe(event.duration)
        elif isinstance(event, JobFailed):
            self.finished.labels(event.job, event.queue, "failed").inc()
            if event.duration is not None:
                self.duration.labels(event.job, event.queue, "failed").observe(event.duration)
        elif isinstance(event, JobCancelled):
            self.finished.labels(event.job, event.queue, "cancelled").inc()
        elif isinstance(event, JobRescued):
            self.rescued.labels(
                event.job, event.queue, "requeued" if event.requeued else "failed"
            ).inc()
        elif isinstance(event, DatabaseError):
            self.database_errors.labels(event.where).inc()
        elif isinstance(event, LimitHeld):
            self.limit_held.labels(event.limit).inc(event.count)
        elif isinstance(event, LimitSaturated):
            self.limit_saturated.labels(event.limit).inc()


def instrument(app: MetricsApp, *, late_after: float = 60.0) -> EventMetrics:
    """Count `app`'s events from now on (idempotent: the second call returns the first's)."""
    found = app.instrumentation.extensions.get(EXTENSION)
    if isinstance(found, EventMetrics):
        return found
    metrics = EventMetrics(app, late_after=late_after)
    app.instrumentation.extensions[EXTENSION] = metrics
    return metrics


def render(app: MetricsApp, *, late_after: float = 60.0) -> bytes:
    """The text exposition of `app`'s metrics: its event metrics when instrumented, and the
    database gauges in any case."""
    found = app.instrumentation.extensions.get(EXTENSION)
    if isinstance(found, EventMetrics):
        return generate_latest(found.registry)
    registry = CollectorRegistry(auto_describe=True)
    registry.register(DatabaseCollector(app, late_after=late_after))
    return generate_latest(registry)
