"""Waking idle workers: LISTEN/NOTIFY on PostgreSQL, `PRAGMA data_version` on SQLite.

Either way the worker also polls, so a lost notification costs at most one poll interval.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from typing import Any

log = logging.getLogger("onthedot.worker")


class Wakeup:
    """An event set when new work may be ready, plus the thread that watches the database."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="onthedot-wakeup", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.event.set()

    def wait(self, timeout: float) -> bool:
        woke = self.event.wait(timeout)
        self.event.clear()
        return woke

    def _run(self) -> None:  # pragma: no cover - overridden
        pass


class PostgresWakeup(Wakeup):
    """A dedicated connection LISTENs on `onthedot_jobs`; a notification naming one of our
    queues (sent once per inserting statement) sets the event."""

    def __init__(self, storage: Any, queues: set[str]) -> None:
        super().__init__()
        self.storage = storage
        self.queues = queues

    def _run(self) -> None:
        delay = 0.5
        while not self._stop.is_set():
            conn = None
            try:
                conn = self.storage.connect_listener()
                conn.execute("LISTEN onthedot_jobs")
                self.event.set()  # we may have missed notifications while (re)connecting
                delay = 0.5
                while not self._stop.is_set():
                    for note in conn.notifies(timeout=1.0):
                        if note.payload in self.queues:
                            self.event.set()
            except Exception as exc:  # connection lost: reconnect with backoff; polling covers
                if self._stop.is_set():
                    break
                log.warning("LISTEN connection failed (%s); retrying in %.1fs", exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)
            finally:
                if conn is not None:
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

    def _run(self) -> None:
        if self.path == ":memory:":
            return  # one process: in-process enqueues wake the worker directly
        conn: sqlite3.Connection | None = None
        last = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                version = conn.execute("PRAGMA data_version").fetchone()[0]
                if last is not None and version != last:
                    self.event.set()
                last = version
            except sqlite3.Error:
                conn = None
                time.sleep(0.5)
            self._stop.wait(self.interval)
        if conn is not None:
            conn.close()
