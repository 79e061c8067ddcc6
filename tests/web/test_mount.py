"""`onthedot.web.asgi(app)` mounted inside another Starlette app: every link, form and
redirect stays under the mount point."""

from __future__ import annotations

import re

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from onthedot import App
from onthedot.web import asgi
from onthedot.web.security import Credentials
from tests.web.conftest import register_jobs
from tests.web.helpers import TestClient, flashes


def test_mounted_under_a_prefix(app: App) -> None:
    register_jobs(app)
    app.schedules.create("rt", "@hourly", "echo")

    async def home(request: object) -> PlainTextResponse:
        return PlainTextResponse("the user's own app")

    site = Starlette(
        routes=[
            Route("/", home),
            Mount("/admin", asgi(app, credentials=Credentials(), secret_key="k")),
        ]
    )
    with TestClient(site, base_url="http://127.0.0.1") as client:
        assert client.get("/").text == "the user's own app"
        page = client.get("/admin/schedules")
        assert page.status_code == 200
        links = re.findall(r'(?:href|action|src|hx-post)="([^"]+)"', page.text)
        local = [u for u in links if u.startswith("/")]
        assert local and all(u.startswith("/admin/") for u in local), local
        assert "path=/admin" in page.headers["set-cookie"].replace("Path", "path")
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert csrf
        done = client.post(
            "/admin/schedules/rt/pause",
            data={"csrf_token": csrf.group(1)},
            follow_redirects=False,
        )
        assert done.status_code == 303 and done.headers["location"] == "/admin/schedules/rt"
        shown = client.get(done.headers["location"])
        assert ("ok", "paused rt") in flashes(shown.text)
        assert client.get("/admin/static/app.css").status_code == 200
        assert client.get("/admin/nope").status_code == 404
