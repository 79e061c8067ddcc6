"""Deleting runtime schedules while two workers tick them (issue 12, item 3).

The delete cancels the schedule's queued jobs and removes its ledger row. A tick that holds the
row lock while the delete runs must either commit before the cancel looks (its job is then
cancelled) or find no row: no job of a deleted schedule may stay queued. The slot jobs go to a
queue no worker serves, so every job a tick enqueued is still there to be counted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onthedot import App
from tests.torture.chaos_app import create_tables, make_app
from tests.torture.checker import Db
from tests.torture.harness import ChaosLog, Fleet, wait_for

pytestmark = pytest.mark.slow

SCHEDULES = 300


@pytest.fixture
def client(private_pg_url: str) -> Iterator[App]:
    application = make_app(private_pg_url, log_events=False)
    application.migrate()
    create_tables(private_pg_url)
    yield application
    application.close()


def test_no_job_of_a_deleted_schedule_stays_queued(
    client: App, private_pg_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    fleet = Fleet(private_pg_url, tmp_path, ChaosLog())
    db = Db(private_pg_url)
    try:
        keys = [f"race-{i:03d}" for i in range(SCHEDULES)]
        for key in keys:
            client.schedules.create(key, "every 1s", "chaos.tick", queue="parked")
        for _ in range(2):
            fleet.wait_started(fleet.start())

        def parked() -> int:
            return int(db.rows("SELECT count(*) FROM onthedot_jobs WHERE queue = 'parked'")[0][0])

        wait_for(lambda: parked() >= SCHEDULES, "the schedules to fire")
        for key in keys:
            client.schedules.delete(key)
            time.sleep(0.01)
        time.sleep(1.5)  # a tick that was in flight at the last delete has committed by now
        left = db.rows(
            "SELECT schedule_key, count(*) FROM onthedot_jobs"
            " WHERE queue = 'parked' AND state = 'queued' GROUP BY schedule_key"
        )
        cancelled = db.rows(
            "SELECT count(*) FROM onthedot_jobs WHERE queue = 'parked' AND state = 'cancelled'"
        )[0][0]
        record_result.update(deleted=SCHEDULES, cancelled=cancelled, left_queued=len(left))
        assert left == [], f"{len(left)} of {SCHEDULES} deleted schedules left queued jobs"
        remaining = db.rows("SELECT count(*) FROM onthedot_schedules WHERE key LIKE %s", "race-%")
        assert remaining[0][0] == 0
        fleet.stop_all()
    finally:
        db.close()
        fleet.close()
