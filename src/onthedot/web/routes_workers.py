"""`/workers` (alive and stale, heartbeat age, running jobs) and `/queues` (depth, pause and
resume)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from onthedot.web.forms import BadInput, text
from onthedot.web.handlers import Page, action, page
from onthedot.web.health import Health


@page
def workers(pg: Page) -> Response:
    found = pg.app.operations.workers()
    health = Health(
        queues=[], workers=found, schedules=[], lease=pg.app.lease, late_after=0, now=pg.now
    )
    return pg.render("workers.html", health=health)


@page
def queues(pg: Page) -> Response:
    return pg.render("queues.html", queues=pg.app.queue_stats())


def _queue(pg: Page) -> str:
    name = text(pg.request.path_params.get("queue") or pg.form.get("queue"), "queue")
    if name is None:
        raise BadInput("queue is required")
    if len(name) > 100 or "," in name:
        raise BadInput("a queue name has 1-100 characters and no commas")
    return name


@action
def queue_pause(pg: Page) -> Response:
    name = _queue(pg)
    pg.app.operations.set_queue_paused(name, True, pg.actor)
    return pg.redirect("/queues", f"queue {name} paused: workers stop claiming its jobs")


@action
def queue_resume(pg: Page) -> Response:
    name = _queue(pg)
    pg.app.operations.set_queue_paused(name, False, pg.actor)
    return pg.redirect("/queues", f"queue {name} resumed")


routes = [
    Route("/workers", workers, methods=["GET"]),
    Route("/queues", queues, methods=["GET"]),
    Route("/queues/pause", queue_pause, methods=["POST"]),
    Route("/queues/{queue:path}/pause", queue_pause, methods=["POST"]),
    Route("/queues/{queue:path}/resume", queue_resume, methods=["POST"]),
]
