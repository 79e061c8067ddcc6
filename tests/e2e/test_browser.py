"""The web admin in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright;
no browser is ever downloaded): pause a schedule and run it now from the schedules page, and an
XSS probe in job arguments stays inert. Also saves the screenshots of the main pages (into
docs/screenshots when $ONTHEDOT_SCREENSHOTS is set, else into the test's folder).

Skipped when /usr/bin/chromium is absent, except under CI=true, where it fails."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from onthedot import App, JobFilter
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.storage.interface import WorkerInfo
from onthedot.testing import drain, tick
from onthedot.web import asgi
from onthedot.web.security import Credentials
from tests.web.helpers import serve_asgi

CHROMIUM = Path("/usr/bin/chromium")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
XSS_IMG = "<img src=x onerror=alert('img')>"
XSS_SCRIPT = "</script><script>alert('script')</script>"
TIMEOUT_MS = 30_000


def _need_browser() -> Any:
    if not CHROMIUM.exists():
        if IN_CI:
            pytest.fail("/usr/bin/chromium is missing (.ci/run installs Debian's chromium)")
        pytest.skip("/usr/bin/chromium is missing: apt-get install -y chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if IN_CI:
            pytest.fail("the playwright package is missing (it is in the dev extra)")
        pytest.skip("the playwright package is missing: pip install -e '.[dev]'")
    return sync_playwright


def _ok(value: Any = None) -> Any:
    return value


def _failing(*reasons: Any) -> None:
    raise RuntimeError(" ".join(map(str, reasons)))


def build_app(url: str) -> App:
    app = App(url, log_events=False, lease=30.0)
    app.job(name="reports.send", queue="reports", runtime=True)(_ok)
    app.job(name="mail.welcome", queue="mail", runtime=True)(_ok)
    app.job(name="billing.charge", queue="billing", max_attempts=1)(_failing)
    app.schedule(
        "nightly-report", "0 2 * * *", "reports.send", args=["all"], timezone="Europe/Paris"
    )
    app.schedule("cache-refresh", "*/5 * * * *", "mail.welcome", catchup="all")
    app.schedule("weekly-digest", "0 9 * * MON", "mail.welcome", timezone="America/New_York")
    app.migrate()
    return app


def seed(app: App) -> None:
    """A realistic picture: finished jobs spread over the last day, failures with
    tracebacks, a history for a schedule, workers, a paused schedule, a runtime one."""
    now = datetime.now(UTC).replace(microsecond=0)
    tick(app, now - timedelta(minutes=42))
    tick(app, now - timedelta(minutes=1))  # catch-up "all": a slot every 5 minutes
    drain(app, queues=["mail"])
    app.storage.register_worker(WorkerInfo("web-1-4f2a", "web-1", 4242, ("default", "mail"), 8))
    app.storage.register_worker(WorkerInfo("batch-7c1e", "batch-1", 77, ("reports",), 2))
    for hours in range(23, -1, -1):
        at = now - timedelta(hours=hours, minutes=(hours * 17) % 50)
        n = 3 + (hours * 7) % 9
        ids = app.resolve("reports.send").enqueue_many(
            [[f"report-{hours}-{i}"] for i in range(n)], run_at=at - timedelta(seconds=30)
        )
        claimed = app.storage.at(at).claim_jobs("batch-7c1e", "reports", len(ids), 60.0)
        outcomes = [
            Outcome(
                c.id,
                OutcomeKind.FAILED if i % 6 == 5 else OutcomeKind.SUCCEEDED,
                error="TimeoutError: upstream took too long" if i % 6 == 5 else None,
            )
            for i, c in enumerate(claimed)
        ]
        app.storage.at(at).finish_jobs("batch-7c1e", outcomes)
    for minutes in range(58, 0, -4):
        at = now - timedelta(minutes=minutes, seconds=20)
        ids = app.resolve("mail.welcome").enqueue_many(
            [[{"user_id": 900 + minutes * 10 + i}] for i in range(1 + minutes % 5)],
            run_at=at - timedelta(seconds=5),
        )
        claimed = app.storage.at(at).claim_jobs("web-1-4f2a", "mail", len(ids), 60.0)
        outcomes = [Outcome(c.id, OutcomeKind.SUCCEEDED) for c in claimed]
        if minutes % 12 == 2:
            outcomes[-1] = Outcome(claimed[-1].id, OutcomeKind.FAILED, error="SMTPError: 451")
        app.storage.at(at).finish_jobs("web-1-4f2a", outcomes)
    app.storage.at(now - timedelta(hours=1)).register_worker(
        WorkerInfo("old-box-91d0", "old-box", 313, ("default",), 4)
    )
    app.resolve("billing.charge").enqueue_many(
        [["card declined for customer 1042"], ["gateway returned HTTP 502"]]
    )
    drain(app, queues=["billing"])
    app.resolve("mail.welcome").enqueue_many([[{"user_id": i}] for i in range(1200, 1212)])
    app.resolve("reports.send").enqueue_with(["quarterly"], delay="2h")
    app.schedules.pause("weekly-digest", note="holiday season", actor="alice")
    app.schedules.skip("cache-refresh", note="deploy window", actor="alice")
    app.schedules.trigger("cache-refresh", note="warm up after the deploy", actor="bob")
    app.schedules.create(
        "report:acme",
        "0 7 * * MON-FRI",
        "reports.send",
        args=["acme"],
        timezone="Europe/Berlin",
        actor="bob",
    )


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[App, str]]:
    """The app served by uvicorn in a thread on a free port (SQLite)."""
    yield from _served(build_app(f"sqlite:///{tmp_path}/browser.db"))


@pytest.fixture
def live_db(db_url: str) -> Iterator[tuple[App, str]]:
    """`live` on each backend (SQLite and PostgreSQL)."""
    yield from _served(build_app(db_url))


def _served(app: App) -> Iterator[tuple[App, str]]:
    with serve_asgi(asgi(app, credentials=Credentials(), refresh=1)) as base:
        yield app, base
    app.close()


@pytest.fixture
def browser_page() -> Iterator[Any]:
    sync_playwright = _need_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.set_default_timeout(TIMEOUT_MS)
        dialogs: list[str] = []
        errors: list[str] = []

        def on_dialog(dialog: Any) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.dialogs = dialogs
        page.errors = errors
        yield page
        browser.close()


def test_pause_and_run_a_schedule_from_the_schedules_page(
    live: tuple[App, str], browser_page: Any
) -> None:
    from playwright.sync_api import expect

    app, base = live
    tick(app)
    page = browser_page
    page.goto(base + "/schedules")
    row = page.locator('tr[data-key="cache-refresh"]')
    expect(row.locator(".badge").first).to_have_text("active")
    row.get_by_role("button", name="Pause").click()  # htmx: the row is swapped in place
    expect(row.locator(".badge").first).to_have_text("paused")
    expect(page.locator("#flash")).to_contain_text("paused cache-refresh")
    assert app.schedules.get("cache-refresh")["paused_by"] == "web"
    row.get_by_role("button", name="Run now").click()
    expect(page.locator("#flash")).to_contain_text("enqueued job")
    found = re.search(r"enqueued job (\d+)", page.locator("#flash").inner_text())
    assert found
    job_id = int(found.group(1))
    [job] = [j for j in app.list_jobs(JobFilter(schedule_key="cache-refresh")) if j.id == job_id]
    # Issue 14: run now carries the instant it was asked for as its slot (no cursor moves).
    assert job.slot is not None and abs((datetime.now(UTC) - job.slot).total_seconds()) < 60
    assert (job.slot, "manual") in [
        (r.slot, r.outcome) for r in app.storage.slot_history("cache-refresh")
    ]
    row.get_by_role("link", name="cache-refresh").click()
    expect(page.locator("h1")).to_contain_text("cache-refresh")
    expect(page.locator(f'#schedule-jobs a[href="/jobs/{job_id}"]')).to_be_visible()
    page.goto(base + "/jobs?schedule=cache-refresh")
    expect(page.locator(f"#job-{job_id}")).to_contain_text("queued")
    row = page.locator(f"#job-{job_id}")
    row.get_by_role("button", name="Cancel").click()
    expect(row.locator(".badge")).to_have_text("cancelled")
    assert page.dialogs == []
    assert page.errors == [], page.errors  # CSP violations would show up here


def test_times_say_their_zone_and_seconds_and_the_backfill_warning_leaves_enqueue_free(
    live: tuple[App, str], browser_page: Any
) -> None:
    """Issue 14: a sub-minute schedule shows seconds, every time says its zone, and the
    "history pruned" warning appears only when it was (and never covers the Enqueue button)."""
    from playwright.sync_api import expect

    from onthedot import ManualClock, SystemClock

    app, base = live
    now = datetime.now(UTC).replace(microsecond=0)
    app.schedules.create("every-20s", "*/20 * * * * *", "mail.welcome", args=[{"user_id": 1}])
    page = browser_page
    page.goto(base + "/schedules/every-20s")
    nexts = page.locator("dt:has-text('Next slots') + dd div")
    expect(nexts.first).to_contain_text("UTC")
    texts = [nexts.nth(i).inner_text() for i in range(nexts.count())]
    assert len(set(texts)) == len(texts) == 5, texts  # 20 s apart: they differ in seconds
    assert any(re.search(r"\d\d:\d\d:[24]0 UTC", t) for t in texts), texts
    expect(page.locator("#audit thead")).to_contain_text("When (UTC)")
    # A young schedule: a preview of a range before it existed offers nothing and warns nothing.
    page.fill("input[name=start]", (now - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S"))
    page.fill("input[name=end]", (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S"))
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("h1")).to_contain_text("preview")
    expect(page.locator(".panel").first).to_contain_text("0 slot(s) would be enqueued")
    assert page.locator("#backfill-pruned").count() == 0
    # An old schedule whose history is older than the retention: the warning, beside the button.
    app.clock = ManualClock(now - timedelta(days=30))
    try:
        app.schedules.create("old-hourly", "every 1h", "mail.welcome", args=[{"user_id": 2}])
    finally:
        app.clock = SystemClock()
    page.goto(base + "/schedules/old-hourly")
    page.fill("input[name=start]", (now - timedelta(days=10)).strftime("%Y-%m-%dT%H:%M:%S"))
    page.fill("input[name=end]", (now - timedelta(days=9)).strftime("%Y-%m-%dT%H:%M:%S"))
    page.get_by_role("button", name="Preview").click()
    warning = page.locator("#backfill-pruned")
    expect(warning).to_be_visible()
    button = page.get_by_role("button", name=re.compile(r"Enqueue \d+ slot"))
    expect(button).to_be_visible()
    w, b = warning.bounding_box(), button.bounding_box()
    assert w and b
    overlap = not (
        w["y"] + w["height"] <= b["y"]
        or b["y"] + b["height"] <= w["y"]
        or w["x"] + w["width"] <= b["x"]
        or b["x"] + b["width"] <= w["x"]
    )
    assert not overlap, (w, b)
    on_top = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).textContent",
        [b["x"] + b["width"] / 2, b["y"] + b["height"] / 2],
    )
    assert "Enqueue" in on_top
    button.click()
    expect(page.locator("#flash")).to_contain_text("old-hourly")
    assert page.errors == [], page.errors


def test_xss_probe_in_job_arguments_stays_inert(live: tuple[App, str], browser_page: Any) -> None:
    from playwright.sync_api import expect

    app, base = live
    job_id = app.resolve("billing.charge").enqueue_with([XSS_IMG, XSS_SCRIPT], queue=XSS_IMG)
    drain(app, queues=[XSS_IMG])
    app.schedules.create(XSS_IMG, "@hourly", "reports.send", args=[XSS_SCRIPT])
    app.schedules.pause(XSS_IMG, note=XSS_SCRIPT, actor=XSS_IMG)
    page = browser_page
    for path in [
        "/",
        "/jobs",
        f"/jobs/{job_id}",
        "/schedules",
        "/queues",
        f"/jobs?search={XSS_IMG}",
    ]:
        page.goto(base + path)
        expect(page.locator("main")).to_be_visible()
        assert page.locator("main img").count() == 0, path
        assert page.locator("main script").count() == 0, path
    page.goto(f"{base}/jobs/{job_id}")
    args = page.locator("#job-args").inner_text()
    assert XSS_IMG in args and XSS_SCRIPT in args  # shown literally
    assert XSS_SCRIPT in page.locator("#job-error").inner_text()
    page.goto(base + "/schedules")
    page.get_by_role("link", name=XSS_IMG).click()
    expect(page.locator("h1")).to_contain_text(XSS_IMG)
    assert page.locator("main img").count() == 0
    expect(page.locator(".notice")).to_contain_text(XSS_SCRIPT)
    assert page.dialogs == []
    assert page.errors == [], page.errors


def test_screenshots_of_the_main_pages(
    live: tuple[App, str], browser_page: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    app, base = live
    seed(app)
    folder = SHOTS if os.environ.get("ONTHEDOT_SCREENSHOTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    [failed] = app.list_jobs(JobFilter(name="billing.charge", limit=1))
    pages = {
        "overview": "/",
        "jobs": "/jobs",
        "job": f"/jobs/{failed.id}",
        "schedules": "/schedules",
        "schedule": "/schedules/cache-refresh",
        "workers": "/workers",
    }
    page = browser_page
    page.goto(base + "/")
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true") as polled:
        pass  # the overview refreshes itself (htmx polling, no inline script)
    assert polled.value.status == 200
    expect(page.locator("#live h1")).to_have_text("Overview")
    for name, path in pages.items():
        page.goto(base + path)
        expect(page.locator("main h1")).to_be_visible()
        page.screenshot(path=str(folder / f"{name}.png"), full_page=name != "jobs")
        assert (folder / f"{name}.png").stat().st_size > 10_000
    assert page.errors == [], page.errors


def test_the_schedule_form_offers_only_runtime_jobs_and_refuses_a_forged_one(
    live_db: tuple[App, str], browser_page: Any, tmp_path: Path
) -> None:
    """Issue 24 item 1: the create form lists only the jobs opened with `runtime=True`; a
    page that adds `onthedot.command` to the list itself gets one line, and nothing runs."""
    from playwright.sync_api import expect

    app, base = live_db
    page = browser_page
    page.goto(base + "/schedules")
    page.locator("#new-schedule summary").click()
    form = page.locator("#new-schedule form")
    choices = form.locator("select[name=job] option")
    assert choices.all_inner_texts() == ["choose a job", "mail.welcome", "reports.send"]
    form.locator("input[name=key]").fill("report:acme")
    form.locator("input[name=spec]").fill("every 1h")
    form.locator("select[name=job]").select_option("reports.send")
    form.locator("textarea[name=args]").fill('["acme"]')
    form.get_by_role("button", name="Create").click()
    expect(page.locator("#flash")).to_contain_text("created report:acme")
    assert app.schedules.get_definition("report:acme").job == "reports.send"
    edit = page.locator("form[action$='/update'] select[name=job]")
    choices = ["unchanged (reports.send)", "mail.welcome", "reports.send"]
    assert edit.locator("option").all_text_contents() == choices
    assert edit.input_value() == "reports.send"
    # A hostile page (or console) adds the command job to the list and submits it.
    pwned = tmp_path / "PWNED"
    page.goto(base + "/schedules")
    page.locator("#new-schedule summary").click()
    page.evaluate(
        "() => { const s = document.querySelector('#new-schedule select[name=job]');"
        " s.add(new Option('onthedot.command', 'onthedot.command'));"
        " s.value = 'onthedot.command'; }"
    )
    form.locator("input[name=key]").fill("pwn")
    form.locator("input[name=spec]").fill("every 1h")
    form.locator("textarea[name=args]").fill(f'["touch {pwned}"]')
    form.locator("textarea[name=kwargs]").fill('{"shell": true}')
    form.get_by_role("button", name="Create").click()
    expect(page.locator("#flash")).to_contain_text("cannot run shell commands")
    assert "pwn" not in [v["key"] for v in app.schedules.list()]
    drain(app)
    assert not pwned.exists()
    assert page.errors == [], page.errors
