"""A real FastAPI app run through its lifespan: onthedot's pool opened at startup and closed at
shutdown, `aenqueue` from a request handler, and the web admin mounted under a path behind the
host app's own auth check."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

pytest.importorskip("fastapi")

from fastapi import FastAPI, HTTPException, Request

import onthedot
from onthedot.contrib.fastapi import lifespan, mount_admin
from onthedot.domain.errors import SchemaOutOfDate
from tests.web.helpers import TestClient


def require_staff(request: Request) -> None:
    """The host app's own auth: an `X-Staff` header stands in for a session check."""
    if request.headers.get("x-staff") != "yes":
        raise HTTPException(status_code=401, detail="staff only")


@pytest.fixture
def jobs(db_url: str) -> Iterator[onthedot.App]:
    app = onthedot.App(db_url, log_events=False)
    app.migrate()
    yield app
    app.close()


def build(jobs: onthedot.App) -> tuple[FastAPI, list[str]]:
    seen: list[str] = []

    @jobs.job
    def send_welcome(user_id: int) -> None: ...

    @contextlib.asynccontextmanager
    async def inner(api: FastAPI) -> AsyncIterator[None]:
        seen.append("inner up")
        yield
        seen.append("inner down")

    api = FastAPI(lifespan=lifespan(jobs, inner))

    @api.post("/signup/{user_id}")
    async def signup(user_id: int) -> dict[str, int]:
        return {"job": await send_welcome.aenqueue(user_id)}

    mount_admin(api, jobs, "/admin/jobs", guard=require_staff)
    return api, seen


def test_lifespan_enqueue_and_guarded_admin(jobs: onthedot.App) -> None:
    api, seen = build(jobs)
    with TestClient(api) as client:
        assert seen == ["inner up"]
        job_id = client.post("/signup/42").json()["job"]
        job = jobs.get_job(job_id)
        assert job is not None and job.args == [42]

        assert client.get("/admin/jobs/").status_code == 401
        page = client.get("/admin/jobs/", headers={"X-Staff": "yes"})
        assert page.status_code == 200 and "/admin/jobs/static/" in page.text
        listing = client.get("/admin/jobs/jobs", headers={"X-Staff": "yes"})
        assert listing.status_code == 200 and "send_welcome" in listing.text
    assert seen == ["inner up", "inner down"]


def test_admin_credentials_still_apply(jobs: onthedot.App) -> None:
    api = FastAPI(lifespan=lifespan(jobs))
    creds = onthedot.web.Credentials(user="ops", password="pw")
    mount_admin(api, jobs, "/ops", credentials=creds)
    with TestClient(api) as client:
        assert client.get("/ops/").status_code == 401
        token = base64.b64encode(b"ops:pw").decode()
        assert client.get("/ops/", headers={"Authorization": f"Basic {token}"}).status_code == 200


def test_startup_fails_on_an_unmigrated_postgres(pg_url: str) -> None:
    app = onthedot.App(pg_url, log_events=False)
    api = FastAPI(lifespan=lifespan(app))
    with pytest.raises(SchemaOutOfDate), TestClient(api):
        pass


def test_example_app(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONTHEDOT_DATABASE_URL", f"sqlite:///{tmp_path}/example.db")
    from examples import fastapi_app

    with TestClient(fastapi_app.api) as client:
        job_id = client.post("/users/7/welcome").json()["job"]
        assert client.get("/admin/jobs/").status_code == 401
        ok = client.get(f"/admin/jobs/jobs/{job_id}", headers={"X-Staff-Token": "change-me"})
        assert ok.status_code == 200 and "send_welcome" in ok.text
