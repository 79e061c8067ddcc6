"""The Health view in a real headless Chromium: a late schedule with its cause on /health and
on the overview, then its expectations overridden from its page (the fixtures of
test_browser.py: uvicorn in a thread, Debian's chromium through Playwright)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from onthedot import App
from onthedot.testing import check_health, tick
from tests.e2e.test_browser import browser_page, live

__all__ = ["browser_page", "live"]  # the fixtures, used by name


def test_a_late_schedule_on_the_health_page_and_an_override(
    live: tuple[App, str], browser_page: Any
) -> None:
    from playwright.sync_api import expect

    app, base = live
    tick(app, datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=15))
    assert [p.key for p in check_health(app)] == ["cache-refresh"]
    page = browser_page
    page.goto(base + "/health")
    expect(page.locator("h1")).to_contain_text("1 problem(s)")
    problem = page.locator("#problems tbody tr").first
    expect(problem).to_contain_text("cache-refresh")
    expect(problem).to_contain_text("no live worker: no worker is registered")
    expect(page.locator("#health")).to_contain_text("nightly-report")
    page.goto(base + "/")
    expect(page.locator("#health-problems")).to_contain_text("cache-refresh")
    page.locator("#health-problems").get_by_role("link", name="cache-refresh").click()
    page.get_by_text("Override its expectations").click()
    page.get_by_label("Max runtime").fill("auto")
    page.get_by_label("Deadline").fill("06:00")
    page.get_by_role("button", name="Save").first.click()
    expect(page.locator("#flash")).to_contain_text("max_runtime=auto deadline=06:00")
    assert app.schedules.expectations("cache-refresh").max_runtime == "auto"
    assert page.dialogs == []
    assert page.errors == [], page.errors  # CSP violations would show up here
