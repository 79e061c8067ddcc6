"""The app of the many-processes test (`python -m onthedot --app tests.torture.many_app:app
worker`): light jobs that record each execution, and one declared schedule that is never due
while a test runs (`every 1h`), so an idle fleet still runs its scheduler ticks.

Configuration from the environment: $ONTHEDOT_DATABASE_URL, $ONTHEDOT_TEST_LEASE (seconds,
default 30: the default lease) and $ONTHEDOT_TEST_RECORD, the file every execution appends
`job_id attempt pid` to, in one `O_APPEND` write (atomic for a line this short), so a second
run of the same attempt shows as a second line whichever process ran it.
"""

from __future__ import annotations

import os

from onthedot import App, current_job
from tests.records import append_record

HOURLY = "hourly"


def _record() -> None:
    ctx = current_job()
    append_record(f"{ctx.job_id} {ctx.attempt} {os.getpid()}\n")


def noop(n: int) -> int:
    """A light job: records its execution and returns."""
    _record()
    return n


def tick() -> None:
    """A scheduled job: records its execution."""
    _record()


def make_app(database_url: str | None = None, *, log_events: bool = True) -> App:
    application = App(
        database_url,
        lease=float(os.environ.get("ONTHEDOT_TEST_LEASE", "30")),
        log_events=log_events,
    )
    application.job(name="many.noop", max_attempts=3)(noop)
    tick_job = application.job(name="many.tick", max_attempts=3, runtime=True)(tick)
    application.schedule(HOURLY, "every 1h", tick_job)
    return application


app = make_app()
