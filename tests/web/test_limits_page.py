"""The web admin's Limits page over HTTP, on SQLite and PostgreSQL: the limits and their busiest
keys, an override and a reset (audited, CSRF-checked), bad input refused in one line, and
names escaped."""

from __future__ import annotations

from onthedot import App
from tests.web.helpers import TestClient, flashes, post


def declare(app: App) -> None:
    app.limit("stripe", concurrency=20, rate="100/s")

    @app.job(name="rebuild", concurrency=1, key="tenant")
    def rebuild(tenant: str) -> None: ...


def test_the_page_lists_limits_and_their_busiest_keys(app: App, client: TestClient) -> None:
    declare(app)
    app.limits.sync()
    app.jobs["rebuild"].enqueue("<b>acme</b>")
    app.jobs["rebuild"].enqueue("<b>acme</b>")
    app.storage.claim_limited("w", "default", 5, 30)
    page = client.get("/limits").text
    assert '<a href="/limits" class="active" aria-current="page">Limits</a>' in page
    assert '<h2 class="mono">rebuild</h2>' in page
    assert "tenant=&lt;b&gt;acme&lt;/b&gt;" in page and "<b>acme</b>" not in page
    assert '<td class="num">1</td><td class="num">1</td>' in page  # running, waiting
    assert "concurrency 20 · rate 100/s · burst 100" in page
    assert 'action="/limits/stripe/set"' in page


def test_override_and_reset_a_limit(app: App, client: TestClient) -> None:
    declare(app)
    done = post(client, "/limits/stripe/set", {"concurrency": "5", "rate": "10/s", "note": "slow"})
    assert ("ok", "limit stripe: concurrency 5, rate 10/s") in flashes(done.text)
    (row,) = [r for r in app.storage.list_limits() if r.effective.name == "stripe"]
    assert (row.effective.concurrency, row.effective.rate, row.overridden) == (5, 10.0, True)
    page = client.get("/limits").text
    assert 'action="/limits/stripe/reset"' in page
    assert app.schedules.audit("limit:stripe")[0].note == "slow"
    post(client, "/limits/stripe/reset")
    (row,) = [r for r in app.storage.list_limits() if r.effective.name == "stripe"]
    assert (row.effective.concurrency, row.overridden) == (20, False)


def test_a_limit_no_worker_recorded_is_shown_and_the_page_writes_nothing(
    app: App, client: TestClient
) -> None:
    declare(app)
    page = client.get("/limits").text
    assert 'title="no worker with it has started yet">not registered</span>' in page
    assert 'action="/limits/stripe/set"' not in page
    assert app.storage.list_limits() == []  # a GET records nothing


def test_bad_input_and_a_missing_token_are_refused(app: App, client: TestClient) -> None:
    declare(app)
    assert post(client, "/limits/stripe/set", {"rate": "ten"}).status_code == 400
    assert post(client, "/limits/stripe/set", {"concurrency": "x"}).status_code == 400
    assert post(client, "/limits/nope/set", {"concurrency": "2"}).status_code == 400
    assert post(client, "/limits/stripe/set", {"concurrency": "2"}, csrf=False).status_code == 403
    (row,) = [r for r in app.storage.list_limits() if r.effective.name == "stripe"]
    assert not row.overridden


def test_the_job_page_says_what_holds_a_queued_job(app: App, client: TestClient) -> None:
    declare(app)
    app.limits.sync()
    first = app.jobs["rebuild"].enqueue("acme")
    second = app.jobs["rebuild"].enqueue("acme")
    assert [c.id for c in app.storage.claim_limited("w", "default", 5, 30)] == [first]
    page = client.get(f"/jobs/{second}").text
    assert "<h3>Why it is waiting</h3>" in page
    assert (
        "<li>limit rebuild (tenant=acme) at 1/1 running; next start when one of them ends" in page
    )
    assert "Why it is waiting" not in client.get(f"/jobs/{first}").text
