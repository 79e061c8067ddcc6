"""A prefetched job does not wait behind a hung job while another worker idles (issue 12
item 5).

Real `onthedot worker` processes on both backends. Worker A (`-c 1 --prefetch 1`, so one job
running and one prefetched) claims `chaos.hang`, which never returns, and a quick
`chaos.innocent` job; once A holds both, worker B (`-c 1`) starts, idle. Checked: the quick job
is given back by A (its attempt not counted) within the documented bound (`HOLD_LIMIT`, 5 s,
plus a margin) and B runs it; it succeeds after exactly one attempt; the hung job stays with A.
While A holds both, `onthedot jobs list` shows the hung job `running` and the prefetched one
`claimed`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from onthedot import JobState
from tests.torture import clitools
from tests.torture.chaos_app import make_app
from tests.torture.harness import ChaosLog, Fleet, wait_for

HOLD_LIMIT = 5.0  # onthedot.worker.maintenance.HOLD_LIMIT, as documented in docs/jobs.md
MARGIN = 3.0


@pytest.mark.slow
def test_a_prefetched_job_is_given_back_to_an_idle_worker(
    db_url: str, tmp_path: Path, record_result: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_app(db_url, log_events=False)
    client.migrate()
    fleet = Fleet(db_url, tmp_path, ChaosLog(), lease=2.0)
    try:
        hung = client.jobs["chaos.hang"].enqueue()
        quick = client.jobs["chaos.innocent"].enqueue(1, 10)
        # A sizes its claims itself and would prefetch nothing before a job finished: the
        # scenario is a worker holding a prefetched job, so give it one.
        first = fleet.start("-c", "1", "--prefetch", "1", "--no-scheduler")

        def both_held() -> bool:
            a, b = client.get_job(hung), client.get_job(quick)
            return a.state is b.state is JobState.RUNNING and a.worker_id == b.worker_id

        wait_for(both_held, "worker A to hold both jobs")
        held_at = time.monotonic()
        holder = client.get_job(quick).worker_id
        # Shown as it is: the hung job `running` (once A's heartbeat reported its start, within
        # about a second), the prefetched one `claimed`, never `running` before it starts.
        monkeypatch.setenv("ONTHEDOT_DATABASE_URL", db_url)
        wait_for(lambda: getattr(client.get_job(hung), "began", True), "the hang's start report")

        def shown(job_id: int) -> str:
            listing = clitools.clean(clitools.run("jobs", "list", database=db_url)).output
            rows = [line.split() for line in listing.splitlines()]
            return next(r[1] for r in rows if r and r[0] == str(job_id))

        shown_hung, shown_quick = shown(hung), shown(quick)
        record_result.update(shown_hung=shown_hung, shown_quick=shown_quick)
        assert (shown_hung, shown_quick) == ("running", "claimed")
        second = fleet.start("-c", "1", "--no-scheduler")
        fleet.wait_started(second)
        try:
            job = wait_for(
                lambda: (j := client.get_job(quick)).state.finished and j,
                "the quick job to be run by the idle worker",
                HOLD_LIMIT + MARGIN + 5,
            )
        finally:
            waited = round(time.monotonic() - held_at, 2)
            record_result.update(waited_s=waited, quick_state=str(client.get_job(quick).state))
        record_result.update(attempts=job.attempts, by_other_worker=job.worker_id != holder)
        assert job.state is JobState.SUCCEEDED and job.attempts == 1, job
        assert job.worker_id != holder
        assert waited < HOLD_LIMIT + MARGIN, waited
        assert client.get_job(hung).state is JobState.RUNNING
        fleet.kill(first)
        fleet.stop_all()
    finally:
        clitools.close_opened()
        fleet.close()
        client.close()
