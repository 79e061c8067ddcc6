"""`/jobs` (filter, keyset pages, bulk actions), `/jobs/{id}` and its actions."""

from __future__ import annotations

from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from onthedot.domain.jobs import Job, JobAction, JobState
from onthedot.web.forms import PAGE_SIZE, JobQuery, NotFound, flag, local_path
from onthedot.web.forms import job_id as parse_job_id
from onthedot.web.handlers import Page, action, page

BULK_ACTIONS = {a.value: a.value.capitalize() for a in JobAction}  # verb -> button label


@page
def jobs_list(pg: Page) -> Response:
    query = JobQuery.parse(pg.query)
    found = pg.app.list_jobs(query.filter(limit=PAGE_SIZE + 1))
    more = len(found) > PAGE_SIZE
    found = found[:PAGE_SIZE]
    older = query.query(before=found[-1].id) if more and found else None
    # Suggestions come from the registry, not the table: no scan of a million rows.
    queues = sorted({jf.queue for jf in pg.app.jobs.values()})
    return pg.render(
        "jobs.html",
        jobs=found,
        query=query,
        older=older,
        queues=queues,
        states=[s.value for s in JobState],
        names=sorted(pg.app.jobs),
        bulk=BULK_ACTIONS,
    )


@page
def jobs_count(pg: Page) -> Response:
    """How many jobs match (loaded after the page, so a slow count never delays it)."""
    query = JobQuery.parse(pg.query)
    return HTMLResponse(f"{pg.app.operations.tally_jobs(query.filter(page=False))} matching")


@page
def job_page(pg: Page) -> Response:
    job = _job(pg)
    # What holds it (docs/limits.md): not due, its queue paused, no live worker, a limit.
    waiting = pg.app.explain_job(job.id) if job.state.value == "queued" else []
    return pg.render("job.html", job=job, waiting=waiting)


def _job(pg: Page) -> Job:
    job_id = parse_job_id(pg.request.path_params["job_id"])
    job = pg.app.get_job(job_id)
    if job is None:
        raise NotFound(f"no job with id {job_id}")
    return job


def _after(pg: Page, job_id: int, message: str, *, removed: bool = False) -> Response:
    """A row of the jobs list (htmx) or a redirect with the message."""
    if pg.htmx and pg.form.get("fragment") == "row":
        pg.notify(message)
        job = None if removed else pg.app.get_job(job_id)
        return pg.render("_job_row.html", job=job, oob_flash=True, row_next=pg.back)
    return pg.redirect("/jobs" if removed and pg.back.startswith("/jobs/") else pg.back, message)


@action
def job_retry(pg: Page) -> Response:
    job_id = parse_job_id(pg.request.path_params["job_id"])
    pg.back = local_path(pg.form.get("next"), f"/jobs/{job_id}")
    job = pg.app.retry_job(job_id)
    return _after(pg, job_id, f"job {job.id} queued again")


@action
def job_cancel(pg: Page) -> Response:
    job_id = parse_job_id(pg.request.path_params["job_id"])
    pg.back = local_path(pg.form.get("next"), f"/jobs/{job_id}")
    job = pg.app.cancel_job(job_id)
    if job.state is JobState.RUNNING:
        return _after(pg, job_id, f"job {job.id} is running: cancellation requested")
    return _after(pg, job_id, f"job {job.id} cancelled")


@action
def job_delete(pg: Page) -> Response:
    job_id = parse_job_id(pg.request.path_params["job_id"])
    pg.back = local_path(pg.form.get("next"), f"/jobs/{job_id}")
    if not pg.app.delete_job(job_id):
        raise NotFound(f"no job with id {job_id}")
    return _after(pg, job_id, f"job {job_id} deleted", removed=True)


@action
def jobs_bulk(pg: Page) -> Response:
    """Bulk retry/cancel/delete of every job matching the filter: first a confirmation page
    with the count, then the action itself."""
    verb = pg.request.path_params["verb"]
    if verb not in BULK_ACTIONS:
        raise NotFound(f"no bulk action {verb!r}: use retry, cancel or delete")
    act = JobAction(verb)
    query = JobQuery.parse(pg.form)
    if not flag(pg.form.get("confirm")):
        matching = pg.app.operations.tally_jobs(query.filter(page=False))
        return pg.render(
            "bulk_confirm.html",
            verb=verb,
            label=BULK_ACTIONS[verb],
            eligible=act.eligible,
            query=query,
            matching=matching,
        )
    n = pg.app.operations.act_on_all(act, query.filter(page=False))
    done = act.done
    target = "/jobs" + (f"?{query.query()}" if not query.empty else "")
    return pg.redirect(target, f"{n} job(s) {done}")


routes = [
    Route("/jobs", jobs_list, methods=["GET"]),
    Route("/jobs/count", jobs_count, methods=["GET"]),
    Route("/jobs/bulk/{verb}", jobs_bulk, methods=["POST"]),
    Route("/jobs/{job_id}", job_page, methods=["GET"]),
    Route("/jobs/{job_id}/retry", job_retry, methods=["POST"]),
    Route("/jobs/{job_id}/cancel", job_cancel, methods=["POST"]),
    Route("/jobs/{job_id}/delete", job_delete, methods=["POST"]),
]
