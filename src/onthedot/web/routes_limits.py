"""`/limits` (each limit, its settings and busiest keys) and `POST /limits/{name}/set|reset`:
an operator's override of a limit, audited as `onthedot limits set|reset` (docs/limits.md)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from onthedot.domain.limits import rate_text
from onthedot.web.forms import BadInput, NotFound, text, whole
from onthedot.web.handlers import Page, action, page


@page
def limits(pg: Page) -> Response:
    return pg.render("limits.html", views=pg.app.limits.overview(10), rate_text=rate_text)


def _name(pg: Page) -> str:
    name = text(pg.request.path_params.get("name"), "limit name", max_len=200)
    if name is None:
        raise NotFound("no limit name given")
    return name


@action
def limit_set(pg: Page) -> Response:
    name = _name(pg)
    concurrency = whole(pg.form.get("concurrency"), "concurrency")
    burst = whole(pg.form.get("burst"), "burst")
    try:
        row = pg.app.limits.set(
            name,
            concurrency=concurrency,
            rate=text(pg.form.get("rate"), "rate", max_len=40),
            burst=burst,
            actor=pg.actor,
            note=text(pg.form.get("note"), "note"),
        )
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    e = row.effective
    return pg.redirect(
        "/limits", f"limit {name}: concurrency {e.concurrency}, rate {rate_text(e.rate)}"
    )


@action
def limit_reset(pg: Page) -> Response:
    name = _name(pg)
    try:
        pg.app.limits.reset(name, actor=pg.actor, note=text(pg.form.get("note"), "note"))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    return pg.redirect("/limits", f"limit {name}: back to the code's settings")


routes = [
    Route("/limits", limits, methods=["GET"]),
    Route("/limits/{name:path}/set", limit_set, methods=["POST"]),
    Route("/limits/{name:path}/reset", limit_reset, methods=["POST"]),
]
