"""The web admin's Health page, the overview's health card, a schedule page's health section
and its expectations form, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from onthedot import App
from onthedot.testing import check_health, tick
from tests.web.conftest import MakeClient
from tests.web.helpers import TestClient, flashes, post


def late_schedule(app: App) -> datetime:
    """A schedule first seen ten minutes ago that nothing ran since: late, no live worker."""
    app.schedule("nightly", "every 60s", "echo", grace="30s", max_runtime="5m")
    first = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    tick(app, first)
    (problem,) = check_health(app)
    return problem.slot


def test_the_health_page_lists_problems_with_their_causes(app: App, client: TestClient) -> None:
    slot = late_schedule(app)
    page = client.get("/health")
    assert page.status_code == 200
    text = page.text
    assert '<a href="/health" class="active" aria-current="page">Health</a>' in text
    assert "no live worker: no worker is registered" in text
    assert f"{slot:%Y-%m-%d %H:%M:%S}Z" in text and ">late<" in text
    assert '<span class="mono">no_live_worker</span>' in text
    assert "grace=30s max_runtime=5m" in text
    overview = client.get("/").text
    assert "Schedule health" in overview and 'id="health-problems"' in overview
    assert "1 late" in overview


def test_a_schedule_page_shows_its_health_and_takes_overrides(app: App, client: TestClient) -> None:
    late_schedule(app)
    page = client.get("/schedules/nightly").text
    assert "<h2>Health" in page and "grace=30s max_runtime=5m" in page
    assert 'action="/schedules/nightly/expect"' in page
    done = post(client, "/schedules/nightly/expect", {"max_runtime": "auto", "deadline": "06:00"})
    assert ("ok", "nightly: grace=30s max_runtime=auto deadline=06:00") in flashes(done.text)
    assert app.schedules.expectations("nightly").max_runtime == "auto"
    entry = app.schedules.audit("nightly")[0]
    assert (entry.action, entry.actor) == ("expected", "web")
    bad = post(client, "/schedules/nightly/expect", {"grace": "soon"})
    assert flashes(bad.text)[0][0] == "error" and "invalid grace 'soon'" in flashes(bad.text)[0][1]
    off = post(client, "/schedules/nightly/expect", {"max_runtime": "off"})
    assert ("ok", "nightly: grace=30s deadline=06:00") in flashes(off.text)
    assert post(client, "/schedules/nightly/expect", {}).status_code == 400


def test_read_only_shows_health_without_the_form(app: App, make_client: MakeClient) -> None:
    from tests.web.conftest import register_jobs

    register_jobs(app)
    late_schedule(app)
    client = make_client(read_only=True)
    page = client.get("/schedules/nightly").text
    assert "<h2>Health" in page and "/expect" not in page
    assert client.post("/schedules/nightly/expect", data={"grace": "1m"}).status_code == 403
