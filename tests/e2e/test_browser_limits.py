"""The Limits page in a real headless Chromium, on SQLite and PostgreSQL (the fixtures of
test_browser.py: uvicorn in a thread, Debian's chromium through Playwright): a limit with its
busiest keys, an override from the form that the next claim obeys and the audit records, a
reset back to the code's value, and a forged POST without the CSRF token refused."""

from __future__ import annotations

from typing import Any

from onthedot import App
from tests.e2e.test_browser import browser_page, live_db

__all__ = ["browser_page", "live_db"]  # the fixtures, used by name


def declare(app: App) -> None:
    """A named limit `stripe` (20 at once per customer) over a job of queue `payments`; two
    charges of customer 42 running, three more of it and one of customer 7 waiting."""
    app.limit("stripe", concurrency=20, key="customer_id")

    @app.job(name="billing.pay", queue="payments", limits=["stripe"])
    def pay(customer_id: int, cents: int) -> None: ...

    app.limits.sync()
    for _ in range(2):
        pay.enqueue(42, 100)
    assert len(app.storage.claim_limited("w", "payments", 2, 300)) == 2
    for _ in range(3):
        pay.enqueue(42, 100)
    pay.enqueue(7, 100)


def stripe(app: App) -> tuple[int | None, bool]:
    (row,) = [r for r in app.storage.list_limits() if r.effective.name == "stripe"]
    return row.effective.concurrency, row.overridden


def test_the_limits_page_lists_overrides_resets_and_refuses_a_forged_post(
    live_db: tuple[App, str], browser_page: Any
) -> None:
    from playwright.sync_api import expect

    app, base = live_db
    declare(app)
    page = browser_page
    page.goto(base + "/")
    page.get_by_role("link", name="Limits").first.click()
    panel = page.locator("section.panel", has=page.locator("h2", has_text="stripe"))
    expect(panel).to_contain_text("concurrency 20")
    rows = panel.locator("tbody tr")
    expect(rows).to_have_count(2)
    # The busiest key first: customer 42, 2 running and 3 waiting; then customer 7.
    assert rows.nth(0).locator("td").all_inner_texts()[:3] == ["customer_id=42", "2", "3"]
    assert rows.nth(1).locator("td").all_inner_texts()[:3] == ["customer_id=7", "0", "1"]

    # An override from the form: in force at the next claim, and audited.
    panel.get_by_label("Concurrency").fill("3")
    panel.get_by_label("Note").fill("stripe asked us to slow down")
    panel.get_by_role("button", name="Override").click()
    expect(page.locator("#flash")).to_contain_text("limit stripe: concurrency 3")
    expect(panel.locator("h2")).to_contain_text("overridden")
    assert stripe(app) == (3, True)
    claimed = app.storage.claim_limited("w", "payments", 10, 300)
    assert sorted(c.args[0] for c in claimed) == [7, 42]  # 42 had room for one more only
    (entry,) = app.schedules.audit("limit:stripe")
    assert (entry.action, entry.note) == ("limit_set", "stripe asked us to slow down")
    assert entry.details is not None and entry.details["concurrency"] == 3

    # A forged POST from the page without the CSRF token: refused, nothing changes.
    status = page.evaluate(
        """async (url) => (await fetch(url, {method: 'POST',
             headers: {'Content-Type': 'application/x-www-form-urlencoded'},
             body: 'concurrency=1'})).status""",
        base + "/limits/stripe/set",
    )
    assert status == 403
    assert stripe(app) == (3, True)
    assert page.errors == [
        "Failed to load resource: the server responded with a status of 403 (Forbidden)"
    ]
    page.errors.clear()

    # Reset: back to the code's value, audited too.
    panel.get_by_role("button", name="Reset to the code's").click()
    expect(page.locator("#flash")).to_contain_text("limit stripe: back to the code's settings")
    expect(panel).to_contain_text("concurrency 20")
    expect(panel.locator("h2")).not_to_contain_text("overridden")
    assert stripe(app) == (20, False)
    assert [e.action for e in app.schedules.audit("limit:stripe")] == ["limit_reset", "limit_set"]
    assert page.dialogs == []
    assert page.errors == [], page.errors
