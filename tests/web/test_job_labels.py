"""A job function may name its jobs from their arguments (the Django task job shows the task's
path): the jobs list, a job's page and its row show `label (name)`; a label that fails, or
says nothing, leaves the name."""

from __future__ import annotations

from typing import Any

from onthedot import App
from tests.web.helpers import TestClient


def test_labelled_jobs_in_the_admin(app: App, client: TestClient) -> None:
    @app.job(name="runner")
    def runner(path: str) -> None: ...

    runner.label = lambda args: args[0] if args and args[0] != "-" else None
    labelled = runner.enqueue("shop.tasks.send_receipt")
    plain = runner.enqueue("-")
    listing = client.get("/jobs").text
    assert "shop.tasks.send_receipt (runner)" in listing
    page = client.get(f"/jobs/{labelled}").text
    assert "shop.tasks.send_receipt (runner)" in page
    assert "shop.tasks.send_receipt" not in client.get(f"/jobs/{plain}").text


def test_a_failing_label_shows_the_name(app: App) -> None:
    @app.job(name="fragile")
    def fragile(*args: Any) -> None: ...

    fragile.label = lambda args: args[5]  # IndexError on these arguments
    assert app.jobs.shown_name("fragile", [1]) == "fragile"
    assert app.jobs.shown_name("unknown.job", [1]) == "unknown.job"
