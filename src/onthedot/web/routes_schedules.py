"""`/schedules` and `/schedules/{key}`: every declared and runtime schedule, its history and
audit log, and the operator controls (pause, resume, skip, run now, backfill, create, edit,
delete), each a POST to the schedule's URL plus the verb."""

from __future__ import annotations

import json
from datetime import datetime
from zoneinfo import ZoneInfo

from markupsafe import Markup
from starlette.responses import Response
from starlette.routing import Route

from onthedot.domain.definitions import MAX_KEY_LENGTH, ScheduleDef
from onthedot.domain.errors import ScheduleError
from onthedot.domain.jobs import JobFilter
from onthedot.schedules.backfill import BACKFILL_BOUND
from onthedot.schedules.health import ScheduleHealth
from onthedot.schedules.views import ScheduleView, is_late
from onthedot.web.charts import sparkline, timeline
from onthedot.web.forms import (
    BadInput,
    NotFound,
    flag,
    instant,
    key_path,
    local_path,
    schedule_fields,
    text,
)
from onthedot.web.handlers import Page, action, page

NEXT_SLOTS = 5


def _key(pg: Page) -> str:
    key = text(pg.request.path_params["key"], "schedule key", max_len=MAX_KEY_LENGTH + 50)
    if key is None:
        raise NotFound("no schedule key given")
    return key


def _view(pg: Page, key: str) -> ScheduleView:
    """The schedule as `schedules list` shows it; from the tolerant listing when the code
    declares an invalid schedule (then `get` refuses)."""
    try:
        found: ScheduleView | None = pg.app.schedules.get(key)
    except ScheduleError:
        found = None
    if found is not None and found["status"] != "invalid":
        return found
    for view in pg.app.schedules.views():  # it carries the problems of an invalid schedule
        if view["key"] == key:
            return view
    raise NotFound(f"no schedule with key {key!r}")


def _definition(pg: Page, key: str) -> ScheduleDef | None:
    try:
        return pg.app.schedules.get_definition(key)
    except ScheduleError:
        return None


def _zone(view: ScheduleView) -> ZoneInfo:
    try:
        return ZoneInfo(view.get("timezone") or "UTC")
    except (ValueError, KeyError, OSError):
        return ZoneInfo("UTC")


@page
def schedules_list(pg: Page) -> Response:
    views = pg.app.schedules.views()
    return pg.render(
        "schedules.html",
        views=views,
        late={v["key"] for v in views if is_late(v, pg.now, pg.web.late_after)},
        runtime_jobs=pg.app.schedules.runtime_jobs(),
    )


@page
def schedule_page(pg: Page) -> Response:
    key = _key(pg)
    view = _view(pg, key)
    sched = _definition(pg, key)
    nexts: list[datetime] = []
    if sched is not None and view["status"] not in ("removed",):
        cursor = instant(view.get("cursor"), "cursor", ZoneInfo("UTC"), pg.now)
        t = max(pg.now, cursor) if cursor else pg.now
        for _ in range(NEXT_SLOTS):
            n = sched.spec.next_after(t, sched.tz)
            if n is None:
                break
            nexts.append(n)
            t = n
    history = pg.app.operations.slot_history(key, limit=50)
    try:
        skipped = pg.app.schedules.skipped(key)
    except ScheduleError:
        skipped = []
    health, spark = _health(pg, key)
    return pg.render(
        "schedule.html",
        view=view,
        sched=sched,
        nexts=nexts,
        history=history,
        timeline=timeline(history, pg.now),
        audit=pg.app.schedules.audit(key, limit=50),
        skipped=skipped,
        jobs=pg.app.list_jobs(JobFilter(schedule_key=key, limit=10)),
        late=is_late(view, pg.now, pg.web.late_after),
        runtime_jobs=pg.app.schedules.runtime_jobs(),
        edit_values=_edit_values(view, sched),
        health=health,
        spark=spark,
    )


def _health(pg: Page, key: str) -> tuple[ScheduleHealth | None, Markup]:
    """The schedule's health (docs/health.md) and its run times' sparkline."""
    found = pg.app.health.report([key]).schedules
    if not found:
        return None, Markup("")
    return found[0], sparkline(found[0].durations, label=f"run times of {key}")


def _edit_values(view: ScheduleView, sched: ScheduleDef | None) -> dict[str, object]:
    """The edit form's initial values: the stored definition of a runtime schedule."""
    values: dict[str, object] = {
        "spec": view.get("spec") or "",
        "job": view.get("job") or "",
        "timezone": view.get("timezone") or "",
    }
    if sched is not None:
        definition = sched.definition_json()
        values.update(
            catchup=sched.catchup,
            catchup_window=definition["catchup_window"],
            overlap=sched.overlap,
            jitter=definition["jitter"] or "",
            queue=sched.queue or "",
            priority=sched.priority,
            args_json=json.dumps(list(sched.args)),
            kwargs_json=json.dumps(sched.kwargs),
        )
    return values


def _done(pg: Page, key: str, message: str) -> Response:
    """The schedule's row of the list (htmx) or a redirect with the message."""
    if pg.htmx and pg.form.get("fragment") == "row":
        pg.notify(message)
        view = _view(pg, key)
        return pg.render(
            "_schedule_row.html",
            v=view,
            late={key} if is_late(view, pg.now, pg.web.late_after) else set(),
            oob_flash=True,
        )
    return pg.redirect(pg.back, message)


