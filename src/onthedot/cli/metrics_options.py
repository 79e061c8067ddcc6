"""`onthedot worker --metrics-port/--metrics-host`: checked before any worker starts (an error
here is one line and a non-zero exit, never a child restarted in a loop), and the endpoint of a
worker run alone (`--processes 1`); the supervisor's endpoint is in `supervise.py`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from onthedot.addresses import is_loopback
from onthedot.app import App

if TYPE_CHECKING:
    from onthedot.observability.probes import ProbeServer

ENV_METRICS_TOKEN = "ONTHEDOT_WEB_METRICS_TOKEN"  # the same token as the web admin's /metrics


def metrics_token(host: str, port: int | None) -> str | None:
    """The bearer token /metrics asks for (None: none); raises a one-line error when the
    endpoint cannot be served as asked."""
    if port is None:
        return None
    token = os.environ.get(ENV_METRICS_TOKEN) or None
    if token is None and not is_loopback(host):
        raise click.ClickException(
            f"--metrics-host {host} is reachable from other machines: set "
            f"{ENV_METRICS_TOKEN} (the bearer token Prometheus sends) to serve /metrics "
            "there, or keep the default --metrics-host 127.0.0.1"
        )
    try:
        import prometheus_client  # noqa: F401 - only whether it imports
    except ImportError as exc:
        raise click.ClickException(
            f"--metrics-port needs prometheus_client ({exc}): pip install 'onthedot[prometheus]'"
        ) from None
    return token


def serve_alone(app: App, worker_id: str, host: str, port: int) -> ProbeServer:
    """The endpoint of a worker run alone, started."""
    from onthedot.observability.serve import serve_worker

    try:
        server = serve_worker(app, worker_id, host=host, port=port, token=metrics_token(host, port))
    except OSError as exc:
        raise click.ClickException(f"--metrics-port {port}: {exc}") from None
    shown = f"[{host}]" if ":" in host else host
    from onthedot.cli.output import say

    say(f"metrics on http://{shown}:{server.port}/metrics")
    return server
