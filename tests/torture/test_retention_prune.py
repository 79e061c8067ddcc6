"""Retention per state and per job with real worker processes (issue 29, items 2 and 4), on
both backends: two workers drain and fire the chaos app's two schedules (every second, every
3 s) while their prune turn deletes, by the policy, jobs finished long ago; nothing a user can
still ask for disappears (every job within its retention is still readable) and no slot runs
twice, before or after the prune."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from onthedot import App
from onthedot.domain.jobs import NewJob, Outcome, OutcomeKind
from tests.torture.chaos_app import create_tables, make_app
from tests.torture.checker import Db
from tests.torture.harness import ChaosLog, Fleet, wait_for

pytestmark = pytest.mark.slow

RETENTION = {"succeeded": "1d", "failed": "30d", "cancelled": "7d"}
KEEP_TICK = "2d"  # chaos.tick's keep=: every state two days
KIND = {"succeeded": OutcomeKind.SUCCEEDED, "failed": OutcomeKind.FAILED}
# (job, final state, finished this many hours ago, kept by the policy?)
CASES = [
    ("chaos.work", "succeeded", 20, True),
    ("chaos.work", "succeeded", 30, False),
    ("chaos.work", "failed", 24 * 29, True),
    ("chaos.work", "failed", 24 * 31, False),
    ("chaos.tick", "succeeded", 40, True),  # keep="2d" beats the app's 1 day
    ("chaos.tick", "failed", 24 * 3, False),  # and its 30 days for failures
]


@pytest.fixture
def client(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ONTHEDOT_TEST_RETENTION", json.dumps(RETENTION))
    monkeypatch.setenv("ONTHEDOT_TEST_KEEP_TICK", json.dumps(KEEP_TICK))
    application = make_app(db_url, log_events=False)
    application.migrate()
    create_tables(db_url)
    yield application
    application.close()


def _finished(client: App, name: str, state: str, hours: float) -> int:
    then = client.storage.at(datetime.now(UTC) - timedelta(hours=hours))
    (job_id,) = then.enqueue([NewJob(name=name, args=[], kwargs={}, queue="old")])
    (c,) = then.claim_jobs("w-old", "old", 1, 30)
    assert then.finish_jobs("w-old", [Outcome(c.id, KIND[state], attempt=1)]) == 1
    return job_id


def test_workers_prune_by_the_policy_while_schedules_fire(
    client: App, db_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    jobs = {_finished(client, n, s, h): (n, s, kept) for n, s, h, kept in CASES}
    assert client.retention_policy().keep("chaos.tick", "failed") == timedelta(days=2)
    fleet = Fleet(db_url, tmp_path, ChaosLog())
    env = {
        "ONTHEDOT_TEST_RETENTION": json.dumps(RETENTION),
        "ONTHEDOT_TEST_KEEP_TICK": json.dumps(KEEP_TICK),
    }
    try:
        for proc in [fleet.start(env=env), fleet.start(env=env)]:
            fleet.wait_started(proc)
        gone = [i for i, (_, _, kept) in jobs.items() if not kept]
        wait_for(lambda: all(client.get_job(i) is None for i in gone), "the prune turn", 60)
        time.sleep(4)  # schedules keep firing after the pass
        fleet.stop_all()
    finally:
        fleet.close()
    for job_id, (name, state, kept) in jobs.items():
        assert (client.get_job(job_id) is not None) is kept, (name, state)
    db = Db(db_url)
    try:
        twice = db.rows(
            "SELECT schedule_key, slot, count(DISTINCT job_id) FROM torture_executions"
            " WHERE schedule_key IS NOT NULL GROUP BY schedule_key, slot"
            " HAVING count(DISTINCT job_id) > 1"
        )
        fired = db.rows("SELECT count(*) FROM torture_executions WHERE schedule_key IS NOT NULL")
    finally:
        db.close()
    record_result.update(backend=db_url.split(":")[0], slot_runs=fired[0][0])
    assert twice == []
    assert fired[0][0] > 5  # the schedules did fire meanwhile
