"""Issue 24 item 6: behind the documented TLS proxy (on this machine, reaching the admin at
127.0.0.1 with X-Forwarded-Proto: https) a real `onthedot web` sets its CSRF and message
cookies `Secure`; it believes those headers only from the proxies of
`--forwarded-allow-ips` (loopback by default), and with them counts a failed login under the
client's own address. Before: `onthedot web` ran uvicorn without proxy headers (no cookie was
ever Secure behind a proxy) and the message cookie was never Secure, even over HTTPS."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx

from onthedot import App
from tests.torture.harness import wait_for
from tests.torture.webproc import ROOT, clean_env, serve_web

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
HTTPS = {"X-Forwarded-Proto": "https"}


def _cookies(response: httpx.Response) -> dict[str, str]:
    """Set-Cookie lines by cookie name."""
    return {line.split("=", 1)[0]: line for line in response.headers.get_list("set-cookie")}


def _migrated(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/proxy.db"
    App(url, log_events=False).migrate()
    return url


def test_cookies_are_secure_behind_a_tls_proxy_on_loopback(tmp_path: Path) -> None:
    with (
        serve_web(_migrated(tmp_path), tmp_path) as web,
        httpx.Client(base_url=web.url, timeout=10) as client,
    ):
        page = client.get("/queues", headers=HTTPS)
        csrf = _cookies(page)["onthedot_csrf"]
        assert "Secure" in csrf and "HttpOnly" in csrf, csrf
        token = TOKEN.search(page.text)
        assert token
        # The browser talks HTTPS to the proxy, so it sends the Secure cookie back; httpx,
        # talking plain HTTP here, would not: the proxy's side of the exchange, by hand.
        cookie = csrf.split(";", 1)[0]
        done = client.post(
            "/queues/default/pause",
            data={"csrf_token": token.group(1)},
            headers={**HTTPS, "Cookie": cookie},
        )
        assert done.status_code == 303
        flash = _cookies(done)["onthedot_flash"]
        assert "Secure" in flash and "HttpOnly" in flash, flash
        plain = httpx.get(web.url + "/queues", timeout=10)  # plain HTTP: no Secure
        assert "Secure" not in _cookies(plain)["onthedot_csrf"]


def test_forwarded_headers_from_an_untrusted_address_are_ignored(tmp_path: Path) -> None:
    url = _migrated(tmp_path)
    with serve_web(url, tmp_path, "--forwarded-allow-ips", "10.9.8.7") as web:
        page = httpx.get(web.url + "/queues", headers=HTTPS, timeout=10)
        assert "Secure" not in _cookies(page)["onthedot_csrf"]
    with serve_web(url, tmp_path, "--forwarded-allow-ips", "") as web:
        page = httpx.get(web.url + "/queues", headers=HTTPS, timeout=10)
        assert "Secure" not in _cookies(page)["onthedot_csrf"]


def test_a_trusted_proxy_names_the_client_of_a_failed_login(tmp_path: Path) -> None:
    env = {"ONTHEDOT_WEB_USER": "ann", "ONTHEDOT_WEB_PASSWORD": "right-horse"}
    with serve_web(_migrated(tmp_path), tmp_path, **env) as web:
        headers = {**HTTPS, "X-Forwarded-For": "203.0.113.9"}
        reply = httpx.get(web.url + "/", headers=headers, auth=("ann", "wrong"), timeout=10)
        assert reply.status_code == 401
        wait_for(lambda: "event=web_login_failed" in web.output(), "the web_login_failed line")
        assert "client=203.0.113.9 user=ann" in web.output()


def test_a_bad_proxy_address_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "onthedot", "web", "--forwarded-allow-ips", "127.0.0.1,proxy"],
        cwd=ROOT,
        env=clean_env(_migrated(tmp_path)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: Invalid value for --forwarded-allow-ips: 'proxy' is not an IP address or "
        "network: give the proxy's address, e.g. 127.0.0.1 or 10.0.0.0/8"
    )
