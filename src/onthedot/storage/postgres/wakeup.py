"""Waking idle PostgreSQL workers: LISTEN on `onthedot_jobs`."""

from __future__ import annotations

import logging
import selectors
import threading
from collections.abc import Callable
from typing import Any

from onthedot.clock import backoff_delay
from onthedot.storage.wakeup import Wakeup

log = logging.getLogger("onthedot.worker")


class PostgresWakeup(Wakeup):
    """A dedicated connection LISTENs on `onthedot_jobs`; a notification naming one of our
    queues (sent once per inserting statement) wakes the claimer.

    The claimer waits on the connection's socket and reads the notifications itself; a helper
    thread only (re)connects, with backoff, and hands each new connection over."""

    def __init__(self, connect: Callable[[], Any], queues: set[str]) -> None:
        super().__init__()
        self._connect_listener = connect
        self.queues = queues
        self._conn: Any = None  # the connection waited on (the claimer's only)
        self._fd = -1  # its socket, as registered in the selector
        self._encoding = "utf-8"  # its client encoding, for the notification payloads
        self._fresh: Any = None  # a new connection from the connector, not yet picked up
        self._connecting = False
        self._lock = threading.Lock()

    def start(self) -> None:
        super().start()
        self._reconnect()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            conns = [self._conn, self._fresh]
            self._conn = self._fresh = None
        for conn in conns:
            _close(conn)
        super().stop()

    def _reconnect(self) -> None:
        with self._lock:
            if self._connecting or self._stopped.is_set():
                return
            self._connecting = True
        threading.Thread(target=self._connect, name="onthedot-listen", daemon=True).start()

    def _connect(self) -> None:
        failures = 0
        while not self._stopped.is_set():
            conn = None
            try:
                conn = self._connect_listener()
                conn.execute("LISTEN onthedot_jobs")
            except Exception as exc:
                _close(conn)
                if self._stopped.is_set():
                    break
                delay = backoff_delay(failures, first=0.5, cap=10.0)
                failures += 1
                log.warning("LISTEN connection failed (%s); retrying in %.1fs", exc, delay)
                self._stopped.wait(delay)
                continue
            with self._lock:
                self._connecting = False
                if self._stopped.is_set():
                    _close(conn)
                    return
                self._fresh = conn
            self.wake()  # we may have missed notifications while (re)connecting
            return
        with self._lock:
            self._connecting = False

    def _wait_once(self, timeout: float) -> bool:
        if self._fresh is not None:
            self._adopt()
        return super()._wait_once(timeout)

    def _adopt(self) -> None:
        """Start waiting on the connection the connector made."""
        with self._lock:
            conn, self._fresh = self._fresh, None
        if conn is None or self._selector is None:
            return
        self._drop()
        try:
            fd = conn.fileno()
            self._encoding = conn.info.encoding
            self._selector.register(fd, selectors.EVENT_READ)
        except Exception as exc:
            _close(conn)
            log.warning("LISTEN connection unusable (%s); reconnecting", exc)
            self._reconnect()
            return
        self._conn, self._fd = conn, fd

    def _readable(self, fileobj: Any) -> bool:
        """Read what the server sent; True if a notification names one of our queues."""
        conn = self._conn
        if conn is None or fileobj != self._fd:
            return False
        pgconn = conn.pgconn
        try:
            pgconn.consume_input()
        except Exception as exc:  # connection lost: reconnect; polling covers the gap
            return self._lost(exc)
        if conn.closed:
            return self._lost("connection closed")
        woke = False
        encoding = self._encoding
        while (note := pgconn.notifies()) is not None:
            if not woke and note.extra.decode(encoding, "replace") in self.queues:
                woke = True
        return woke

    def _broken(self, exc: BaseException, timeout: float) -> bool:
        if self._conn is not None:
            return self._lost(exc)  # its socket, most likely: wait on the wake-up socket alone
        return super()._broken(exc, timeout)

    def _lost(self, why: object) -> bool:
        self._drop()
        if not self._stopped.is_set():
            log.warning("LISTEN connection failed (%s); reconnecting", why)
            self._reconnect()
        return True  # claim: notifications may have been missed

    def _drop(self) -> None:
        conn, fd = self._conn, self._fd
        self._conn, self._fd = None, -1
        if self._selector is not None and fd >= 0:
            try:
                self._selector.unregister(fd)
            except (KeyError, ValueError, OSError):
                pass
        _close(conn)


def _close(conn: Any) -> None:
    if conn is None:
        return
    try:
        conn.close()
    except Exception:
        pass
