"""Helpers of the web admin's HTTP tests: a CSRF-aware client and page scraping."""

from __future__ import annotations

import html
import re
import warnings
from typing import Any

with warnings.catch_warnings():
    # Starlette's test client warns when it finds httpx instead of its successor; either works.
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

__all__ = ["TestClient", "flashes", "post", "token"]

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
