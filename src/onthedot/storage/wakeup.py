"""Waking idle workers: the generic wake-up; each backend's storage subclasses it
(`Storage.wakeup`): LISTEN/NOTIFY on PostgreSQL, `PRAGMA data_version` on SQLite.

The claimer sleeps in `Wakeup.wait`, a selector on a local wake-up socket (in-process enqueues,
stop, the SQLite watcher) and, on PostgreSQL, on the LISTEN connection itself: a notification
wakes the thread that claims, with no other thread in between. Either way the worker also
polls, so a lost notification costs at most one poll interval.
"""

from __future__ import annotations

import logging
import selectors
import socket
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
