"""An async job that blocks its event loop still times out (issue 12 item 6).

A real `onthedot worker` process on both backends runs `chaos.blocker`, an async job with
`timeout=3` that calls `time.sleep(20)` (it never reaches an `await`, so asyncio's own timeout
cannot fire), then five well-behaved async jobs enqueued once it runs. Checked: the blocker
ends `failed` with `JobTimeout` a little after its 3 s, not after the 20 s it blocks; the other
async jobs all succeed, each within the blocker's timeout (plus a margin) of being enqueued;
the worker still stops gracefully.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from onthedot import JobState
from tests.torture.chaos_app import make_app
from tests.torture.harness import ChaosLog, Fleet, wait_for

TIMEOUT = 3.0
MARGIN = 2.5


@pytest.mark.slow
def test_an_async_job_blocking_its_loop_times_out(
    db_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    client = make_app(db_url, log_events=False)
    client.migrate()
    fleet = Fleet(db_url, tmp_path, ChaosLog(), lease=2.0)
    try:
        proc = fleet.start("--no-scheduler")
        fleet.wait_started(proc)
        blocked_at = time.monotonic()
        culprit = client.jobs["chaos.blocker"].enqueue()
        wait_for(lambda: client.get_job(culprit).state is not JobState.QUEUED, "the blocker")
        time.sleep(0.3)  # let it reach time.sleep: the loop is blocked now
        enqueued = time.monotonic()
        others = [client.jobs["chaos.ticker"].enqueue(n) for n in range(5)]
        done = wait_for(
            lambda: all(client.get_job(i).state.finished for i in others) or None,
            "the other async jobs",
            30,
        )
        others_after = time.monotonic() - enqueued
        job = wait_for(
            lambda: (j := client.get_job(culprit)).state.finished and j, "the blocker's end", 30
        )
        blocker_after = (
            (job.finished_at - job.started_at).total_seconds()
            if (job.finished_at and job.started_at)
            else None
        )
        states = [str(client.get_job(i).state) for i in others]
        record_result.update(
            blocker_state=str(job.state),
            blocker_error=(job.error or "")[:80],
            blocker_ended_after_s=blocker_after,
            others_done_after_s=round(others_after, 2),
            others=states,
            since_enqueue=round(time.monotonic() - blocked_at, 2),
        )
        assert done
        assert job.state is JobState.FAILED and job.error and "JobTimeout" in job.error, job
        assert blocker_after is not None and blocker_after < TIMEOUT + MARGIN, blocker_after
        assert states == ["succeeded"] * 5, states
        assert others_after < TIMEOUT + MARGIN, others_after
        fleet.stop_all()
    finally:
        fleet.close()
        client.close()
