"""The brute-force limit of the web admin's credentials, counted three ways so that rotating
client addresses gains nothing:

- per client address: after `limit` wrong credentials within `window` seconds every request
  from it is answered 429 for a while;
- per account (the user name a Basic header claims, `token` for a bearer token): after
  `account_limit` wrong credentials within the window, from any addresses, that account is
  blocked for everyone but the addresses that logged in with it recently;
- for everyone: after `global_limit` wrong credentials within the window, every request is
  answered 429, again but from those recent addresses.

Each further block of the same kind lasts twice as long (up to `cap`). The tables are
bounded, and new keys never push out a key that is blocked: they drop the quiet ones first.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

LIMIT = 10  # wrong credentials from one address ...
ACCOUNT_LIMIT = 10  # ... or for one account, from any addresses ...
GLOBAL_LIMIT = 100  # ... or from everyone ...
WINDOW = 60.0  # ... within this many seconds block
BLOCK = 30.0  # the first block; each next one doubles
CAP = 900.0  # the longest block; also how long a key is remembered after its last failure
MAX_CLIENTS = 10_000  # addresses (and accounts) remembered
MAX_TRUSTED = 1_000  # addresses that logged in recently
EVERYONE = "*"


@dataclass(slots=True)
class _Entry:
    failures: int = 0  # wrong credentials in the current window
    last: float = 0.0  # monotonic time of the last failure
    strikes: int = 0  # blocks so far (the next one lasts BLOCK * 2**strikes)
    until: float = 0.0  # blocked until this monotonic time


@dataclass(frozen=True, slots=True)
class Failure:
    """What one wrong credential led to: the failures of its address, and the longest block
    it started (0: none) with what is blocked (`address`, `account`, `everyone`)."""

    failures: int
    blocked_for: float
    blocked: str | None = None


class _Counts:
    """Failure counts per key with doubling blocks; at most `max_keys` keys, dropping first
    the key quiet for longest that is not blocked."""

    def __init__(self, limit: int, window: float, block: float, cap: float, max_keys: int) -> None:
        self.limit, self.window, self.block, self.cap = limit, window, block, cap
        self.max_keys = max_keys
        self.entries: OrderedDict[str, _Entry] = OrderedDict()

    def retry_after(self, key: str, now: float) -> float:
        entry = self.entries.get(key)
        return max(entry.until - now, 0.0) if entry is not None else 0.0

    def failed(self, key: str, now: float) -> tuple[int, float]:
        """Count a failure of `key`: (its failures now, the block it starts or 0)."""
        entry = self.entries.pop(key, None) or _Entry()
        quiet = now - max(entry.last, entry.until)  # since the last failure or block
        if quiet > self.cap:
            entry = _Entry()  # quiet long enough: forgiven
        elif quiet > self.window:
            entry.failures = 0
        entry.failures += 1
        entry.last = now
        blocked_for = 0.0
        if entry.failures >= self.limit:
            blocked_for = min(self.block * 2 ** min(entry.strikes, 32), self.cap)
            entry.strikes += 1
            entry.until = now + blocked_for
            entry.failures = self.limit - 1  # after the block, one more failure blocks again
        self.entries[key] = entry  # most recent last
        self._bound(now)
        return (entry.failures if not blocked_for else self.limit), blocked_for

    def forget(self, key: str, now: float) -> None:
        entry = self.entries.get(key)
        if entry is not None and entry.until <= now:
            del self.entries[key]

    def _bound(self, now: float) -> None:
        while len(self.entries) > self.max_keys:
            quiet = next((k for k, e in self.entries.items() if e.until <= now), None)
            # All blocked (the global limit has long been reached): drop the oldest block.
            del self.entries[quiet if quiet is not None else next(iter(self.entries))]


class LoginLimiter:
    """Wrong credentials counted per address, per account and for everyone; not thread-safe
    (the ASGI event loop is its only user)."""

    def __init__(
        self,
        *,
        limit: int = LIMIT,
        account_limit: int = ACCOUNT_LIMIT,
        global_limit: int = GLOBAL_LIMIT,
        window: float = WINDOW,
        block: float = BLOCK,
        cap: float = CAP,
        max_clients: int = MAX_CLIENTS,
        max_trusted: int = MAX_TRUSTED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.clients = _Counts(limit, window, block, cap, max_clients)
        self.accounts = _Counts(account_limit, window, block, cap, max_clients)
        self.everyone = _Counts(global_limit, window, block, cap, 1)
        self.cap, self.max_trusted = cap, max_trusted
        self._trusted: OrderedDict[str, float] = OrderedDict()  # address -> last login

    def __len__(self) -> int:
        return len(self.clients.entries)

    def retry_after(self, client: str, account: str | None = None) -> int:
        """Whole seconds until `client` may try again as `account` (0: not blocked)."""
        now = self.clock()
        left = self.clients.retry_after(client, now)
        if not self._trusts(client, now):
            left = max(
                left,
                self.accounts.retry_after(account, now) if account else 0.0,
                self.everyone.retry_after(EVERYONE, now),
            )
        return math.ceil(left) if left > 0 else 0

    def failed(self, client: str, account: str) -> Failure:
        """Count a wrong credential of `client` claiming `account`."""
        now = self.clock()
        failures, by_address = self.clients.failed(client, now)
        _, by_account = self.accounts.failed(account, now)
        _, by_everyone = self.everyone.failed(EVERYONE, now)
        blocks = [(by_address, "address"), (by_account, "account"), (by_everyone, "everyone")]
        longest, what = max(blocks)
        return Failure(failures, longest, what if longest else None)

    def succeeded(self, client: str) -> None:
        """Right credentials: forget the address's failures (not an active block) and trust it
        through account and global blocks for a while. The account's failures are kept: its
        owner logging in must not reset an attacker's count."""
        now = self.clock()
        self.clients.forget(client, now)
        self._trusted.pop(client, None)
        self._trusted[client] = now
        while len(self._trusted) > self.max_trusted:
            self._trusted.popitem(last=False)

    def _trusts(self, client: str, now: float) -> bool:
        since = self._trusted.get(client)
        return since is not None and now - since <= self.cap
