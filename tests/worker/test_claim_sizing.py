"""Claiming that sizes itself: the prefetch follows the job durations, the batch the backlog.

The unit tests drive `ClaimSizing` with durations and claim results; the process test runs four
real workers on a deep queue of long jobs and checks that none of them holds jobs it cannot
start soon (claimed but not started), so the other workers get their share.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from onthedot import App
from onthedot.worker.sizing import ClaimSizing
from tests import waiting

ROOT = Path(__file__).resolve().parents[2]


def test_no_prefetch_before_any_job_finished() -> None:
    sizing = ClaimSizing(4)
    assert sizing.prefetch == 0
    assert sizing.limits.batch == 4


def test_short_jobs_on_a_deep_queue_grow_the_batch_and_the_prefetch() -> None:
    sizing = ClaimSizing(4)
    for _ in range(20):
        sizing.ran(0.0001)
    assert sizing.prefetch == ClaimSizing.MAX_PREFETCH
    for _ in range(10):
        sizing.claimed(sizing.limits.batch, sizing.limits.batch)  # full claims: deep
    assert sizing.limits.batch == ClaimSizing.MAX_BATCH
    sizing.claimed(sizing.limits.batch, 3)  # the queue ran shallow
    assert sizing.limits.batch == 4


def test_long_jobs_get_no_prefetch_and_medium_ones_a_horizon_worth() -> None:
    sizing = ClaimSizing(4)
    sizing.ran(1.0)
    assert sizing.prefetch == 0
    medium = ClaimSizing(8)
    for _ in range(50):
        medium.ran(0.01)
    assert medium.prefetch == int(8 * ClaimSizing.HORIZON / 0.01)  # 8 executors x (horizon / 10 ms)


def test_flags_fix_their_number_and_the_rest_adapts() -> None:
    sizing = ClaimSizing(4, batch_size=50, prefetch=None)
    sizing.ran(1.0)
    sizing.claimed(50, 1)
    assert (sizing.limits.batch, sizing.prefetch) == (50, 0)
    fixed = ClaimSizing(4, batch_size=None, prefetch=12)
    fixed.ran(5.0)
    assert fixed.prefetch == 12


@pytest.mark.slow
def test_four_workers_on_long_jobs_hold_only_what_they_run(pg_url: str) -> None:
    concurrency, jobs, nap = 2, 40, 0.4
    app = App(pg_url)
    fn = app.job(name="nap.nap")(lambda seconds: None)
    app.migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS nap_started (job_id bigint PRIMARY KEY, pid int)")
    env = dict(os.environ, ONTHEDOT_DATABASE_URL=pg_url, PYTHONUNBUFFERED="1")
    env.pop("ONTHEDOT_APP", None)
    command = [sys.executable, "-m", "onthedot", "--app", "tests.worker.nap_app:app", "worker"]
    command += ["-c", str(concurrency), "--no-scheduler", "--processes", "1"]
    procs = [
        subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL) for _ in range(4)
    ]
    held: list[dict[str, int]] = []
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            waiting.wait_for(
                lambda: conn.execute("SELECT count(*) FROM onthedot_workers").fetchone()[0] >= 4,
                "four workers registered",
            )
            fn.enqueue_many([((nap,), {}) for _ in range(jobs)])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                queued = conn.execute(
                    "SELECT count(*) FROM onthedot_jobs WHERE state = 'queued'"
                ).fetchone()[0]
                if not queued:
                    break
                rows = conn.execute(
                    "SELECT worker_id, count(*) FROM onthedot_jobs j WHERE state = 'running' "
                    "AND NOT EXISTS (SELECT 1 FROM nap_started s WHERE s.job_id = j.id) "
                    "GROUP BY worker_id"
                ).fetchall()
                held.append({str(w): int(n) for w, n in rows})
                time.sleep(0.05)
            else:
                raise AssertionError("the queue never drained")
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
        app.close()
    assert len(held) >= 10
    # Never more held than the worker could start at once, and on average well under one job
    # per worker (jobs are held only between their claim and their start).
    assert max((n for sample in held for n in sample.values()), default=0) <= concurrency
    mean_held = sum(sum(sample.values()) for sample in held) / (4 * len(held))
    assert mean_held < 0.5, (mean_held, held)
