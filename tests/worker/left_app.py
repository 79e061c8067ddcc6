"""The app of tests/worker/test_left_threads.py: a job that leaves a non-daemon thread
running for ever (a user's background flusher, a forgotten executor)."""

from __future__ import annotations

import os
import threading
import time

from onthedot import App

app = App(os.environ.get("ONTHEDOT_DATABASE_URL"))


def _spin() -> None:
    while True:
        time.sleep(0.05)


@app.job(name="left.start_thread")
def start_thread() -> str:
    # daemon=False given: a thread started from the worker's (daemon) thread is one by default
    threading.Thread(target=_spin, name="left-behind-by-a-job", daemon=False).start()
    return "started"
