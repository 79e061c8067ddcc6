"""A rolling deploy that adds a job type loses no job (issue 12 item 2).

Real `onthedot worker` processes on both backends. 200 `chaos.newjob` jobs (3 attempts, short
backoff) are enqueued by the new code; an old worker, whose app lacks `chaos.newjob`
($ONTHEDOT_TEST_OLD_DEPLOY), runs alone for 3 s, then a new worker joins. Checked: while only
the old worker is live, all 200 stay queued with no attempt spent, and `onthedot queues`,
`onthedot health` and the web overview say "200 jobs of `chaos.newjob` wait and no live worker
knows it"; once the new worker runs, all 200 succeed after exactly one attempt and the warning
is gone.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from onthedot import JobState
from onthedot.web import asgi
from tests.torture import clitools
from tests.torture.chaos_app import make_app
from tests.torture.checker import Db, unfinished
from tests.torture.harness import ChaosLog, Fleet, wait_for
from tests.web.helpers import TestClient

JOBS = 200
WARNING = f"{JOBS} jobs of `chaos.newjob` wait and no live worker knows it"


def _overview(db_url: str) -> str:
    web_app = make_app(db_url, log_events=False)
    try:
        with TestClient(asgi(web_app), base_url="http://127.0.0.1") as client:
            return client.get("/").text
    finally:
        web_app.close()


@pytest.mark.slow
def test_jobs_of_a_new_type_wait_for_a_worker_that_knows_them(
    db_url: str, tmp_path: Path, record_result: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_app(db_url, log_events=False)
    client.migrate()
    monkeypatch.setenv("ONTHEDOT_DATABASE_URL", db_url)
    fleet = Fleet(db_url, tmp_path, ChaosLog(), lease=2.0)
    try:
        ids = client.jobs["chaos.newjob"].enqueue_many([[n] for n in range(JOBS)])
        old = fleet.start("--no-scheduler", env={"ONTHEDOT_TEST_OLD_DEPLOY": "1"})
        fleet.wait_started(old)
        time.sleep(3.0)  # the old worker alone: before the fix it burnt attempts here
        jobs = [client.get_job(i) for i in ids]
        spent = sum(j.attempts for j in jobs)
        failed_early = sum(j.state is JobState.FAILED for j in jobs)
        queues = clitools.clean(clitools.run("queues", database=db_url)).output
        health = clitools.clean(clitools.run("health", database=db_url)).output
        overview = _overview(db_url)
        record_result.update(
            attempts_spent_by_old_worker=spent,
            failed_while_old_alone=failed_early,
            warned={"queues": WARNING in queues, "health": WARNING in health},
        )
        assert spent == 0 and failed_early == 0, (spent, failed_early)
        assert WARNING in queues, queues
        assert WARNING in health, health
        assert "chaos.newjob" in overview and "no live worker knows it" in overview

        new = fleet.start("--no-scheduler")
        fleet.wait_started(new)
        watch = Db(db_url)
        try:
            wait_for(lambda: unfinished(watch) == 0, "every newjob to be final")
        finally:
            watch.close()
        jobs = [client.get_job(i) for i in ids]
        bad = [j for j in jobs if j.state is not JobState.SUCCEEDED or j.attempts != 1]
        record_result.update(failed=sum(j.state is JobState.FAILED for j in jobs), bad=len(bad))
        assert not bad, bad[:3]
        after = clitools.clean(clitools.run("queues", database=db_url)).output
        assert "no live worker knows" not in after, after
        fleet.stop_all()
    finally:
        clitools.close_opened()
        fleet.close()
        client.close()
