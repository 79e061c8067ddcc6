"""`/` (the overview) and `/metrics` (Prometheus)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from onthedot.web.charts import Bucket, buckets, throughput
from onthedot.web.handlers import Page, page
from onthedot.web.health import Health

MINUTE, HOUR = 60, 3600


@page
def overview(pg: Page) -> Response:
    health = Health.read(pg.app, pg.now, pg.web.late_after)
    # The last day by minute serves both charts (read incrementally: see throughput.py).
    counts = pg.web.throughput.counts(pg.app.operations, pg.now)
    last_hour = buckets(counts, end=pg.now, size=MINUTE, n=60)
    last_day = buckets(counts, end=pg.now, size=HOUR, n=24)
    return pg.render(
        "overview.html",
        health=health,
        summary=pg.app.health.summary(),
        hour_chart=throughput(last_hour, label="Jobs finished per minute, last hour"),
        day_chart=throughput(last_day, label="Jobs finished per hour, last 24 hours"),
        hour_total=_sums(last_hour),
        day_total=_sums(last_day),
    )


def _sums(data: list[Bucket]) -> dict[str, int]:
    return {
        "succeeded": sum(b.succeeded for b in data),
        "failed": sum(b.failed for b in data),
        "cancelled": sum(b.cancelled for b in data),
    }


@page
def metrics(pg: Page) -> Response:
    """The one exposition (observability/metrics.py): the database gauges, schedule health,
    and the event counters of this process."""
    from onthedot.observability import metrics as prom

    body = prom.render(pg.app, late_after=pg.web.late_after)
    return Response(body, media_type=prom.CONTENT_TYPE)


routes = [
    Route("/", overview, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]
