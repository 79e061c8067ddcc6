"""The brute-force limit (per client, doubling blocks, bounded table), the Host rule and the
metrics token, in-process."""

from __future__ import annotations

import pytest

from onthedot.web.hosts import HostRule, host_name, served_hosts
from onthedot.web.login_limit import LoginLimiter
from onthedot.web.security import Credentials


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ten_failures_block_and_each_next_block_doubles() -> None:
    clock = Clock()
    limiter = LoginLimiter(clock=clock)
    for _ in range(9):
        assert limiter.failed("a").blocked_for == 0
    assert limiter.failed("a").blocked_for == 30
    assert limiter.retry_after("a") == 30 and limiter.retry_after("b") == 0
    clock.now += 31
    assert limiter.retry_after("a") == 0
    assert limiter.failed("a").blocked_for == 60  # one more failure: blocked again, twice as long
    clock.now += 61
    assert limiter.failed("a").blocked_for == 120
    clock.now += 121
    limiter.succeeded("a")
    assert limiter.failed("a").blocked_for == 0  # forgiven after the right password


def test_failures_spread_over_more_than_a_minute_do_not_block() -> None:
    clock = Clock()
    limiter = LoginLimiter(clock=clock)
    for _ in range(50):
        assert limiter.failed("a").blocked_for == 0
        clock.now += 61


def test_the_table_of_clients_is_bounded() -> None:
    limiter = LoginLimiter(max_clients=100, clock=Clock())
    for n in range(10_000):
        limiter.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(limiter) == 100


@pytest.mark.parametrize(
    ("raw", "name"),
    [("Example.COM:8000", "example.com"), ("[::1]:80", "::1"), ("::1", "::1"), ("a.b.", "a.b")],
)
def test_host_names(raw: str, name: str) -> None:
    assert host_name(raw) == name


def test_host_rule() -> None:
    rule = HostRule(served_hosts("0.0.0.0", {"ONTHEDOT_WEB_ALLOWED_HOSTS": "admin.example"}))
    scope = {"server": ("192.168.1.5", 8000)}
    for ok in ("127.0.0.1:8000", "localhost", "[::1]:8000", "admin.example", "192.168.1.5:8000"):
        assert rule.refuses(ok, scope) is None, ok
    assert "not served here" in (rule.refuses("attacker.example:8000", scope) or "")
    assert HostRule(["*"]).refuses("anything.example", scope) is None


def test_the_metrics_token_is_not_an_admin_credential() -> None:
    creds = Credentials.from_env({"ONTHEDOT_WEB_METRICS_TOKEN": "m"})
    assert creds.scrapes("Bearer m") and creds.authenticate("Bearer m") is None
    assert not creds.configured  # on its own it protects nothing: the loopback rule applies
