"""The connection pool of the PostgreSQL backend, with onthedot's reconnect and reuse policy."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool, PoolTimeout

from onthedot.domain.nesting import load_stored
from onthedot.storage.postgres.prepared import PoolerSafeCursor


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def connection_kwargs(pooler: str) -> dict[str, Any]:
    """psycopg's connection options. Behind a transaction pooler, server-side prepared
    statements are off (`prepare_threshold=None` also disables the explicit `prepare=True`):
    the next transaction may run on a server connection that never saw the PREPARE."""
    kwargs: dict[str, Any] = {"autocommit": True}
    if pooler == "transaction":
        kwargs["prepare_threshold"] = None
    else:  # a transaction pooler nobody named: found at its first refusal (prepared.py)
        kwargs["cursor_factory"] = PoolerSafeCursor
    return kwargs


def _configure_pooled(conn: psycopg.Connection[Any]) -> None:
    # json/jsonb columns decoded by onthedot's one rule for stored JSON: a value nested past
    # the limit (a row written by hand or by an older version) is not handed to json.loads,
    # whose recursion would raise in the middle of a fetch (and lose the whole batch).
    set_json_loads(load_stored, conn)
    # TimeZone is one of the parameters PgBouncer tracks per client and sets again on whichever
    # server connection runs the client's next transaction, so this holds behind it too.
    conn.execute("SET TIME ZONE 'UTC'")


def configure_connection(conn: psycopg.Connection[Any]) -> None:
    """A direct (or session-pooled) connection: UTC, and no JIT. onthedot's statements are
    short index lookups; once the jobs table holds millions of rows the generic plan of a
    prepared claim is estimated above `jit_above_cost` and every claim paid ~200 ms compiling
    (docs/scaling.md, "Large tables"). Not behind a transaction pooler: the setting would
    leak to the other clients of the server connection, and there nothing is prepared, so
    each claim is planned with its real LIMIT and stays below the threshold."""
    _configure_pooled(conn)
    conn.execute("SET jit = off")


def configure_for(pooler: str) -> Callable[[psycopg.Connection[Any]], None]:
    """The new-connection callback for this pooler mode."""
    return _configure_pooled if pooler == "transaction" else configure_connection


try:  # psycopg_pool's reconnection attempt (its backoff state); private, so optional
    from psycopg_pool.base import AttemptWithBackoff as _Attempt
except ImportError:  # pragma: no cover - a psycopg_pool without it: its own backoff applies
    _Attempt = None  # type: ignore[assignment,misc]

_RECONNECT_EVERY = 2.0  # seconds: the most a lost connection waits between reconnect attempts
# The connection budget (docs/scaling.md): up to _FREE_GROWTH connections open on demand at
# once; past that a caller first waits up to _GROWTH_PATIENCE seconds for a busy connection to
# come back, and the pool grows only if none does. A worker's threads (claimer, completer,
# keeper, scheduler) each hold a connection for a millisecond or so at a time, so they share
# two instead of opening one each for good. A process where more callers wait than there are
# connections (many threads enqueueing) grows at once, up to its pool_size.
_FREE_GROWTH = 2
# Long: a starved machine keeps its threads off the CPU for hundreds of ms while they hold a
# connection, and more connections would not help them; the wait only ends a stall.
_GROWTH_PATIENCE = 2.0


if _Attempt is not None:

    class _CappedAttempt(_Attempt):
        """psycopg_pool doubles the pause between reconnect attempts without a bound below its
        5-minute give-up, so a server back after a 20 s outage waited ~10 s more for the next
        attempt (and every worker with it). Pauses here grow as before up to 1-2 s (random,
        so a fleet of workers does not reconnect in step), then stay there."""

        def update_delay(self, now: float) -> None:
            super().update_delay(now)
            if self.delay > _RECONNECT_EVERY:
                self.delay = random.uniform(_RECONNECT_EVERY / 2, _RECONNECT_EVERY)


class LifoPool(ConnectionPool):
    """psycopg_pool's pool with four changes of policy, nothing else:

    - It hands out the most recently returned idle connection (its own order is first in,
      first out, so a thread enqueueing job after job alternated between backends): one backend
      and its caches stay hot, 15-25 % more single enqueues per second here. The least recently
      used connections stay at the front, where the pool's shrinking closes them.
    - Reconnect attempts after losing the server pause at most `_RECONNECT_EVERY` seconds.
    - It keeps the reason of the latest failed connection attempt (`last_error`).
    - Past `_FREE_GROWTH` connections it grows only when a caller waited `_GROWTH_PATIENCE`
      or more callers wait than it has connections.

    They hook private methods; if a psycopg_pool release renames what they touch, the pool
    falls back to its own order and backoff."""

    last_error: BaseException | None = None  # why the latest connection attempt failed

    def _connect(self, timeout: float | None = None) -> Any:
        try:
            conn = super()._connect(timeout)
        except Exception as exc:
            self.last_error = exc
            raise
        self.last_error = None
        return conn

    _patient = threading.local()  # set while a caller waits without making the pool grow

    def getconn(self, timeout: float | None = None) -> Any:
        if getattr(self, "_nconns", 0) >= _FREE_GROWTH and timeout != 0:
            self._patient.active = True
            try:
                return super().getconn(_GROWTH_PATIENCE)
            except PoolTimeout:
                pass  # every connection stayed busy: ask again, and let the pool grow
            finally:
                self._patient.active = False
        return super().getconn(timeout)

    def _maybe_grow_pool(self) -> None:
        # Patient callers let the pool grow only once more of them wait than it has
        # connections: a queue is building (many threads enqueueing), not a moment's overlap.
        waiting = len(getattr(self, "_waiting", ()))
        if not getattr(self._patient, "active", False) or waiting > self._nconns:
            super()._maybe_grow_pool()

    def _add_connection(self, attempt: Any, growing: bool = False) -> None:
        if attempt is None and _Attempt is not None:
            attempt = _CappedAttempt(timeout=self.reconnect_timeout)
        super()._add_connection(attempt, growing)

    def _get_ready_connection(self, timeout: float | None) -> Any:
        ready = getattr(self, "_pool", None)
        if ready is not None and len(ready) > 1:
            ready.rotate(1)  # the last returned comes first; the others keep their order
        return super()._get_ready_connection(timeout)
