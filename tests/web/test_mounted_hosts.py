"""Issue 24 item 6: a mounted admin (`onthedot.web.asgi(app)` in a Starlette app, and
`mount_admin` in FastAPI) checks Host by default, over real HTTP (uvicorn on a free port),
on SQLite and PostgreSQL: a page asked for under a hostile name (DNS rebinding: with the old
default that page's CSRF token let any web page post actions) gets 400; the host app opens it
explicitly with `allowed_hosts`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

import onthedot.web
from onthedot import App
from onthedot.web.security import Credentials
from tests.web.helpers import serve_asgi


def _site(app: App, **options: Any) -> Starlette:
    admin = onthedot.web.asgi(app, credentials=Credentials(), secret_key="k", **options)
    return Starlette(routes=[Mount("/admin", admin)])


def _get(base: str, host: str) -> httpx.Response:
    return httpx.get(base + "/admin/queues", headers={"Host": host}, timeout=10)


def test_a_mounted_admin_refuses_a_hostile_host_by_default(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ONTHEDOT_WEB_ALLOWED_HOSTS", raising=False)
    with serve_asgi(_site(app)) as base:
        port = base.rsplit(":", 1)[1]
        hostile = _get(base, f"attacker.example:{port}")
        assert hostile.status_code == 400
        assert "csrf_token" not in hostile.text
        assert hostile.text == (
            "host 'attacker.example' is not served here: add it to ONTHEDOT_WEB_ALLOWED_HOSTS "
            "(or asgi(..., allowed_hosts=...))\n"
        )
        for ok in (f"127.0.0.1:{port}", f"localhost:{port}"):
            assert _get(base, ok).status_code == 200, ok


def test_the_host_app_opens_its_names_explicitly(app: App) -> None:
    with serve_asgi(_site(app, allowed_hosts=["admin.example"])) as base:
        assert _get(base, "admin.example").status_code == 200
        assert _get(base, "attacker.example").status_code == 400
    with serve_asgi(_site(app, allowed_hosts=["*"])) as base:  # it checks Host itself
        assert _get(base, "anything.example").status_code == 200


def test_the_fastapi_mount_checks_host_too(app: App) -> None:
    pytest.importorskip("fastapi")
    from fastapi import FastAPI

    from onthedot.contrib.fastapi import mount_admin

    api = FastAPI()
    mount_admin(api, app, "/admin", credentials=Credentials())
    with serve_asgi(api) as base:
        assert _get(base, "attacker.example").status_code == 400
        assert _get(base, "127.0.0.1").status_code == 200
