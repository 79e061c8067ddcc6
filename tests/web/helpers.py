"""Helpers of the web admin's HTTP tests: a CSRF-aware client and page scraping."""

from __future__ import annotations

import html
import re
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

with warnings.catch_warnings():
    # Starlette's test client warns when it finds httpx instead of its successor; either works.
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

__all__ = ["TestClient", "flashes", "post", "serve_asgi", "token"]

_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
_FLASH = re.compile(r'<p class="flash flash-(ok|error)" role="status">(.*?)</p>', re.S)


def token(client: TestClient, path: str = "/queues") -> str:
    """The session's CSRF token, read from a page's form (the cookie is kept by the client)."""
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = _TOKEN.search(page.text)
    assert found, "no CSRF field on the page"
    return found.group(1)


def post(
    client: TestClient,
    url: str,
    data: dict[str, Any] | None = None,
    *,
    htmx: bool = False,
    follow: bool = True,
    csrf: bool = True,
) -> Any:
    """POST a form with the session's CSRF token (as an htmx request when asked)."""
    body = dict(data or {})
    if csrf:
        body.setdefault("csrf_token", token(client))
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(url, data=body, headers=headers, follow_redirects=follow)


def flashes(text: str) -> list[tuple[str, str]]:
    """(kind, message) of the flash messages shown on a page, unescaped."""
    return [(kind, html.unescape(msg)) for kind, msg in _FLASH.findall(text)]


@contextmanager
def serve_asgi(asgi_app: Any) -> Iterator[str]:
    """`asgi_app` served by a real uvicorn in a thread on a free loopback port; its base URL."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        asgi_app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", ws="none"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
