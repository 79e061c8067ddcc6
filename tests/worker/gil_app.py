"""The app of tests/worker/test_gil_watchdog.py: jobs that hold the GIL in one C call.

`ctypes.PyDLL` calls a C function *without* releasing the GIL (unlike `ctypes.CDLL`), so
`libc.sleep(n)` stops every other thread of the process for n seconds: the keeper cannot
enforce the timeout nor extend the lease, as with a regular expression that backtracks or a
C extension's long loop. Each run records its start and, if it lives, its end in `gil_runs`
(PostgreSQL, $ONTHEDOT_DATABASE_URL).
"""

from __future__ import annotations

import ctypes
import os

import psycopg

from onthedot import App, current_job

DDL = (
    "CREATE TABLE IF NOT EXISTS gil_runs (job_id bigint, attempt integer, pid integer, "
    "started_at timestamptz DEFAULT clock_timestamp(), ended_at timestamptz)"
)

app = App(os.environ.get("ONTHEDOT_DATABASE_URL"), lease=float(os.environ.get("GIL_LEASE", "30")))


def _hold(seconds: int) -> None:
    ctx = current_job()
    url = os.environ["ONTHEDOT_DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "INSERT INTO gil_runs (job_id, attempt, pid) VALUES (%s, %s, %s) RETURNING ctid",
            (ctx.job_id, ctx.attempt, os.getpid()),
        ).fetchone()
        assert row is not None
        ctypes.PyDLL(None).sleep(seconds)  # one C call holding the GIL
        conn.execute("UPDATE gil_runs SET ended_at = clock_timestamp() WHERE ctid = %s", row)


@app.job(name="gil.timed", timeout=2, max_attempts=2, backoff=0.2)
def timed(seconds: int) -> None:
    _hold(seconds)


@app.job(name="gil.untimed", max_attempts=2, backoff=0.2)
def untimed(seconds: int) -> None:
    _hold(seconds)


@app.job(name="gil.quick", timeout=5)
def quick() -> None:
    pass
