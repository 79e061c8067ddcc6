"""DNS rebinding and cross-origin posts against a real `onthedot web` on 127.0.0.1 without
credentials: a page asked for under another Host name (what a browser sends after a hostile
name was re-pointed at 127.0.0.1) is refused with one line, so its CSRF token never leaks
and a post cannot pause a queue; an unsafe request from another Origin (or Referer) is
refused; the names of $ONTHEDOT_WEB_ALLOWED_HOSTS are served."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from onthedot import App
from tests.torture.webproc import WebProcess, serve_web

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[App, WebProcess]]:
    url = f"sqlite:///{tmp_path}/rebind.db"
    app = App(url, log_events=False)
    app.migrate()
    with serve_web(url, tmp_path, ONTHEDOT_WEB_ALLOWED_HOSTS="admin.example") as web:
        yield app, web
    app.close()


def _paused(app: App) -> bool:
    return any(q.paused for q in app.queue_stats())


def _attack(web: WebProcess, host: str, origin: str | None) -> tuple[int, int]:
    """A rebinding attack: GET a page (and its CSRF token) under `host`, then POST a pause
    with it. Returns both status codes."""
    with httpx.Client(base_url=web.url, timeout=10) as client:
        page = client.get("/queues", headers={"Host": host})
        found = TOKEN.search(page.text)
        token = found.group(1) if found else ""
        headers = {"Host": host, **({"Origin": origin} if origin else {})}
        posted = client.post("/queues/default/pause", data={"csrf_token": token}, headers=headers)
    return page.status_code, posted.status_code


def test_other_host_names_are_refused(
    served: tuple[App, WebProcess], record_result: dict[str, object]
) -> None:
    app, web = served
    port = web.url.rsplit(":", 1)[1]
    attacker = f"attacker.example:{port}"
    statuses = _attack(web, attacker, f"http://{attacker}")
    assert statuses == (400, 400), statuses
    assert not _paused(app), "a rebinding attack paused the queue"
    refused = httpx.get(web.url + "/", headers={"Host": attacker}, timeout=10)
    assert refused.text.count("\n") == 1 and "attacker.example" in refused.text, refused.text
    assert "content-security-policy" in refused.headers
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "admin.example"):
        assert httpx.get(web.url + "/", headers={"Host": host}, timeout=10).status_code == 200
    # A name of the allow-list is served, and its own posts are accepted.
    assert _attack(web, "admin.example", "http://admin.example") == (200, 303)
    assert _paused(app)
    record_result.update(refused=statuses, allowed_hosts=4)


def test_posts_from_another_origin_are_refused(
    served: tuple[App, WebProcess], record_result: dict[str, object]
) -> None:
    app, web = served
    here = web.url.removeprefix("http://")
    with httpx.Client(base_url=web.url, timeout=10) as client:
        found = TOKEN.search(client.get("/queues").text)
        assert found
        token = found.group(1)
        statuses = {}
        for name, headers in {
            "other origin": {"Origin": "http://evil.example"},
            "other port": {"Origin": "http://127.0.0.1:1"},
            "null origin": {"Origin": "null"},
            "other referer": {"Referer": "http://evil.example/page"},
        }.items():
            reply = client.post(
                "/queues/default/pause", data={"csrf_token": token}, headers=headers
            )
            statuses[name] = reply.status_code
            assert reply.status_code == 403 and "cross-origin" in reply.text, (name, reply.text)
        assert not _paused(app)
        same = client.post(
            "/queues/default/pause",
            data={"csrf_token": token},
            headers={"Origin": f"http://{here}", "Referer": f"http://{here}/queues"},
        )
        assert same.status_code == 303
    assert _paused(app)
    record_result.update(refused=statuses)
