"""Security of the web admin: credentials, the loopback rule, read-only mode, CSRF, escaping
of every job value, and the security headers."""

from __future__ import annotations

import base64
import re

import pytest

from onthedot import App
from onthedot.testing import drain
from onthedot.web.security import Credentials, check_bind, is_loopback
from tests.web.conftest import MakeClient, register_jobs
from tests.web.helpers import TestClient, flashes, post, token

XSS = [
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    '"><svg onload=alert(3)>',
    "javascript:alert(4)//",
]


def _basic(user: str, password: str) -> dict[str, str]:
    raw = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {raw}"}


# -- the loopback rule and credentials -------------------------------------------------------
@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, Credentials())


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.com", ""])
def test_other_addresses_need_credentials(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ValueError, match="refusing to serve the web admin"):
        check_bind(host, Credentials())
    check_bind(host, Credentials(user="u", password="p"))
    check_bind(host, Credentials(token="t"))


def test_credentials_from_the_environment() -> None:
    env = {"ONTHEDOT_WEB_USER": "ann", "ONTHEDOT_WEB_PASSWORD": "pw", "ONTHEDOT_WEB_TOKEN": ""}
    creds = Credentials.from_env(env)
    assert creds.configured and creds.user == "ann" and creds.token is None
    assert not Credentials.from_env({}).configured
    with pytest.raises(ValueError, match="set both"):
        Credentials.from_env({"ONTHEDOT_WEB_USER": "ann"})


def test_basic_auth(make_client: MakeClient) -> None:
    client = make_client(credentials=Credentials(user="ann", password="s3cret"))
    denied = client.get("/")
    assert denied.status_code == 401
    assert denied.headers["www-authenticate"].startswith("Basic")
    assert "content-security-policy" in denied.headers
    assert client.get("/", headers=_basic("ann", "wrong")).status_code == 401
    assert client.get("/", headers=_basic("bob", "s3cret")).status_code == 401
    assert client.get("/", headers={"Authorization": "Basic %%%"}).status_code == 401
    assert client.get("/", headers=_basic("ann", "s3cret")).status_code == 200
    assert client.get("/static/app.css").status_code == 401
    assert client.get("/metrics", headers=_basic("ann", "s3cret")).status_code == 200


def test_bearer_token_and_actor(app: App, make_client: MakeClient) -> None:
    register_jobs(app)
    client = make_client(credentials=Credentials(token="tok-123"))
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    client.headers["Authorization"] = "Bearer tok-123"
    assert client.get("/metrics").status_code == 200
    app.schedules.create("rt", "@hourly", "echo")
    post(client, "/schedules/rt/pause")
    assert app.schedules.get("rt")["paused_by"] == "web:token"


def test_basic_user_is_the_audit_actor(app: App, make_client: MakeClient) -> None:
    register_jobs(app)
    client = make_client(credentials=Credentials(user="ann", password="pw"))
    client.headers.update(_basic("ann", "pw"))
    app.schedules.create("rt", "@hourly", "echo")
    post(client, "/schedules/rt/pause", {"note": "n"})
    assert app.schedules.audit("rt")[0].actor == "web:ann"


# -- read-only --------------------------------------------------------------------------------
def test_read_only_hides_every_action_and_refuses_posts(app: App, make_client: MakeClient) -> None:
    register_jobs(app)
    failed = app.enqueue("explode", "x")
    drain(app)
    app.schedules.create("rt", "@hourly", "echo")
    client = make_client(read_only=True)
    for path in ["/", "/jobs", f"/jobs/{failed}", "/schedules", "/schedules/rt", "/queues"]:
        page = client.get(path)
        assert page.status_code == 200, path
        assert 'method="post"' not in page.text, path
        assert "hx-post" not in page.text, path
        assert "read-only" in page.text
    for url in [
        f"/jobs/{failed}/retry",
        "/jobs/bulk/delete",
        "/schedules/rt/pause",
        "/schedules/create",
        "/queues/default/pause",
    ]:
        refused = client.post(url, data={"confirm": "1"})
        assert refused.status_code == 403, url
    assert not app.schedules.get("rt")["paused"]
    job = app.get_job(failed)
    assert job is not None and job.state.value == "failed"


