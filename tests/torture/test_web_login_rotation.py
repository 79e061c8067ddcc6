"""Issue 24 item 5: the login limit of a real `onthedot web` cannot be dodged by rotating
client addresses (loopback has 16 million of them). Before: 360 guesses from 40 addresses got
no 429, and failures from 10 050 other addresses pushed a blocked address out of the table.
After: the account is blocked after 10 guesses from any addresses (but for an address that
logged in with it before), everyone after 100, and a blocked address stays blocked."""

from __future__ import annotations

import base64
import socket
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from onthedot import App
from tests.torture.webproc import WebProcess, serve_web

PASSWORD = "right-horse-battery"


@pytest.fixture
def web(tmp_path: Path) -> Iterator[WebProcess]:
    url = f"sqlite:///{tmp_path}/rotation.db"
    App(url, log_events=False).migrate()
    env = {"ONTHEDOT_WEB_USER": "ann", "ONTHEDOT_WEB_PASSWORD": PASSWORD}
    with serve_web(url, tmp_path, **env) as served:
        yield served


def status(web: WebProcess, source: str, user: str, password: str) -> int:
    """The status of `GET /` with Basic credentials, sent from the address `source`."""
    parts = urlsplit(web.url)
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    request = (
        f"GET / HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Basic {basic}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(
        (parts.hostname, parts.port), timeout=30, source_address=(source, 0)
    ) as sock:
        sock.sendall(request)
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    return int(head.split(b" ", 2)[1])


def address(n: int) -> str:
    return f"127.{10 + n // 65536}.{n // 256 % 256}.{n % 256}"


def test_guesses_from_rotating_addresses_meet_the_account_limit(
    web: WebProcess, record_result: dict[str, object]
) -> None:
    owner = "127.0.0.5"
    assert status(web, owner, "ann", PASSWORD) == 200  # the owner logged in earlier
    statuses: Counter[int] = Counter()
    for n in range(360):  # 40 addresses, 9 guesses each: under the per-address limit
        statuses[status(web, address(n % 40), "ann", f"guess-{n}")] += 1
    assert statuses == {401: 10, 429: 350}, statuses
    assert status(web, address(1000), "ann", PASSWORD) == 429  # a new address: the account waits
    assert status(web, owner, "ann", PASSWORD) == 200  # its owner's address does not
    record_result.update(guesses=360, addresses=40, status=dict(statuses))


def test_failures_from_10050_addresses_do_not_unblock_an_address(
    web: WebProcess, record_result: dict[str, object]
) -> None:
    blocked = "127.0.0.2"
    first = [status(web, blocked, "ann", f"guess-{n}") for n in range(11)]
    assert first == [401] * 10 + [429]
    with ThreadPoolExecutor(4) as pool:
        flood = Counter(
            pool.map(lambda n: status(web, address(n), f"user{n}", "wrong"), range(10_050))
        )
    assert status(web, blocked, "ann", PASSWORD) == 429, flood
    assert flood[429] >= 10_050 - 100, flood  # everyone is blocked after 100 failures
    record_result.update(flood=dict(flood))
