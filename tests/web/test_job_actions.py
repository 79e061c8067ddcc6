"""Job actions over HTTP: retry, cancel, delete (a redirect, or a row for htmx) and the bulk
actions on everything matching a filter, on SQLite and PostgreSQL."""

from __future__ import annotations

from onthedot import App, JobFilter, JobState
from onthedot.testing import drain
from tests.web.helpers import TestClient, flashes, post


def _state(app: App, job_id: int) -> JobState:
    job = app.get_job(job_id)
    assert job is not None
    return job.state


def test_retry_a_failed_job(app: App, client: TestClient) -> None:
    job_id = app.enqueue("explode", "once")
    drain(app)
    assert _state(app, job_id) is JobState.FAILED
    page = post(client, f"/jobs/{job_id}/retry", follow=False)
    assert page.status_code == 303 and page.headers["location"] == f"/jobs/{job_id}"
    assert _state(app, job_id) is JobState.QUEUED
    shown = client.get(page.headers["location"])
    assert ("ok", f"job {job_id} queued again") in flashes(shown.text)
    assert flashes(client.get("/jobs").text) == []  # a flash is shown once


def test_refused_action_is_a_flash_not_an_error(app: App, client: TestClient) -> None:
    job_id = app.enqueue("echo", 1)
    page = post(client, f"/jobs/{job_id}/retry")
    assert page.status_code == 200
    [(kind, message)] = flashes(page.text)
    assert kind == "error" and "only failed or cancelled jobs can be retried" in message
    assert _state(app, job_id) is JobState.QUEUED


def test_cancel_then_delete(app: App, client: TestClient) -> None:
    job_id = app.enqueue("echo", 1)
    page = post(client, f"/jobs/{job_id}/cancel")
    assert ("ok", f"job {job_id} cancelled") in flashes(page.text)
    assert _state(app, job_id) is JobState.CANCELLED
    page = post(client, f"/jobs/{job_id}/delete", follow=False)
    assert page.headers["location"] == "/jobs"  # its own page is gone
    assert app.get_job(job_id) is None
    assert post(client, f"/jobs/{job_id}/delete").status_code == 404


def test_cancel_a_running_job_requests_cancellation(app: App, client: TestClient) -> None:
    job_id = app.enqueue("echo", 1)
    from onthedot.storage.interface import WorkerInfo

    app.storage.register_worker(WorkerInfo("w", "h", 1, ("default",), 1))
    [claimed] = app.storage.claim_jobs("w", "default", 1, 30.0)
    assert claimed.id == job_id
    page = post(client, f"/jobs/{job_id}/cancel")
    assert ("ok", f"job {job_id} is running: cancellation requested") in flashes(page.text)
    job = app.get_job(job_id)
    assert job is not None and job.cancel_requested and job.state is JobState.RUNNING
    refused = post(client, f"/jobs/{job_id}/delete")
    assert flashes(refused.text)[0][0] == "error" and app.get_job(job_id) is not None


def test_htmx_row_action_returns_the_row_and_the_flash(app: App, client: TestClient) -> None:
    job_id = app.enqueue("explode", "x")
    drain(app)
    page = post(client, f"/jobs/{job_id}/retry", {"fragment": "row", "next": "/jobs"}, htmx=True)
    assert page.status_code == 200
    assert page.text.lstrip().startswith(f'<tr id="job-{job_id}">')
    assert '<span class="badge s-queued">queued</span>' in page.text
    assert '<div id="flash" hx-swap-oob="true"' in page.text
    assert "<html" not in page.text
    gone = post(client, f"/jobs/{job_id}/delete", {"fragment": "row"}, htmx=True)
    assert "<tr" not in gone.text.split("<template>")[0] and "deleted" in gone.text
    refused = post(client, f"/jobs/{job_id}/delete", {"fragment": "row"}, htmx=True)
    assert refused.status_code == 404


def test_htmx_refusal_swaps_only_the_flash(app: App, client: TestClient) -> None:
    job_id = app.enqueue("echo", 1)
    page = post(client, f"/jobs/{job_id}/retry", {"fragment": "row"}, htmx=True)
    assert page.headers["HX-Retarget"] == "#flash"
    assert page.text.lstrip().startswith('<div id="flash"')
    assert "only failed or cancelled jobs" in page.text


def test_bulk_retry_asks_for_confirmation_then_acts_on_the_filter(
    app: App, client: TestClient
) -> None:
    failed = [app.enqueue("explode", f"f{i}") for i in range(3)]
    drain(app)
    queued = app.enqueue("echo", "stays")
    confirm = post(client, "/jobs/bulk/retry", {"state": "failed"})
    assert confirm.status_code == 200
    assert "<strong>3</strong> job(s) match" in confirm.text
    assert all(_state(app, j) is JobState.FAILED for j in failed)  # nothing done yet
    done = post(client, "/jobs/bulk/retry", {"state": "failed", "confirm": "1"}, follow=False)
    assert done.headers["location"] == "/jobs?state=failed"
    assert ("ok", "3 job(s) queued again") in flashes(client.get(done.headers["location"]).text)
    assert all(_state(app, j) is JobState.QUEUED for j in failed)
    assert _state(app, queued) is JobState.QUEUED


def test_bulk_cancel_and_delete_by_name_and_search(app: App, client: TestClient) -> None:
    keep = app.enqueue("echo", "keep-me")
    drop = [app.enqueue("echo", f"drop-{i}") for i in range(4)]
    post(client, "/jobs/bulk/cancel", {"search": "drop-", "confirm": "1"})
    assert all(_state(app, j) is JobState.CANCELLED for j in drop)
    assert _state(app, keep) is JobState.QUEUED
    page = post(client, "/jobs/bulk/delete", {"name": "echo", "state": "cancelled", "confirm": "1"})
    assert ("ok", "4 job(s) deleted") in flashes(page.text)
    assert [j.id for j in app.list_jobs(JobFilter())] == [keep]


def test_bulk_unknown_verb_and_bad_filter(app: App, client: TestClient) -> None:
    assert post(client, "/jobs/bulk/explode", {"confirm": "1"}).status_code == 404
    assert post(client, "/jobs/bulk/retry", {"state": "sideways"}).status_code == 400