def _start(pg: Page) -> str:
    key = _key(pg)
    pg.back = local_path(pg.form.get("next"), key_path(key))
    return key


def _note(pg: Page) -> str | None:
    return text(pg.form.get("note"), "note")


@action
def pause(pg: Page) -> Response:
    key = _start(pg)
    until = instant(pg.form.get("until"), "until", _zone(_view(pg, key)), pg.now)
    pg.app.schedules.pause(key, until=until, note=_note(pg), actor=pg.actor)
    return _done(pg, key, f"paused {key}" + (f" until {until:%Y-%m-%d %H:%M:%SZ}" if until else ""))


@action
def resume(pg: Page) -> Response:
    key = _start(pg)
    catchup = flag(pg.form.get("catchup"))
    pg.app.schedules.resume(key, catchup=catchup, note=_note(pg), actor=pg.actor)
    return _done(pg, key, f"resumed {key}" + (" with catch-up" if catchup else ""))


@action
def skip(pg: Page) -> Response:
    key = _start(pg)
    slot = instant(pg.form.get("slot"), "slot", _zone(_view(pg, key)), pg.now)
    done = pg.app.schedules.skip(key, slot, note=_note(pg), actor=pg.actor)
    return _done(pg, key, f"skipped the slot {done:%Y-%m-%d %H:%M:%SZ} of {key}")


@action
def unskip(pg: Page) -> Response:
    key = _start(pg)
    slot = instant(pg.form.get("slot"), "slot", ZoneInfo("UTC"), pg.now)
    if slot is None:
        raise BadInput("slot is required")
    pg.app.schedules.unskip(key, slot, note=_note(pg), actor=pg.actor)
    return _done(pg, key, f"the slot {slot:%Y-%m-%d %H:%M:%SZ} of {key} runs again")


@action
def trigger(pg: Page) -> Response:
    key = _start(pg)
    job_id = pg.app.schedules.trigger(key, note=_note(pg), actor=pg.actor)
    return _done(pg, key, f"{key}: enqueued job {job_id} now")


@action
def reset(pg: Page) -> Response:
    key = _start(pg)
    pg.app.schedules.reset(key, note=_note(pg), actor=pg.actor)
    return _done(pg, key, f"{key} reset to what the code says")


@action
def backfill(pg: Page) -> Response:
    """Without `run`, a preview of exactly the slots that would be enqueued."""
    key = _start(pg)
    view = _view(pg, key)
    zone = _zone(view)
    start = instant(pg.form.get("start"), "start", zone, pg.now)
    end = instant(pg.form.get("end"), "end", zone, pg.now)
    if start is None or end is None:
        raise BadInput("backfill needs a start and an end")
    run = flag(pg.form.get("run"))
    result = pg.app.schedules.backfill(
        key,
        start,
        end,
        dry_run=not run,
        force=flag(pg.form.get("force")),
        note=_note(pg),
        actor=pg.actor,
    )
    if not run:
        return pg.render(
            "backfill.html", view=view, result=result, note=_note(pg), bound=BACKFILL_BOUND
        )
    return pg.redirect(
        pg.back, f"{key}: backfilled {len(result.enqueued)} slot(s); {len(result.already)} kept"
    )


@action
def create(pg: Page) -> Response:
    key = text(pg.form.get("key"), "key", max_len=MAX_KEY_LENGTH)
    if key is None:
        raise BadInput("key is required")
    pg.back = local_path(pg.form.get("next"), "/schedules")
    fields = schedule_fields(pg.form, creating=True)
    spec, job = fields.pop("spec"), fields.pop("job")
    args, kwargs = fields.pop("args", None), fields.pop("kwargs", None)
    pg.app.schedules.create(key, spec, job, args, kwargs, actor=pg.actor, **fields)
    return pg.redirect(key_path(key), f"created {key}")


@action
def update(pg: Page) -> Response:
    key = _start(pg)
    fields = schedule_fields(pg.form, creating=False)
    if not fields:
        raise BadInput("nothing to change")
    pg.app.schedules.update(key, actor=pg.actor, **fields)
    return pg.redirect(key_path(key), f"updated {key}")


@action
def delete(pg: Page) -> Response:
    key = _start(pg)
    if not flag(pg.form.get("confirm")):
        raise BadInput("tick the confirmation box to delete a schedule")
    n = pg.app.schedules.delete(key, keep_jobs=flag(pg.form.get("keep_jobs")), actor=pg.actor)
    return pg.redirect("/schedules", f"deleted {key}; cancelled {n} queued job(s)")


VERBS = {
    "pause": pause,
    "resume": resume,
    "skip": skip,
    "unskip": unskip,
    "trigger": trigger,
    "reset": reset,
    "backfill": backfill,
    "update": update,
    "delete": delete,
}

routes = [
    Route("/schedules", schedules_list, methods=["GET"]),
    Route("/schedules/create", create, methods=["POST"]),
    *(Route(f"/schedules/{{key:path}}/{verb}", fn, methods=["POST"]) for verb, fn in VERBS.items()),
    Route("/schedules/{key:path}", schedule_page, methods=["GET"]),
]
