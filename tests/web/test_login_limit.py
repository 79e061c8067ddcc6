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
    limiter = LoginLimiter(clock=clock, account_limit=1000, global_limit=1000)
    for _ in range(9):
        assert limiter.failed("a", "ann").blocked_for == 0
    assert limiter.failed("a", "ann").blocked_for == 30
    assert limiter.retry_after("a") == 30 and limiter.retry_after("b") == 0
    clock.now += 31
    assert limiter.retry_after("a") == 0
    assert limiter.failed("a", "ann").blocked_for == 60  # one more failure: blocked again, twice
    clock.now += 61
    assert limiter.failed("a", "ann").blocked_for == 120
    clock.now += 121
    limiter.succeeded("a")
    assert limiter.failed("a", "ann").blocked_for == 0  # forgiven after the right password


def test_failures_spread_over_more_than_a_minute_do_not_block() -> None:
    clock = Clock()
    limiter = LoginLimiter(clock=clock)
    for _ in range(50):
        assert limiter.failed("a", "ann").blocked_for == 0
        clock.now += 61


def test_the_table_of_clients_is_bounded() -> None:
    limiter = LoginLimiter(max_clients=100, clock=Clock())
    for n in range(10_000):
        limiter.failed(f"10.0.{n // 256}.{n % 256}", "ann")
    assert len(limiter) == 100


def test_rotating_addresses_meets_the_account_limit_but_not_who_logged_in() -> None:
    """Issue 24 item 5: 10 guesses at one account from 10 addresses block the account, for
    every address but one that logged in with it before."""
    limiter = LoginLimiter(clock=Clock())
    limiter.succeeded("10.9.9.9")  # the owner, earlier
    failures = [limiter.failed(f"10.0.0.{n}", "ann") for n in range(10)]
    assert [f.blocked_for for f in failures] == [0] * 9 + [30]
    assert failures[-1].blocked == "account"
    assert limiter.retry_after("10.0.0.77", "ann") == 30  # a new address: blocked
    assert limiter.retry_after("10.0.0.77", "bob") == 0  # another account: not
    assert limiter.retry_after("10.9.9.9", "ann") == 0  # the owner's address: not


def test_the_global_limit_blocks_everyone_but_who_logged_in() -> None:
    limiter = LoginLimiter(clock=Clock())
    limiter.succeeded("10.9.9.9")
    blocks = [limiter.failed(f"10.1.{n // 256}.{n % 256}", f"user{n}") for n in range(100)]
    assert blocks[-1].blocked == "everyone" and blocks[-1].blocked_for == 30
    assert limiter.retry_after("10.2.0.1", "anyone") == 30
    assert limiter.retry_after("10.2.0.1") == 30  # even without credentials
    assert limiter.retry_after("10.9.9.9", "ann") == 0


def test_new_addresses_never_push_out_a_blocked_one() -> None:
    """Issue 24 item 5: failures from more addresses than the table holds drop the quiet
    ones, never the blocked one."""
    limiter = LoginLimiter(max_clients=100, account_limit=10**6, global_limit=10**6, clock=Clock())
    for _ in range(10):
        limiter.failed("10.6.6.6", "ann")
    assert limiter.retry_after("10.6.6.6") == 30
    for n in range(10_050):
        limiter.failed(f"10.0.{n // 256}.{n % 256}", "ann")
    assert len(limiter) == 100
    assert limiter.retry_after("10.6.6.6") == 30


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
