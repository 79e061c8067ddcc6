"""Issue 24 item 12: a non-daemon thread a job left running does not keep the worker alive
after SIGTERM: the process exits within the grace period and names the thread. Before, the
worker logged `stopped` and then never exited (the interpreter waited for the thread).

Real processes on SQLite: one worker alone (`--processes 1`), and the supervisor's forked
and spawned children."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from onthedot import App, JobState
from tests import waiting
from tests.worker.tree import onthedot, wait_or_kill

APP = "tests.worker.left_app:app"
GRACE = 2.0


@pytest.mark.parametrize(("processes", "start"), [("1", "fork"), ("2", "fork"), ("2", "spawn")])
def test_a_thread_left_by_a_job_does_not_keep_the_worker_alive(
    sqlite_url: str, tmp_path: Path, processes: str, start: str
) -> None:
    app = App(sqlite_url, log_events=False)
    app.job(name="left.start_thread")(lambda: None)
    job_id = app.jobs["left.start_thread"].enqueue()
    log = tmp_path / "worker.log"
    args = ["worker", "--processes", processes, "--grace", str(GRACE), "--no-scheduler"]
    proc = onthedot(sqlite_url, log, *args, start=start, app=APP)
    try:
        waiting.wait_for(
            lambda: waiting.get_job(app, job_id).state is JobState.SUCCEEDED, "the job ran"
        )
        stopping = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = wait_or_kill(proc, 30)
        took = time.monotonic() - stopping
    finally:
        app.close()
    output = log.read_text()
    assert code == 0, output
    assert took < GRACE + 5, f"exited {took:.1f}s after SIGTERM"
    named = [line for line in output.splitlines() if "left-behind-by-a-job" in line]
    assert len(named) == 1, output  # the process that ran the job names it, once
    assert "tests.worker.left_app._spin" in named[0]