# -- CSRF ---------------------------------------------------------------------------------------
def test_posts_need_the_csrf_token(app: App, client: TestClient) -> None:
    app.schedules.create("rt", "@hourly", "echo")
    assert client.post("/schedules/rt/pause").status_code == 403
    assert client.post("/schedules/rt/pause", data={"csrf_token": "forged"}).status_code == 403
    good = token(client)
    other = TestClient(client.app, base_url="http://127.0.0.1")  # another browser, no cookie
    assert other.post("/schedules/rt/pause", data={"csrf_token": good}).status_code == 403
    cross = client.post(
        "/schedules/rt/pause",
        data={"csrf_token": good},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert cross.status_code == 403
    assert not app.schedules.get("rt")["paused"]
    by_header = client.post("/schedules/rt/pause", headers={"X-CSRF-Token": good})
    assert by_header.status_code == 200 and app.schedules.get("rt")["paused"]
    other.close()


def test_csrf_cookie_is_signed_http_only_and_lax(client: TestClient) -> None:
    fresh = TestClient(client.app, base_url="http://127.0.0.1")
    page = fresh.get("/queues")
    cookie = page.headers["set-cookie"]
    assert cookie.startswith("onthedot_csrf=") and "HttpOnly" in cookie
    assert "SameSite=lax" in cookie or "samesite=lax" in cookie.lower()
    value = cookie.split(";")[0].split("=", 1)[1].strip('"')
    field = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert field and value.startswith(field.group(1) + ".")  # the token, then its signature
    assert f'"X-CSRF-Token": "{field.group(1)}"' in page.text  # htmx sends it as a header
    again = fresh.get("/jobs")
    assert "set-cookie" not in again.headers  # one token per session
    fresh.close()


# -- escaping ------------------------------------------------------------------------------------
def test_every_job_value_is_escaped(app: App, client: TestClient) -> None:
    ok = app.resolve("echo").enqueue_with([XSS], queue="<q>", unique_key=XSS[0])
    bad = app.enqueue("explode", XSS[1])
    drain(app, queues=["<q>", "default"])
    app.schedules.create(XSS[2], "@hourly", "echo", args=[XSS[3]])
    app.schedules.pause(XSS[2], note=XSS[0], actor=XSS[1])
    pages = [
        "/",
        "/jobs",
        f"/jobs/{ok}",
        f"/jobs/{bad}",
        "/schedules",
        "/queues",
        "/jobs?" + "search=%3Cimg",
        "/schedules/%22%3E%3Csvg%20onload=alert(3)%3E",
    ]
    for path in pages:
        page = client.get(path)
        assert page.status_code == 200, path
        for probe in ("<img src=x", "<script>alert", "<svg onload", "<q>"):
            assert probe not in page.text, (path, probe)
    job_page = client.get(f"/jobs/{bad}").text
    assert "RuntimeError: &lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in job_page
    metrics = client.get("/metrics").text
    assert 'queue="<q>"' in metrics  # plain text, not HTML: labels escaped the Prometheus way


def test_flash_messages_are_escaped(app: App, client: TestClient) -> None:
    app.schedules.create("<b>k</b>", "@hourly", "echo")
    page = post(client, "/schedules/%3Cb%3Ek%3C/b%3E/pause")
    assert ("ok", "paused <b>k</b>") in flashes(page.text)
    assert "<b>k</b>" not in page.text


def test_next_cannot_redirect_elsewhere(app: App, client: TestClient) -> None:
    app.schedules.create("rt", "@hourly", "echo")
    for target in ["https://evil.example/", "//evil.example/", "/\\evil.example", "javascript:x"]:
        page = post(client, "/schedules/rt/trigger", {"next": target}, follow=False)
        assert page.status_code == 303
        assert page.headers["location"] == "/schedules/rt", target
    page = post(client, "/schedules/rt/trigger", {"next": "/jobs?state=queued"}, follow=False)
    assert page.headers["location"] == "/jobs?state=queued"


# -- headers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/", "/jobs", "/static/htmx.min.js", "/nope", "/metrics"])
def test_security_headers_everywhere(client: TestClient, path: str) -> None:
    page = client.get(path)
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "same-origin"
    assert page.headers["x-frame-options"] == "DENY"


def test_pages_have_no_inline_script_or_style(app: App, client: TestClient) -> None:
    app.schedules.create("rt", "@hourly", "echo")
    for path in ["/", "/jobs", "/schedules", "/schedules/rt", "/workers", "/queues"]:
        text = client.get(path).text
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), path
        assert " style=" not in text and "<style" not in text, path
        assert not re.search(r"\son[a-z]+=", text), path
