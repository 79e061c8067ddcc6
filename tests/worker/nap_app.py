"""The app the claim-sizing tests run in real worker processes.

`nap.nap(seconds)` records its start in the `nap_started` table of the same PostgreSQL database
($NAP_DATABASE_URL, else $ONTHEDOT_DATABASE_URL), then sleeps: a test can tell jobs claimed
but not started (running, not in `nap_started`) from jobs started.
"""

from __future__ import annotations

import os
import time

import psycopg

from onthedot import App, current_job
from onthedot.observability.events import WorkerStarted

DDL = "CREATE TABLE IF NOT EXISTS nap_started (job_id bigint PRIMARY KEY, pid integer)"


def nap(seconds: float) -> None:
    url = os.environ.get("NAP_DATABASE_URL") or os.environ["ONTHEDOT_DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO nap_started VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (current_job().job_id, os.getpid()),
        )
    time.sleep(seconds)


def die_at_start(event: WorkerStarted) -> None:
    """With $NAP_DIE_AT_START=<index>, worker process <index> dies as it starts, every time
    (as a process killed at start would), before it tells its supervisor it runs."""
    if os.environ.get("NAP_DIE_AT_START") == os.environ.get("ONTHEDOT_WORKER_INDEX", "-"):
        os._exit(3)


if os.environ.get("NAP_IMPORTS"):  # a test counts the processes that import this module
    with open(os.environ["NAP_IMPORTS"], "a") as imports:
        imports.write(f"{os.getpid()}\n")

app = App(os.environ.get("ONTHEDOT_DATABASE_URL"))
app.job(name="nap.nap")(nap)
app.events.subscribe(die_at_start, WorkerStarted)
