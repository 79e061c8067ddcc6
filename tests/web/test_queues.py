"""Queue pause and resume over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from onthedot import App
from tests.web.helpers import TestClient, flashes, post


def test_pause_and_resume_a_queue(app: App, client: TestClient) -> None:
    app.resolve("echo").enqueue_with([1], queue="mail")
    page = post(client, "/queues/mail/pause", follow=False)
    assert page.headers["location"] == "/queues"
    assert app.storage.paused_queues() == {"mail"}
    shown = client.get("/queues").text
    assert ("ok", "queue mail paused: workers stop claiming its jobs") in flashes(shown)
    post(client, "/queues/mail/resume")
    assert app.storage.paused_queues() == set()


def test_pause_a_queue_by_name_before_its_jobs(app: App, client: TestClient) -> None:
    post(client, "/queues/pause", {"queue": "later"})
    assert app.storage.paused_queues() == {"later"}
    assert '<a href="/jobs?queue=later">later</a>' in client.get("/queues").text
    assert post(client, "/queues/pause", {"queue": "a,b"}).status_code == 400
    assert post(client, "/queues/pause", {"queue": ""}).status_code == 400


def test_the_audit_actor_is_recorded(app: App, client: TestClient) -> None:
    post(client, "/queues/q1/pause")
    assert [s.queue for s in app.queue_stats() if s.paused] == ["q1"]
