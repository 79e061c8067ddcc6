"""A job returning a deeply nested result (issue 24 item 9), both backends, a real worker.

Before: a sync job returning a list nested 995 deep killed its executor thread (the result's
size check re-encoded it outside the guarded block and hit `RecursionError`): the job stayed
`running` while the worker lived (its lease kept alive), the worker had one thread less, and
SIGTERM waited the whole grace period for the job. A result 979 deep was stored, and every
later read of the job (`jobs list`, the web admin) crashed; one 200,000 deep never finished
being checked.

Checked: each such job (sync and async, 101, 979, 995 and 200,000 deep)
ends `failed` after one attempt with one `ResultTooDeep:` line naming the limit; a result at
the limit is stored intact; afterwards two jobs that need two live executor threads at once
both succeed on the `-c 2` worker; SIGTERM ends it with exit 0 well inside its grace period.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

from onthedot import JobState
from onthedot.domain.nesting import MAX_NESTING
from tests.torture.harness import ChaosLog, Fleet, wait_for
from tests.torture.hostile_app import deep_list, make_app

APP = "tests.torture.hostile_app:app"
GRACE = 60


def test_a_deep_result_fails_its_job_and_spares_the_thread(
    db_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    client = make_app(db_url)
    client.migrate()
    fleet = Fleet(db_url, tmp_path, ChaosLog(), app=APP)
    try:
        deep, adeep = client.jobs["hostile.deep"], client.jobs["hostile.adeep"]
        too_deep = {
            f"{kind} {depth}": job.enqueue(depth)
            for depth in (MAX_NESTING + 1, 979, 995, 200_000)
            for kind, job in (("sync", deep), ("async", adeep))
        }
        at_limit = deep.enqueue(MAX_NESTING)
        proc = fleet.start("-c", "2", "--no-scheduler", "--grace", str(GRACE))
        fleet.wait_started(proc)

        def final(job_id: int) -> bool:
            assert proc.alive(), proc.output()[-3000:]
            return client.get_job(job_id).state.finished

        for name, job_id in too_deep.items():
            wait_for(lambda i=job_id: final(i), f"the {name} deep result's job to finish", 60)  # type: ignore[misc]
        wait_for(lambda: final(at_limit), "the job at the limit to finish", 60)
        meet = client.jobs["hostile.meet"]
        pairs = [meet.enqueue(str(tmp_path), n) for n in (1, 2)]
        for job_id in pairs:
            wait_for(lambda i=job_id: final(i), "the meet jobs to finish", 60)  # type: ignore[misc]

        stopped = time.monotonic()
        proc.popen.send_signal(signal.SIGTERM)
        code = proc.popen.wait(GRACE + 30)
        took = time.monotonic() - stopped
        jobs = {name: client.get_job(i) for name, i in too_deep.items()}
        record_result.update(
            states={n: (str(j.state), j.attempts) for n, j in jobs.items()},
            meet=[str(client.get_job(i).state) for i in pairs],
            sigterm_to_exit_s=round(took, 2),
        )
        for name, job in jobs.items():
            assert (job.state, job.attempts) == (JobState.FAILED, 1), (name, job)
            assert job.error is not None and job.error.startswith("ResultTooDeep: "), job.error
            assert "\n" not in job.error and f"limit is {MAX_NESTING}" in job.error, job.error
        kept = client.get_job(at_limit)
        assert kept.state is JobState.SUCCEEDED and kept.result == deep_list(MAX_NESTING)
        assert all(client.get_job(i).state is JobState.SUCCEEDED for i in pairs), "a thread died"
        assert code == 0, proc.output()[-3000:]
        assert took < 10, f"SIGTERM took {took:.1f}s: a job was left running"
        assert "Traceback" not in proc.output(), proc.output()[-3000:]
    finally:
        fleet.close()
        client.close()
