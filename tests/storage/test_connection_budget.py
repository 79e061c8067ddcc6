"""The connection budget of one worker process (docs/scaling.md): its pool plus one LISTEN
connection, at most 3 in all, idle and while draining, counted by the server itself
(`pg_stat_activity` of a database of its own), with a real `onthedot worker` process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from onthedot import App
from onthedot.domain.jobs import NewJob
from tests.conftest import PG_ADMIN_URL, _pg_base_url
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 3  # the pool (which grows past 2 only when callers wait) plus the LISTEN connection
JOBS = 3000


@pytest.fixture
def own_database() -> Iterator[str]:
    _pg_base_url()  # skips (or fails under CI=true) without a server
    name = f"onthedot_budget_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_worker_process_holds_at_most_three_connections(own_database: str) -> None:
    url = PG_ADMIN_URL.rpartition("/")[0] + f"/{own_database}"
    app = App(url, log_events=False)
    app.migrate()
    app.close()
    tag = "onthedot-budget-worker"  # the worker's connections, told apart from the test's
    env = dict(
        os.environ, ONTHEDOT_DATABASE_URL=f"{url}?application_name={tag}", PYTHONPATH=str(ROOT)
    )
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "onthedot",
            "--app",
            "tests.torture.web_app:app",
            *["worker", "-c", "8", "--processes", "1"],  # the budget is per process
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    samples: list[int] = []
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:

        def count() -> int:
            row = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
                " AND application_name = %s",
                (own_database, tag),
            ).fetchone()
            samples.append(int(row[0]) if row else 0)
            return samples[-1]

        def listening() -> bool:
            count()
            row = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
                " AND application_name = %s AND query LIKE 'LISTEN%%'",
                (own_database, tag),
            ).fetchone()
            return bool(row and row[0])

        try:
            wait_for(listening, "the worker to LISTEN", 30)
            idle_until = time.monotonic() + 3  # idle: the tick, heartbeats, the idle claim
            while time.monotonic() < idle_until:
                count()
                time.sleep(0.05)  # sampling the server, not waiting for a condition
            idle_peak = max(samples)
            producer = App(url, log_events=False)
            try:
                ids = producer.storage.enqueue(
                    [NewJob(name="ping", args=[], kwargs={}) for _ in range(JOBS)]
                )

                def drained() -> bool:
                    count()
                    return all(s.queued + s.running == 0 for s in producer.storage.queue_stats())

                busy_start = len(samples)
                wait_for(drained, f"the worker to drain {JOBS} jobs", 120, every=0.05)
            finally:
                producer.close()
            busy_peak = max(samples[busy_start:])
            assert len(ids) == JOBS
        finally:
            worker.terminate()
            worker.wait(60)
    assert idle_peak <= BUDGET, f"idle worker held {idle_peak} connections: {samples}"
    assert busy_peak <= BUDGET, f"draining worker held {busy_peak} connections: {samples}"
