"""Waking idle SQLite workers: `PRAGMA data_version` changes when another connection commits."""

from __future__ import annotations

import sqlite3
import threading
import time

from onthedot.storage.wakeup import Wakeup


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
