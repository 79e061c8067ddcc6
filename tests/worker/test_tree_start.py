"""Issue 25 item 6, what can be checked without a clock: the supervisor's children are forked
from the loaded supervisor (the app is imported once, in the supervisor, and no child runs a
new interpreter), and a worker told the backlog at start skips the ramp of its claim batch.
The speed itself is measured in bench/burst.py (docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from onthedot import App, JobState
from onthedot.worker.sizing import ClaimSizing
from tests import waiting
from tests.worker.tree import onthedot, started_jobs, wait_or_kill


@pytest.fixture
def app(pg_url: str) -> Iterator[App]:
    application = App(pg_url, log_events=False)
    application.job(name="nap.nap")(lambda seconds: None)
    application.migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE nap_started (job_id bigint PRIMARY KEY, pid integer)")
    yield application
    application.close()


def test_children_are_forked_from_the_loaded_supervisor(
    app: App, pg_url: str, tmp_path: Path
) -> None:
    ids = app.jobs["nap.nap"].enqueue_many([(0.01,)] * 40)
    imports, log = tmp_path / "imports", tmp_path / "tree.log"
    proc = onthedot(
        pg_url, log, "worker", "--burst", "--processes", "2", env={"NAP_IMPORTS": str(imports)}
    )
    assert wait_or_kill(proc, 60) == 0, log.read_text()
    assert {waiting.get_job(app, i).state for i in ids} == {JobState.SUCCEEDED}
    runners = set(started_jobs(pg_url).values())
    assert len(runners) == 2 and proc.pid not in runners
    # The app was imported by the supervisor alone (before: once more by each child).
    assert imports.read_text().split() == [str(proc.pid)]


def test_a_known_backlog_skips_the_ramp_of_the_claim_batch() -> None:
    told = ClaimSizing(4, backlog=20_000)
    untold = ClaimSizing(4)
    assert told.limits.batch == untold.limits.batch == 4  # nothing known of the jobs yet
    told.ran(0.0001)
    untold.ran(0.0001)
    assert told.limits.batch == ClaimSizing.MAX_BATCH  # the next claim takes a full batch
    assert untold.limits.batch == 4  # doubles claim by claim from here
    small = ClaimSizing(4, backlog=50)
    small.ran(0.0001)
    assert small.limits.batch == 50


def test_a_known_backlog_of_long_jobs_still_holds_only_what_runs() -> None:
    sizing = ClaimSizing(4, backlog=20_000)
    sizing.ran(2.0)
    assert sizing.prefetch == 0 and sizing.limits.batch == 4
