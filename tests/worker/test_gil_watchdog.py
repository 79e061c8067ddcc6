"""Issue 24 item 10: a job that holds the GIL past its timeout and its lease (one long C call,
`timeout=2`, `max_attempts=2`) fails with `JobTimeout`, runs no more often than
`max_attempts`, and never overlaps itself: the supervisor, outside the process, sees the
child's beats stop and kills it. Before, nothing inside the process could act: the job ran 3
times, overlapping, each recorded as `WorkerLost`.

Real `onthedot worker` processes; the GIL is held by `ctypes.PyDLL(None).sleep(n)` (gil_app)."""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import psycopg
import pytest

from onthedot import App, JobState
from tests import waiting
from tests.worker.gil_app import DDL
from tests.worker.tree import onthedot, wait_or_kill

APP = "tests.worker.gil_app:app"


@pytest.fixture
def app(pg_url: str) -> Iterator[App]:
    application = App(pg_url, log_events=False)
    # Registered as gil_app does: the enqueue stores the timeout and max_attempts.
    application.job(name="gil.timed", timeout=2, max_attempts=2)(lambda seconds: None)
    application.job(name="gil.untimed", max_attempts=2)(lambda seconds: None)
    application.job(name="gil.quick", timeout=5)(lambda: None)
    application.migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(DDL)
    yield application
    application.close()


def start(url: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    args = ["--log-format", "json", "worker", "--processes", "2", "--no-scheduler"]
    return onthedot(url, log, *args, env=env, app=APP)


def runs(url: str, job_id: int) -> list[tuple[int, int, datetime]]:
    """(attempt, pid, started_at) of each run of the job, in order."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT attempt, pid, started_at FROM gil_runs WHERE job_id = %s ORDER BY started_at",
            (job_id,),
        ).fetchall()


def kills(log: Path) -> dict[int, datetime]:
    """pid -> when the supervisor killed it (its JSON log line)."""
    out = {}
    for line in log.read_text().splitlines():
        if '"worker_process_killed"' in line:
            record = json.loads(line)
            out[record["pid"]] = datetime.fromisoformat(record["ts"].replace("Z", "+00:00"))
    return out


def assert_never_overlapping(url: str, job_id: int, log: Path) -> None:
    """Each run's process was dead before the next run started."""
    found, killed = runs(url, job_id), kills(log)
    for (_, pid, _), (_, _, next_start) in itertools.pairwise(found):
        assert pid in killed, (found, killed)
        assert killed[pid] < next_start, (found, killed)


def test_a_job_holding_the_gil_past_its_timeout_fails_with_jobtimeout(
    app: App, pg_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "tree.log"
    proc = start(pg_url, log)
    try:
        job_id = app.jobs["gil.timed"].enqueue(60)  # 60 s in C: past the timeout and the lease
        job = waiting.wait_for(
            lambda: (j := waiting.get_job(app, job_id)).state is JobState.FAILED and j,
            "the job failed",
            timeout=90,
        )
        assert job.error is not None and job.error.startswith("JobTimeout"), job.error
        assert job.attempts == 2
        found = runs(pg_url, job_id)
        assert [attempt for attempt, _, _ in found] == [1, 2], found  # max_attempts, no more
        assert_never_overlapping(pg_url, job_id, log)
        assert len(kills(log)) == 2
        # The tree runs on: both slots were started again.
        quick = app.jobs["gil.quick"].enqueue()
        waiting.wait_for(
            lambda: waiting.get_job(app, quick).state is JobState.SUCCEEDED, "a job after"
        )
    finally:
        proc.terminate()
        code = wait_or_kill(proc, 60)
    assert code == 0, log.read_text()[-3000:]


@pytest.mark.slow
def test_a_job_without_timeout_holding_the_gil_past_its_lease_never_overlaps(
    app: App, pg_url: str, tmp_path: Path
) -> None:
    """No timeout: the child is killed at half its lease, before another worker could rescue
    its job; the job is rescued once the lease ran out, under the crash quarantine."""
    log = tmp_path / "tree.log"
    proc = start(pg_url, log, env={"GIL_LEASE": "4"})
    try:
        job_id = app.jobs["gil.untimed"].enqueue(30)
        job = waiting.wait_for(
            lambda: (j := waiting.get_job(app, job_id)).state is JobState.FAILED and j,
            "the job failed",
            timeout=120,
        )
        assert job.error is not None and "WorkerLost" in job.error, job.error
        assert_never_overlapping(pg_url, job_id, log)
        assert len(runs(pg_url, job_id)) <= 3  # 2 charged + 1 lost beside others (quarantine)
    finally:
        proc.terminate()
        code = wait_or_kill(proc, 60)
    assert code == 0, log.read_text()[-3000:]
