"""The brute-force limit of the web admin's credentials: per client address, after `limit`
wrong credentials within `window` seconds every request is answered 429 for a while, and each
further block lasts twice as long (up to `cap`). The table of clients is bounded."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

LIMIT = 10  # wrong credentials ...
WINDOW = 60.0  # ... within this many seconds block the client
BLOCK = 30.0  # the first block; each next one doubles
CAP = 900.0  # the longest block; also how long a client is remembered after its last failure
MAX_CLIENTS = 10_000


@dataclass(slots=True)
class _Client:
    failures: int = 0  # wrong credentials in the current window
    last: float = 0.0  # monotonic time of the last failure
    strikes: int = 0  # blocks so far (the next one lasts BLOCK * 2**strikes)
    until: float = 0.0  # blocked until this monotonic time


@dataclass(frozen=True, slots=True)
class Failure:
    """What one wrong credential led to: the failures counted, and the block (0: none)."""

    failures: int
    blocked_for: float


class LoginLimiter:
    """Per-client failure counts; not thread-safe (the ASGI event loop is its only user)."""

    def __init__(
        self,
        *,
        limit: int = LIMIT,
        window: float = WINDOW,
        block: float = BLOCK,
        cap: float = CAP,
        max_clients: int = MAX_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.window, self.block, self.cap = limit, window, block, cap
        self.max_clients = max_clients
        self.clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()

    def __len__(self) -> int:
        return len(self._clients)

    def retry_after(self, client: str) -> int:
        """Whole seconds until `client` may try again (0: not blocked)."""
        entry = self._clients.get(client)
        if entry is None:
            return 0
        left = entry.until - self.clock()
        return math.ceil(left) if left > 0 else 0

    def failed(self, client: str) -> Failure:
        """Count a wrong credential of `client`; block it when it reached the limit."""
        now = self.clock()
        entry = self._clients.pop(client, None) or _Client()
        quiet = now - max(entry.last, entry.until)  # since the last failure or block
        if quiet > self.cap:
            entry = _Client()  # quiet long enough: forgiven
        elif quiet > self.window:
            entry.failures = 0
        entry.failures += 1
        entry.last = now
        blocked_for = 0.0
        if entry.failures >= self.limit:
            blocked_for = min(self.block * 2**entry.strikes, self.cap)
            entry.strikes += 1
            entry.until = now + blocked_for
            entry.failures = self.limit - 1  # after the block, one more failure blocks again
        self._clients[client] = entry  # most recent last
        while len(self._clients) > self.max_clients:
            self._clients.popitem(last=False)  # forget the client quiet for longest
        return Failure(entry.failures if not blocked_for else self.limit, blocked_for)

    def succeeded(self, client: str) -> None:
        """Right credentials: forget the client's failures (not an active block)."""
        entry = self._clients.get(client)
        if entry is not None and entry.until <= self.clock():
            del self._clients[client]
