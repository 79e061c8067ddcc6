"""`onthedot worker --metrics-port`: the worker's metrics and probes served over HTTP (see
`probes.py` for the routes). Needs the `onthedot[prometheus]` extra."""

from __future__ import annotations

from typing import Protocol

from onthedot.commandline import CommandLine
from onthedot.domain.errors import OnthedotError
from onthedot.observability import metrics
from onthedot.observability.metrics_db import MetricsApp
from onthedot.observability.probes import TEXT, Answer, HeartbeatWatch, ProbeServer, ok_or


class ServedApp(MetricsApp, Protocol):
    commands: CommandLine  # where the hint says how to migrate


def readiness(app: ServedApp) -> str | None:
    """Why the database is not ready for this worker, or None."""
    try:
        app.operations.ping(check_schema=False)
        current, latest = app.operations.schema_version()
    except (OnthedotError, OSError) as exc:
        text = str(exc).strip().splitlines()
        return f"database unavailable: {text[0] if text else type(exc).__name__}"
    if current != latest:
        return (
            f"schema at version {current}, this onthedot needs {latest}: "
            f"run `{app.commands.migrate}`"
        )
    return None


def serve_worker(
    app: ServedApp,
    worker_id: str,
    *,
    host: str = "127.0.0.1",
    port: int = 9464,
    token: str | None = None,
) -> ProbeServer:
    """Instrument `app` (event metrics) and serve /metrics, /healthz and /readyz for the worker
    `worker_id` on host:port; started (a daemon thread)."""
    metrics.instrument(app)
    watch = HeartbeatWatch(app.events, worker_id, app.lease)

    def scrape() -> Answer:
        return 200, metrics.render(app), metrics.CONTENT_TYPE

    routes = {
        "/metrics": scrape,
        "/healthz": lambda: ok_or(watch.problem()),
        "/readyz": lambda: ok_or(readiness(app)),
        "/": lambda: (200, b"onthedot worker: /metrics /healthz /readyz\n", TEXT),
    }
    return ProbeServer(host, port, routes, token=token).start()
