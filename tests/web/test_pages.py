"""Every page of the web admin renders on SQLite and PostgreSQL and shows what the App says."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from onthedot import App, JobFilter
from onthedot.storage.interface import WorkerInfo
from onthedot.testing import drain, tick
from onthedot.web import asgi
from onthedot.web.security import Credentials
from tests.web.helpers import TestClient


def _ids(text: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr id="job-(\d+)"', text)]


def test_overview_counts_jobs_by_state_and_queue(app: App, client: TestClient) -> None:
    app.enqueue("echo", 1)
    app.resolve("echo").enqueue_with([2], queue="mail")
    app.enqueue("explode", "x")
    drain(app, queues=["default"])
    page = client.get("/")
    assert page.status_code == 200
    assert "<h1>Overview</h1>" in page.text
    stats = {s.queue: s for s in app.queue_stats()}
    assert stats["default"].succeeded == 1 and stats["default"].failed == 1
    assert stats["mail"].queued == 1
    assert 'href="/jobs?queue=mail&amp;state=queued">1</a>' in page.text
    assert 'href="/jobs?queue=default&amp;state=failed">1</a>' in page.text
    # Throughput charts: inline SVG with a tooltip per bucket, drawn on the server.
    assert page.text.count('<svg class="chart"') == 2
    assert "1 succeeded, 1 failed" in page.text
    assert "waiting to be claimed" in page.text


def test_overview_shows_workers_and_schedules_needing_a_look(app: App, client: TestClient) -> None:
    app.schedule("late-one", "* * * * *", "echo")
    app.schedule("held", "* * * * *", "echo")
    long_ago = datetime.now(UTC) - timedelta(hours=3)
    tick(app, long_ago)  # first sight in the past: nobody ticked it since, so it is late
    app.schedules.pause("held", note="maintenance", actor="ops")
    app.storage.register_worker(WorkerInfo("w-alive", "host-a", 11, ("default",), 2))
    app.storage.at(long_ago).register_worker(WorkerInfo("w-gone", "host-b", 12, ("default",), 2))
    page = client.get("/").text
    assert '<span class="badge st-late">late</span>' in page
    assert "paused by ops" in page and "maintenance" in page
    assert re.search(r"Workers alive</div><div class=\"value\">1</div>", page)
    assert "1 stale" in page


def test_jobs_page_keyset_pagination_covers_every_job_once(app: App, client: TestClient) -> None:
    ids = app.resolve("echo").enqueue_many([[i] for i in range(123)])
    seen: list[int] = []
    url = "/jobs"
    pages = 0
    while url:
        page = client.get(url)
        assert page.status_code == 200
        seen += _ids(page.text)
        found = re.search(r'href="(/jobs\?[^"]*before=\d+[^"]*)" rel="next"', page.text)
        url = found.group(1).replace("&amp;", "&") if found else ""
        pages += 1
    assert seen == sorted(ids, reverse=True)
    assert pages == 3
    assert "OFFSET" not in url  # the cursor is an id, never an offset
    count = client.get("/jobs/count").text
    assert count.replace("\u202f", "") == "123 matching"


def test_jobs_filters(app: App, client: TestClient) -> None:
    a = app.enqueue("echo", "needle-in-args")
    b = app.resolve("echo").enqueue_with(["other"], queue="mail")
    c = app.enqueue("explode", "needle-in-error")
    drain(app, queues=["default"])
    assert _ids(client.get("/jobs?state=failed").text) == [c]
    assert _ids(client.get("/jobs?queue=mail").text) == [b]
    assert _ids(client.get("/jobs?name=explode").text) == [c]
    assert sorted(_ids(client.get("/jobs?search=needle").text)) == [a, c]
    assert _ids(client.get("/jobs?state=queued&queue=mail&name=echo").text) == [b]
    assert "No job matches." in client.get("/jobs?name=nothing-like-this").text
    narrowed = client.get("/jobs/count?search=needle").text
    assert narrowed.replace("\u202f", "") == "2 matching"


def test_job_page_shows_arguments_result_error_traceback_and_attempts(
    app: App, client: TestClient
) -> None:
    ok = app.enqueue("echo", {"answer": 42})
    bad = app.enqueue("explode", "it broke")
    drain(app)
    page = client.get(f"/jobs/{ok}").text
    assert '<pre id="job-args">[\n  {\n    &#34;answer&#34;: 42\n  }\n]</pre>' in page
    assert '<pre id="job-result">{\n  &#34;answer&#34;: 42\n}</pre>' in page
    assert "succeeded" in page
    page = client.get(f"/jobs/{bad}").text
    assert '<pre id="job-error">RuntimeError: it broke</pre>' in page
    assert '<pre id="job-traceback">Traceback (most recent call last):' in page
    job = app.get_job(bad)
    assert job is not None and job.errors
    assert str(job.errors[0]["worker_id"]) in page  # the attempt history names the worker


def test_job_page_links_its_schedule_slot(app: App, client: TestClient) -> None:
    app.schedule("every-minute", "* * * * *", "echo", args=["tick"], catchup="all")
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)
    tick(app, start)
    fired = tick(app, start + timedelta(minutes=2))
    assert fired and fired[0].job_id is not None
    page = client.get(f"/jobs/{fired[0].job_id}").text
    assert 'href="/schedules/every-minute">every-minute</a>' in page
    assert f"slot {fired[0].slot:%Y-%m-%d %H:%M:%S}Z" in page


def test_unknown_job_is_404_and_a_junk_id_400(client: TestClient) -> None:
    assert client.get("/jobs/987654").status_code == 404
    assert client.get("/jobs/abc").status_code == 400
    assert client.get("/jobs/99999999999999999999999").status_code == 400
    assert client.get("/no/such/page").status_code == 404


def test_schedules_page_lists_declared_and_runtime_schedules(app: App, client: TestClient) -> None:
    app.schedule("nightly", "0 2 * * *", "echo", timezone="Europe/Paris")
    tick(app)
    app.schedules.create("rt:acme", "every 2h", "echo", args=["acme"], actor="alice")
    page = client.get("/schedules").text
    for view in app.schedules.views():
        assert f'<tr data-key="{view["key"]}">' in page
        assert view["description"] in page
    assert "Europe/Paris" in page
    assert "code" in page and "dynamic" in page
    nightly = app.schedules.get("nightly")
    local = datetime.fromisoformat(nightly["next"][0]).astimezone(
        __import__("zoneinfo").ZoneInfo("Europe/Paris")
    )
    assert local.strftime("%a %Y-%m-%d %H:%M %Z") in page  # next slot in its own zone


def test_schedule_page_shows_history_timeline_audit_and_jobs(app: App, client: TestClient) -> None:
    app.schedule("minutely", "* * * * *", "echo", catchup="all")
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=30)
    tick(app, start)
    fired = tick(app, start + timedelta(minutes=3))
    drain(app)
    app.schedules.pause("minutely", note="<b>careful</b>", actor="bob")
    page = client.get("/schedules/minutely")
    assert page.status_code == 200
    text = page.text
    assert '<svg class="chart timeline"' in text
    assert text.count("<circle ") == len(fired) == 3
    history = app.storage.slot_history("minutely")
    for record in history:
        assert f'href="/jobs/{record.job_id}">job {record.job_id}</a>' in text
    assert "&lt;b&gt;careful&lt;/b&gt;" in text and "<b>careful</b>" not in text
    assert '<table id="audit">' in text and ">paused<" in text and ">bob<" in text
    jobs = app.list_jobs(JobFilter(schedule_key="minutely"))
    assert len(jobs) == 3
    assert all(f'href="/jobs/{j.id}"' in text for j in jobs)


def test_unknown_schedule_is_404(client: TestClient) -> None:
    assert client.get("/schedules/nope").status_code == 404


def test_invalid_declared_schedule_is_shown_with_its_error(app: App, client: TestClient) -> None:
    app.schedule("good", "*/5 * * * *", "echo")
    app.schedule("bad", "*/0 * * * *", "echo", timezone="Mars/Base")
    tick_free = client.get("/schedules")  # no worker could start: the page still works
    assert tick_free.status_code == 200
    row = tick_free.text.split('<tr data-key="bad">')[1].split("</tr>")[0]
    assert "st-invalid" in row and "Mars/Base" in row
    assert '<tr data-key="good">' in tick_free.text
    detail = client.get("/schedules/bad")
    assert detail.status_code == 200
    assert "This schedule is invalid and does not fire" in detail.text
    views = {v["key"]: v for v in app.schedules.views()}
    assert views["bad"]["status"] == "invalid" and views["good"]["status"] == "pending"
    assert any("Mars/Base" in p for p in views["bad"]["problems"])
    assert client.get("/").status_code == 200
    assert client.get("/metrics").status_code == 200


def test_invalid_runtime_schedule_is_shown_with_its_error(app: App, client: TestClient) -> None:
    app.schedules.create("rt:gone", "every 1h", "echo")
    later = App(app.database_url, log_events=False)  # a later deploy renamed the job
    try:
        with TestClient(asgi(later, credentials=Credentials())) as other:
            page = other.get("/schedules").text
            row = page.split('<tr data-key="rt:gone">')[1].split("</tr>")[0]
            assert "st-invalid" in row and "unknown job" in row
            detail = other.get("/schedules/rt:gone")
            assert detail.status_code == 200 and "unknown job" in detail.text
    finally:
        later.close()


def test_workers_page(app: App, client: TestClient) -> None:
    app.storage.register_worker(WorkerInfo("w-1", "alpha", 101, ("default", "mail"), 8))
    old = datetime.now(UTC) - timedelta(minutes=5)
    app.storage.at(old).register_worker(WorkerInfo("w-2", "beta", 202, ("default",), 1, False))
    app.storage.deregister_worker("w-1", stopping=True)
    page = client.get("/workers").text
    assert "w-1" in page and "alpha" in page and '<span class="badge stopping">' in page
    assert "w-2" in page and '<span class="badge stale">stale</span>' in page
    assert "1 alive · 1 stale" in page


def test_queues_page(app: App, client: TestClient) -> None:
    app.resolve("echo").enqueue_with([1], queue="mail")
    app.storage.set_queue_paused("mail", True, "ops")
    page = client.get("/queues").text
    assert '<a href="/jobs?queue=mail">mail</a>' in page
    assert '<span class="badge st-paused">paused</span>' in page
    assert 'action="/queues/mail/resume"' in page


def test_static_assets_are_served_from_the_package(client: TestClient) -> None:
    js = client.get("/static/htmx.min.js")
    assert js.status_code == 200 and "htmx" in js.text[:200]
    css = client.get("/static/app.css")
    assert css.status_code == 200 and "--accent" in css.text
    page = client.get("/").text
    assert '<script src="/static/htmx.min.js" defer></script>' in page
    assert "http://" not in page.split("<body")[0] and "https://" not in page  # no CDN
