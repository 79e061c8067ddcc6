"""Schedule keys that look like paths (`../queues/default`, `x/../../jobs/2`) must not forge
buttons: in a real headless Chromium against a real `onthedot web`, create such runtime
schedules from the form, click their Pause and Delete buttons, and check what was acted on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from onthedot import App
from tests.e2e.test_browser import ARGS, CHROMIUM, TIMEOUT_MS, _need_browser
from tests.torture.webproc import WebProcess, serve_web

QUEUE_KEY = "../queues/default"
JOB_KEY = "x/../../jobs/2"


def _ping() -> str:
    return "pong"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[App, WebProcess]]:
    url = f"sqlite:///{tmp_path}/keys.db"
    app = App(url, log_events=False)
    app.job(name="ping")(_ping)
    app.migrate()
    with serve_web(url, tmp_path) as web:
        yield app, web
    app.close()


@pytest.fixture
def browser_page() -> Iterator[Any]:
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        yield page
        browser.close()


def _create(page: Any, base: str, key: str) -> None:
    page.goto(base + "/schedules")
    page.locator("#new-schedule summary").click()
    form = page.locator("#new-schedule form")
    form.locator('input[name="key"]').fill(key)
    form.locator('input[name="spec"]').fill("@hourly")
    form.locator('select[name="job"]').select_option("ping")
    form.get_by_role("button", name="Create").click()
    page.wait_for_load_state()


def test_path_like_keys_act_on_their_own_schedule(
    served: tuple[App, WebProcess], browser_page: Any, record_result: dict[str, object]
) -> None:
    from playwright.sync_api import expect

    app, web = served
    ids = app.resolve("ping").enqueue_many([[]] * 3)
    assert 2 in ids
    page = browser_page

    _create(page, web.url, QUEUE_KEY)
    landed = page.locator("main h1").inner_text()  # its own page, after the redirect
    page.goto(web.url + "/schedules")
    row = page.locator(f'tr[data-key="{QUEUE_KEY}"]')
    with page.expect_response(lambda r: r.request.method == "POST"):
        row.get_by_role("button", name="Pause").click()
    queues = {q.queue: q for q in app.queue_stats()}
    assert not queues["default"].paused, "the Pause button of a schedule paused a queue"
    expect(row.locator(".badge").first).to_have_text("paused")
    assert app.schedules.get(QUEUE_KEY)["paused_by"] == "web"
    assert QUEUE_KEY in landed, landed

    _create(page, web.url, JOB_KEY)
    expect(page.locator("main h1")).to_contain_text(JOB_KEY)
    page.get_by_label(f"delete {JOB_KEY}").check()
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.locator("#flash")).to_contain_text(f"deleted {JOB_KEY}")
    assert app.get_job(2) is not None, "the Delete button of a schedule deleted job 2"
    assert JOB_KEY not in {v["key"] for v in app.schedules.views()}
    # The raw attack, without a browser: the escaped URL names the schedule, nothing else.
    html = httpx.get(web.url + "/schedules", timeout=10).text
    assert 'action="/schedules/..%2Fqueues%2Fdefault/resume"' in html
    record_result.update(keys=2, queue_paused=False, job_2_deleted=False)
