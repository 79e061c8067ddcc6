"""What a burst worker leaves behind that it cannot run: ready jobs in its queues whose names
its app does not register. "Queues empty" would be untrue while they wait, so the worker names
them as it stops."""

from __future__ import annotations

from collections.abc import Sequence

import click

from onthedot.app import App
from onthedot.domain.errors import OnthedotError

EMPTY = "burst: queues empty"  # the reason Worker gives when its burst found nothing to claim


def burst_reason(app: App, queues: Sequence[str], reason: str) -> str:
    """The stop reason to say: `reason`, or, when ready jobs of unknown names wait in
    `queues`, `burst: no job it knows is ready` after one `warning:` line per queue."""
    if reason != EMPTY:
        return reason
    try:
        unknown = app.unknown_ready(queues)
    except OnthedotError:  # the database went away as the burst ended: nothing more to say
        return reason
    for found in unknown:
        click.echo(f"warning: {found.message()}", err=True)
    return "burst: no job it knows is ready" if unknown else reason
