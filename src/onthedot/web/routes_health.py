"""`/health`: every schedule's health (last success, lateness, next slot, run times, open
problems with their causes), and `POST /schedules/{key}/expect`: an operator's override of a
schedule's expectations (docs/health.md)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from onthedot.domain.definitions import MAX_KEY_LENGTH
from onthedot.domain.expectations import EXPECTATION_FIELDS
from onthedot.schedules.expectations import UNCHANGED
from onthedot.web.charts import sparkline
from onthedot.web.forms import BadInput, NotFound, flag, key_path, text
from onthedot.web.handlers import Page, action, page


@page
def health(pg: Page) -> Response:
    report = pg.app.health.report()
    sparks = {
        s.key: sparkline(s.durations, label=f"run times of {s.key}") for s in report.schedules
    }
    return pg.render("health.html", report=report, sparks=sparks)


@action
def expect(pg: Page) -> Response:
    """The form's fields: empty leaves an override as it is, `off` turns one off."""
    key = text(pg.request.path_params["key"], "schedule key", max_len=MAX_KEY_LENGTH + 50)
    if key is None:
        raise NotFound("no schedule key given")
    pg.back = key_path(key)
    given = {}
    for name in EXPECTATION_FIELDS:
        value = text(pg.form.get(name), name.replace("_", " "), max_len=2000)
        if value is not None:
            given[name] = None if value.strip().lower() == "off" else value
    clear = flag(pg.form.get("clear"))
    if not given and not clear:
        raise BadInput("nothing to change: give an expectation, or clear them")
    found = pg.app.schedules.expect(
        key,
        **{name: given.get(name, UNCHANGED) for name in EXPECTATION_FIELDS},
        clear=clear,
        note=text(pg.form.get("note"), "note"),
        actor=pg.actor,
    )
    return pg.redirect(key_path(key), f"{key}: {found.describe()}")


routes = [
    Route("/health", health, methods=["GET"]),
    Route("/schedules/{key:path}/expect", expect, methods=["POST"]),
]
