"""examples/cpu_workers.py, run as a user runs it on each backend: worker processes started
from Python for CPU-bound jobs. Every job runs once, in one of the spawned children (not the
script's own process), and the two children share the queue."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from onthedot import App, JobState

ROOT = Path(__file__).resolve().parents[2]
JOBS = 24  # ~0.1 s of CPU each: one child cannot finish them all before the other starts


def test_worker_processes_from_python_share_cpu_jobs(db_url: str, tmp_path: Path) -> None:
    env = dict(os.environ, ONTHEDOT_DATABASE_URL=db_url, PYTHONPATH=str(ROOT / "src"))
    env.pop("ONTHEDOT_APP", None)
    script = ROOT / "examples" / "cpu_workers.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(JOBS), "2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert f"2 worker process(es) drained {JOBS} job(s); exit codes [0, 0]" in out, out

    app = App(db_url, log_events=False)
    try:
        jobs = app.list_jobs(name="example.checksum", limit=100)
    finally:
        app.close()
    assert len(jobs) == JOBS
    assert {job.state for job in jobs} == {JobState.SUCCEEDED}
    assert {job.attempts for job in jobs} == {1}
    results = [job.result for job in jobs if isinstance(job.result, dict)]
    assert len(results) == JOBS
    pids = {r["pid"] for r in results}
    assert len(pids) == 2, pids  # both children ran jobs ...
    assert proc.pid not in pids  # ... and the script itself ran none
    assert len({r["checksum"] for r in results}) == 1  # the same work in every job
