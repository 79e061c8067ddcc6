"""A frozen worker never starts a job whose claim it can no longer prove (issue 24 item 7).

Real `onthedot worker` processes on both backends. Worker A (`-c 1 --prefetch 4`) holds five
`chaos.work` jobs: a slow one running (it sleeps 2.5 s) and four quick ones prefetched in its
buffer. A is frozen with SIGSTOP (as a VM pause, a long GC or a swap storm would freeze it);
worker B starts, rescues the jobs once A's lease ran out and runs all five to `succeeded`. Then
A gets SIGCONT: its slow job's sleep is over, its executor is free, and the four jobs are still
in its buffer. Checked, from the executions every job records when it starts: A starts none of
them again (each quick job ran exactly once, on B), A says in one line that it gave them back
unstarted, and both workers stop cleanly. Before the fix A started them again at once.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from onthedot import JobState
from tests.torture.chaos_app import EXECUTIONS, create_tables, make_app
from tests.torture.checker import Db
from tests.torture.harness import ChaosLog, Fleet, wait_for

pytestmark = pytest.mark.slow

# What A says as it gives the four back unstarted: its executor found their claims no longer
# proven, or its keeper found them waiting in the buffer past the hold limit first.
GIVEN_BACK = ("did not start 4 claimed job(s)", "gave back 4 prefetched jobs")


def test_a_frozen_worker_does_not_start_jobs_rescued_meanwhile(
    db_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    client = make_app(db_url, log_events=False)
    client.migrate()
    create_tables(db_url)
    fleet = Fleet(db_url, tmp_path, ChaosLog(), lease=2.0)
    db = Db(db_url)
    work = client.jobs["chaos.work"]
    try:
        slow = work.enqueue(0, 0, 2500, priority=10)  # claimed and started first
        quick = [work.enqueue(n, 0, 50) for n in range(1, 5)]
        jobs = [slow, *quick]
        a = fleet.start("-c", "1", "--prefetch", "4", "--no-scheduler")

        def runs() -> dict[int, list[int]]:
            """job id -> the pids of its executions (one per start)."""
            found: dict[int, list[int]] = {j: [] for j in jobs}
            for job_id, pid, count in db.rows(f"SELECT job_id, pid, runs FROM {EXECUTIONS}"):
                found[int(job_id)] += [int(pid)] * int(count)
            return found

        def a_holds_all_and_runs_the_slow_one() -> bool:
            held = [client.get_job(j) for j in jobs]
            return all(
                j.state is JobState.RUNNING and j.worker_id == held[0].worker_id for j in held
            ) and runs()[slow] == [a.pid]

        wait_for(a_holds_all_and_runs_the_slow_one, "worker A to hold all five jobs")
        a.popen.send_signal(signal.SIGSTOP)
        fleet.chaos.add("sigstop", a.pid)
        b = fleet.start("-c", "1", "--no-scheduler")
        wait_for(
            lambda: all(client.get_job(j).state is JobState.SUCCEEDED for j in jobs),
            "worker B to rescue and run the five jobs",
        )
        a.popen.send_signal(signal.SIGCONT)
        fleet.chaos.add("sigcont", a.pid)

        def a_acted() -> bool:
            started_again = any(a.pid in pids for j, pids in runs().items() if j != slow)
            return started_again or any(line in a.output() for line in GIVEN_BACK)

        wait_for(a_acted, "worker A to start the jobs again or to give them back", 30)
        fleet.stop_all()
        final = runs()
        record_result.update(
            backend=db.backend,
            executions={str(j): final[j] for j in jobs},
            worker_a=a.pid,
            worker_b=b.pid,
        )
        for job_id in quick:
            assert final[job_id] == [b.pid], f"job {job_id} ran {final[job_id]} (A is {a.pid})"
        assert sorted(final[slow]) == sorted([a.pid, b.pid])  # cut by the freeze, rescued
        assert any(line in a.output() for line in GIVEN_BACK), a.output()
        assert {client.get_job(j).state for j in jobs} == {JobState.SUCCEEDED}
        assert "Traceback" not in fleet.logs()
    finally:
        fleet.close()
        db.close()
        client.close()
