"""Schedule actions over HTTP: pause (until, note), resume, skip, unskip, run now, backfill with
preview, reset, and create/edit/delete of runtime schedules, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from onthedot import App, JobFilter
from onthedot.testing import slots_between, tick
from tests.web.helpers import TestClient, flashes, post


def _declare(app: App, key: str = "minutely", **options: object) -> None:
    app.schedule(key, "* * * * *", "echo", **options)
    tick(app)  # a worker has seen it: operator actions need its ledger row


def test_pause_with_note_and_until_then_resume(app: App, client: TestClient) -> None:
    _declare(app, timezone="Europe/Paris")
    page = post(
        client,
        "/schedules/minutely/pause",
        {"until": "2031-01-15T09:00", "note": "migration"},
        follow=False,
    )
    assert page.headers["location"] == "/schedules/minutely"
    view = app.schedules.get("minutely")
    assert view["paused"] and view["pause_note"] == "migration"
    assert view["paused_until"] == "2031-01-15T08:00:00Z"  # 09:00 in Paris, in winter
    assert view["paused_by"] == "web"
    shown = client.get("/schedules/minutely").text
    assert "Paused by web until 2031-01-15 08:00:00Z" in shown
    post(client, "/schedules/minutely/resume", {"note": "done"})
    assert not app.schedules.get("minutely")["paused"]
    actions = [e.action for e in app.schedules.audit("minutely")]
    assert actions[:2] == ["resumed", "paused"]


def test_pause_for_a_duration(app: App, client: TestClient) -> None:
    _declare(app)
    before = datetime.now(UTC)
    post(client, "/schedules/minutely/pause", {"until": "2h"})
    until = datetime.fromisoformat(app.schedules.get("minutely")["paused_until"])
    assert before + timedelta(hours=2) - timedelta(seconds=5) <= until
    assert until <= datetime.now(UTC) + timedelta(hours=2)


def test_pause_refusals_are_flashes(app: App, client: TestClient) -> None:
    _declare(app)
    page = post(client, "/schedules/minutely/pause", {"until": "2001-01-01T00:00Z"})
    assert flashes(page.text)[0][0] == "error" and "not in the future" in flashes(page.text)[0][1]
    page = post(client, "/schedules/minutely/resume")
    assert ("error", "schedule 'minutely' is not paused") in flashes(page.text)
    assert post(client, "/schedules/minutely/pause", {"until": "tomorrow"}).status_code == 400


def test_skip_next_then_unskip(app: App, client: TestClient) -> None:
    _declare(app)
    post(client, "/schedules/minutely/skip", {"note": "holiday"})
    [skipped] = app.schedules.skipped("minutely")
    nxt = datetime.fromisoformat(app.schedules.get("minutely")["next"][0])
    assert skipped == nxt
    page = client.get("/schedules/minutely").text
    assert 'action="/schedules/minutely/unskip"' in page
    post(client, "/schedules/minutely/unskip", {"slot": skipped.isoformat()})
    assert app.schedules.skipped("minutely") == []


def test_run_now_enqueues_a_manual_job(app: App, client: TestClient) -> None:
    _declare(app)
    page = post(client, "/schedules/minutely/trigger", {"note": "by hand"})
    [job] = app.list_jobs(JobFilter(schedule_key="minutely"))
    # Issue 14: the manual job carries the instant it was asked for (it was None before).
    assert job.slot is not None and job.name == "echo"
    assert ("ok", f"minutely: enqueued job {job.id} now") in flashes(page.text)
    assert f'href="/jobs/{job.id}"' in page.text  # the schedule page lists it


def test_htmx_row_actions_on_the_list(app: App, client: TestClient) -> None:
    _declare(app)
    page = post(client, "/schedules/minutely/pause", {"fragment": "row"}, htmx=True)
    assert page.text.lstrip().startswith('<tr data-key="minutely">')
    assert '<span class="badge st-paused">paused</span>' in page.text
    assert 'hx-post="/schedules/minutely/resume"' in page.text
    assert '<div id="flash" hx-swap-oob="true"' in page.text and "paused minutely" in page.text
    page = post(client, "/schedules/minutely/trigger", {"fragment": "row"}, htmx=True)
    [job] = app.list_jobs(JobFilter(schedule_key="minutely"))
    assert f"enqueued job {job.id} now" in page.text


def test_backfill_preview_then_run(app: App, client: TestClient) -> None:
    _declare(app, catchup="all")
    now = datetime.now(UTC).replace(microsecond=0)
    start, end = now - timedelta(minutes=12), now - timedelta(minutes=5)
    form = {"start": start.isoformat(), "end": end.isoformat(), "note": "outage"}
    preview = post(client, "/schedules/minutely/backfill", form)
    assert preview.status_code == 200
    expected = slots_between(app, "minutely", start - timedelta(seconds=1), end)
    assert f"<strong>{len(expected)}</strong> slot(s) would be enqueued" in preview.text
    assert app.list_jobs(JobFilter(schedule_key="minutely")) == []  # a preview enqueues nothing
    done = post(client, "/schedules/minutely/backfill", {**form, "run": "1"})
    assert (
        "ok",
        f"minutely: backfilled {len(expected)} slot(s); 0 kept",
    ) in flashes(done.text)
    jobs = app.list_jobs(JobFilter(schedule_key="minutely", limit=100))
    assert sorted(j.slot for j in jobs if j.slot) == expected
    again = post(client, "/schedules/minutely/backfill", form)
    assert "<strong>0</strong> slot(s) would be enqueued" in again.text


def test_backfill_refusals(app: App, client: TestClient) -> None:
    _declare(app)
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    page = post(
        client, "/schedules/minutely/backfill", {"start": "2020-01-01T00:00Z", "end": future}
    )
    assert "in the future" in flashes(page.text)[0][1]
    junk = post(client, "/schedules/minutely/backfill", {"start": "x", "end": "y"})
    assert junk.status_code == 400
    assert post(client, "/schedules/minutely/backfill", {}).status_code == 400


def test_reset_clears_pause_and_skips(app: App, client: TestClient) -> None:
    _declare(app)
    app.schedules.pause("minutely")
    app.schedules.skip("minutely")
    post(client, "/schedules/minutely/reset")
    assert not app.schedules.get("minutely")["paused"]
    assert app.schedules.skipped("minutely") == []


def test_actions_on_a_schedule_no_worker_has_seen(app: App, client: TestClient) -> None:
    app.schedule("fresh", "* * * * *", "echo")
    page = post(client, "/schedules/fresh/pause")
    # Issue 14: the ledger row is made on demand (before: "no worker has started with it yet").
    assert flashes(page.text)[0] == ("ok", "paused fresh")
    assert post(client, "/schedules/ghost/pause").status_code == 404
    gone = post(client, "/schedules/ghost/trigger")
    assert gone.status_code == 404
    assert ("error", "no schedule with key 'ghost'") in flashes(gone.text)


def test_create_edit_delete_a_runtime_schedule(app: App, client: TestClient) -> None:
    form = {
        "key": "report:acme",
        "spec": "0 7 * * MON-FRI",
        "job": "echo",
        "timezone": "America/New_York",
        "args": '["acme"]',
        "overlap": "skip",
    }
    page = post(client, "/schedules/create", form, follow=False)
    assert page.headers["location"] == "/schedules/report:acme"
    view = app.schedules.get("report:acme")
    assert view["source"] == "dynamic" and view["timezone"] == "America/New_York"
    assert app.schedules.get_definition("report:acme").args == ("acme",)
    edit = client.get("/schedules/report:acme").text
    assert 'action="/schedules/report:acme/update"' in edit and "&#34;acme&#34;" in edit
    post(client, "/schedules/report:acme/update", {"spec": "0 8 * * MON-FRI", "args": '["x"]'})
    sched = app.schedules.get_definition("report:acme")
    assert sched.spec.canonical() == "0 8 * * MON-FRI" and sched.args == ("x",)
    refused = post(client, "/schedules/report:acme/delete")
    assert refused.status_code == 400
    post(client, "/schedules/report:acme/delete", {"confirm": "1"})
    assert all(v["key"] != "report:acme" for v in app.schedules.views())


def test_create_refusals_store_nothing(app: App, client: TestClient) -> None:
    bad = post(
        client,
        "/schedules/create",
        {"key": "k", "spec": "*/0 * * * *", "job": "echo", "timezone": "Mars/Base"},
    )
    [(kind, message)] = flashes(bad.text)
    assert kind == "error" and "invalid" in message
    assert app.schedules.views() == []
    missing = post(client, "/schedules/create", {"key": "k", "spec": "* * * * *"})
    assert missing.status_code == 400
    not_json = post(
        client, "/schedules/create", {"key": "k", "spec": "@hourly", "job": "echo", "args": "[1,"}
    )
    assert not_json.status_code == 400
    _declare(app, "declared")
    owned = post(client, "/schedules/create", {"key": "declared", "spec": "@hourly", "job": "echo"})
    assert "declared in code" in flashes(owned.text)[0][1]
    code_edit = post(client, "/schedules/declared/update", {"spec": "@daily"})
    assert "declared in code" in flashes(code_edit.text)[0][1]


def test_keys_with_slashes_and_spaces(app: App, client: TestClient) -> None:
    app.schedules.create("team a/report 1", "@daily", "echo")
    page = client.get("/schedules").text
    # The slash is encoded in links (a key is one segment: `../x` must not climb out), and
    # the URL with a plain slash keeps working.
    assert 'href="/schedules/team%20a%2Freport%201"' in page
    assert client.get("/schedules/team%20a%2Freport%201").status_code == 200
    assert client.get("/schedules/team%20a/report%201").status_code == 200
    post(client, "/schedules/team%20a/report%201/pause", {"note": "n"})
    assert app.schedules.get("team a/report 1")["paused"]
