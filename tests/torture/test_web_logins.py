"""Credentials of a real `onthedot web`: 500 wrong Basic-auth passwords from one client are
answered 429 with Retry-After after the first 10 and logged as `web_login_failed` events
(never the password); another client address that logged in before is unaffected, a new one
meets the account's block. The scrape token
($ONTHEDOT_WEB_METRICS_TOKEN) reads /metrics and nothing else; the admin token still works."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from onthedot import App
from tests.torture.harness import wait_for
from tests.torture.webproc import WebProcess, serve_web

PASSWORD = "right-horse-battery"
SCRAPE = "scrape-0nly"
ADMIN = "admin-t0ken"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[App, WebProcess]]:
    url = f"sqlite:///{tmp_path}/logins.db"
    app = App(url, log_events=False)
    app.migrate()
    with serve_web(
        url,
        tmp_path,
        ONTHEDOT_WEB_USER="ann",
        ONTHEDOT_WEB_PASSWORD=PASSWORD,
        ONTHEDOT_WEB_TOKEN=ADMIN,
        ONTHEDOT_WEB_METRICS_TOKEN=SCRAPE,
    ) as web:
        yield app, web
    app.close()


def test_wrong_passwords_are_limited_and_logged(
    served: tuple[App, WebProcess], record_result: dict[str, object]
) -> None:
    _, web = served
    other = httpx.HTTPTransport(local_address="127.0.0.2")  # another client address
    with httpx.Client(base_url=web.url, transport=other, timeout=10) as client:
        assert client.get("/", auth=("ann", PASSWORD)).status_code == 200  # logged in before
    statuses: Counter[int] = Counter()
    first_429 = None
    started = time.monotonic()
    with httpx.Client(base_url=web.url, timeout=10) as client:
        for n in range(500):
            reply = client.get("/", auth=("ann", f"guess-{n}"))
            statuses[reply.status_code] += 1
            if reply.status_code == 429 and first_429 is None:
                first_429 = n
                assert int(reply.headers["retry-after"]) >= 1
        elapsed = time.monotonic() - started
        # Blocked: even the right password waits (else the block would reveal a good guess).
        assert client.get("/", auth=("ann", PASSWORD)).status_code == 429
    assert first_429 == 10 and statuses == {401: 10, 429: 490}, statuses
    other = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=web.url, transport=other, timeout=10) as client:
        assert client.get("/", auth=("ann", PASSWORD)).status_code == 200
    fresh = httpx.HTTPTransport(local_address="127.0.0.3")  # never logged in: the account waits
    with httpx.Client(base_url=web.url, transport=fresh, timeout=10) as client:
        assert client.get("/", auth=("ann", PASSWORD)).status_code == 429

    def failures() -> list[str]:
        return [line for line in web.output().splitlines() if "event=web_login_failed" in line]

    wait_for(lambda: len(failures()) >= 10, "ten web_login_failed lines")
    logged = failures()
    assert len(logged) == 10, logged  # the blocked requests are not guesses any more
    assert all("client=127.0.0.1" in line and "user=ann" in line for line in logged), logged
    assert "blocked_for=30" in logged[-1], logged[-1]
    assert "guess-" not in web.output()
    record_result.update(
        attempts=500, status=dict(statuses), seconds=round(elapsed, 1), logged=len(logged)
    )


def test_the_scrape_token_reads_metrics_only(
    served: tuple[App, WebProcess], record_result: dict[str, object]
) -> None:
    app, web = served
    scrape = {"Authorization": f"Bearer {SCRAPE}"}
    with httpx.Client(base_url=web.url, timeout=10) as client:
        metrics = client.get("/metrics", headers=scrape)
        assert metrics.status_code == 200 and "onthedot_jobs" in metrics.text
        refused = {
            path: client.get(path, headers=scrape).status_code
            for path in ("/", "/queues", "/jobs", "/schedules")
        }
        assert set(refused.values()) == {403}, refused
        posted = client.post("/queues/default/pause", headers=scrape)
        assert posted.status_code == 403
        assert not any(q.paused for q in app.queue_stats())
        admin = {"Authorization": f"Bearer {ADMIN}"}
        assert client.get("/queues", headers=admin).status_code == 200
        assert client.get("/metrics", headers=admin).status_code == 200
    record_result.update(metrics=200, pages=refused, post=posted.status_code)
