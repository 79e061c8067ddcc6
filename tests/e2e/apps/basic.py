"""An app for subprocess and CLI tests.

The database comes from $ONTHEDOT_DATABASE_URL and the lease from $ONTHEDOT_TEST_LEASE
(seconds), so a test can start workers on its own database with a short lease. Building the
App does no I/O. `make_app` builds a fresh App (the CLI calls a callable `--app` target), which
in-process CLI tests use so that every invocation gets its own App.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from onthedot import App, Backoff, current_job
from tests.records import append_record

DEADLINE = 120.0  # a blocked job gives up after this long, so no test can hang forever


def record(note: str = "", pause: float = 0.0) -> int:
    """Append `job_id attempt pid` to $ONTHEDOT_TEST_RECORD (one atomic O_APPEND write).

    `pause` seconds of sleep first make the job last long enough that one worker cannot
    start a whole batch before the others have woken."""
    if pause:
        time.sleep(pause)
    ctx = current_job()
    append_record(f"{ctx.job_id} {ctx.attempt} {os.getpid()} {note}\n")
    return ctx.attempt


def hold(marker: str) -> int:
    """First attempt: write `marker.started` (our pid) and block until killed. Later attempts
    return at once. Returns the pid that ran it."""
    if current_job().attempt == 1:
        _started(marker)
        _wait_for(Path(marker + ".never"))
        raise RuntimeError("hold: nobody killed this worker")
    return os.getpid()


def wait_release(marker: str) -> int:
    """Write `marker.started`, then wait until `marker.release` exists; return our pid."""
    _started(marker)
    _wait_for(Path(marker + ".release"))
    return os.getpid()


def greet(name: str, punctuation: str = "!") -> str:
    return f"hello {name}{punctuation}"


def fail() -> None:
    raise ValueError("always fails")


def _started(marker: str) -> None:
    """Write our pid to `marker.started` whole: a test that sees the file sees the pid (written
    beside it, then renamed; a plain write let a reader find the file still empty)."""
    partial = Path(marker + ".started.partial")
    partial.write_text(str(os.getpid()))
    partial.rename(marker + ".started")


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + DEADLINE
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.02)


def make_app(database_url: str | None = None) -> App:
    lease = float(os.environ.get("ONTHEDOT_TEST_LEASE", "30"))
    application = App(database_url, lease=lease)
    fast = Backoff(base=0.05, jitter=0)
    jobs: list[tuple[str, Any]] = [
        ("basic.record", record),
        ("basic.hold", hold),
        ("basic.wait_release", wait_release),
        ("basic.greet", greet),
    ]
    for name, fn in jobs:
        application.job(name=name, backoff=fast)(fn)
    application.job(name="basic.fail", max_attempts=2, backoff=fast)(fail)
    return application


app = make_app()
