"""Waking idle workers: LISTEN/NOTIFY on PostgreSQL, `PRAGMA data_version` on SQLite.

The claimer sleeps in `Wakeup.wait`, a selector on a local wake-up socket (in-process enqueues,
stop, the SQLite watcher) and, on PostgreSQL, on the LISTEN connection itself: a notification
wakes the thread that claims, with no other thread in between. Either way the worker also
polls, so a lost notification costs at most one poll interval.
"""

from __future__ import annotations

import logging
import selectors
import socket
import sqlite3
import threading
import time
from typing import Any

log = logging.getLogger("onthedot.worker")


class Wakeup:
    """Wake-ups for one waiting thread: `wake()` from any thread, `wait()` from the claimer.

    A wake-up is sticky: one that comes while the claimer is busy makes its next `wait` return
    at once. The claimer calls `start()` before its first `wait` and `stop()` after its last."""

    def __init__(self) -> None:
        self._rsock: socket.socket | None = None
        self._wsock: socket.socket | None = None
        self._selector: selectors.BaseSelector | None = None
        self._pending = False  # a byte is (or is about to be) in the socket: no need for another
        self._stopped = threading.Event()

    def start(self) -> None:
        self._rsock, self._wsock = socket.socketpair()
        self._rsock.setblocking(False)
        self._wsock.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._rsock, selectors.EVENT_READ)

    def stop(self) -> None:
        self._stopped.set()
        if self._selector is not None:
            self._selector.close()
        for sock in (self._rsock, self._wsock):
            if sock is not None:
                sock.close()

    def wake(self) -> None:
        if self._pending:
            return  # the waiter is being woken, and looks for work after this point anyway
        sock = self._wsock
        if sock is None:
            return  # not started: the claimer claims once before its first wait
        self._pending = True
        try:
            sock.send(b"\0")
        except OSError:
            pass  # full (so already woken) or closed (stopped)

    def wait(self, timeout: float) -> bool:
        """Sleep until woken or `timeout` seconds pass; True if woken."""
        deadline = time.monotonic() + timeout
        while True:
            if self._wait_once(max(timeout, 0.0)):
                return True
            timeout = deadline - time.monotonic()
            if timeout <= 0 or self._stopped.is_set():
                return False

    def _wait_once(self, timeout: float) -> bool:
        """One select: True if woken; False on timeout or on notifications for other queues."""
        selector = self._selector
        if selector is None or self._stopped.is_set():
            self._stopped.wait(timeout)
            return self._stopped.is_set()
        try:
            events = selector.select(timeout)
        except (OSError, ValueError) as exc:  # a file closed under the selector
            return self._broken(exc, timeout)
        woke = False
        for key, _ in events:
            if key.fileobj is self._rsock:
                self._drain()
                woke = True
            elif self._readable(key.fileobj):
                woke = True
        return woke

    def _readable(self, fileobj: Any) -> bool:
        """Another registered file is readable; True if that means new work (subclasses)."""
        return True

    def _broken(self, exc: BaseException, timeout: float) -> bool:
        """The select failed: wait a little (no busy loop), then claim as if woken."""
        if not self._stopped.is_set():
            log.warning("waiting for wake-ups failed (%s)", exc)
        self._stopped.wait(min(timeout, 0.1))
        return True

    def _drain(self) -> None:
        rsock = self._rsock
        try:
            while rsock is not None and rsock.recv(4096):
                pass
        except OSError:
            pass  # empty (BlockingIOError) or closed
        # Only now: a wake() between the recv and here leaves its byte for the next wait.
        self._pending = False


class PostgresWakeup(Wakeup):
    """A dedicated connection LISTENs on `onthedot_jobs`; a notification naming one of our
    queues (sent once per inserting statement) wakes the claimer.

    The claimer waits on the connection's socket and reads the notifications itself; a helper
    thread only (re)connects, with backoff, and hands each new connection over."""

    def __init__(self, storage: Any, queues: set[str]) -> None:
        super().__init__()
        self.storage = storage
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
        delay = 0.5
        while not self._stopped.is_set():
            conn = None
            try:
                conn = self.storage.connect_listener()
                conn.execute("LISTEN onthedot_jobs")
            except Exception as exc:
                _close(conn)
                if self._stopped.is_set():
                    break
                log.warning("LISTEN connection failed (%s); retrying in %.1fs", exc, delay)
                self._stopped.wait(delay)
                delay = min(delay * 2, 10.0)
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


class SqliteWakeup(Wakeup):
    """Polls `PRAGMA data_version`, which changes when another connection commits. The check
    reads shared memory only, so polling every few milliseconds costs next to nothing."""

    def __init__(self, path: str, interval: float = 0.005) -> None:
        super().__init__()
        self.path = path
        self.interval = interval

    def start(self) -> None:
        super().start()
        if self.path != ":memory:":  # one process: in-process enqueues wake the worker directly
            threading.Thread(target=self._run, name="onthedot-wakeup", daemon=True).start()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        last = None
        while not self._stopped.is_set():
            try:
                if conn is None:
                    conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                version = conn.execute("PRAGMA data_version").fetchone()[0]
                if last is not None and version != last:
                    self.wake()
                last = version
            except sqlite3.Error:
                conn = None
                time.sleep(0.5)
            self._stopped.wait(self.interval)
        if conn is not None:
            conn.close()
