"""Schedule health as Prometheus metrics (docs/health.md), from the health report every reader
shares (`app.health.report()`), as plain data that the one `prometheus_client` collector
(`metrics_db.py`) yields on every scrape. prometheus_client is imported only when rendering.

The rules shipped in deploy/prometheus/onthedot-alerts.yml alert on them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from onthedot.domain.watch import ProblemKind

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from onthedot.schedules.health import HealthReport


@dataclass(frozen=True, slots=True)
class Family:
    """One gauge: its name, help, label names and samples (label values, value)."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)


def health_families(report: HealthReport) -> list[Family]:
    """The gauges of schedule health: per schedule (last success, lateness, grace, period,
    run times), per open problem, and open problems by kind."""
    success = Family(
        "onthedot_schedule_last_success_timestamp_seconds",
        "When the job of a schedule's newest succeeded slot finished (Unix time; absent "
        "before its first success).",
        ("schedule",),
    )
    lateness = Family(
        "onthedot_schedule_lateness_seconds",
        "How far past its slot the oldest due slot of a schedule that has not started is, "
        "once it is late (0 when on time).",
        ("schedule",),
    )
    grace = Family(
        "onthedot_schedule_grace_seconds",
        "How long after its slot a schedule's job may start.",
        ("schedule",),
    )
    period = Family(
        "onthedot_schedule_period_seconds",
        "The shortest nominal gap between two slots of a schedule.",
        ("schedule",),
    )
    runtime = Family(
        "onthedot_schedule_run_seconds",
        "Run times of a schedule's recent successful jobs: p50, p95 and the last.",
        ("schedule", "stat"),
    )
    problem = Family(
        "onthedot_schedule_problem",
        "1 for each open problem of a schedule, with its kind and cause.",
        ("schedule", "kind", "cause"),
    )
    by_kind = Family(
        "onthedot_schedule_problems",
        "Open schedule problems, by kind.",
        ("kind",),
    )
    counts = dict.fromkeys((str(k) for k in ProblemKind), 0)
    for s in report.schedules:
        key = (s.key,)
        if s.last_success_at is not None:
            success.samples.append((key, s.last_success_at.timestamp()))
        if s.status != "unwatched":
            lateness.samples.append((key, s.lateness))
        if s.grace is not None:
            grace.samples.append((key, s.grace.total_seconds()))
        if s.period is not None:
            period.samples.append((key, s.period.total_seconds()))
        for stat, value in (("p50", s.p50), ("p95", s.p95), ("last", s.last)):
            if value is not None:
                runtime.samples.append(((s.key, stat), value))
        for p in s.problems:
            problem.samples.append(((s.key, str(p.kind), p.cause), 1.0))
            counts[str(p.kind)] += 1
    by_kind.samples.extend(((kind,), float(n)) for kind, n in counts.items())
    return [success, lateness, grace, period, runtime, problem, by_kind]


def gauges(families: list[Family]) -> list[Metric]:
    """The families as prometheus_client gauge families (the collector yields them)."""
    from prometheus_client.core import GaugeMetricFamily

    out: list[Metric] = []
    for family in families:
        gauge = GaugeMetricFamily(family.name, family.help, labels=list(family.labels))
        for values, value in family.samples:
            gauge.add_metric(list(values), value)
        out.append(gauge)
    return out


def text_exposition(families: list[Family]) -> list[str]:
    """The families in the Prometheus text format (version 0.0.4), one line each, rendered by
    prometheus_client as `/metrics` renders them."""
    from prometheus_client import CollectorRegistry, generate_latest

    class Fixed:
        def collect(self) -> list[Metric]:
            return gauges(families)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed())
    return generate_latest(registry).decode().splitlines()
