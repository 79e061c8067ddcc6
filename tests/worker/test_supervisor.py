"""`onthedot worker --processes N` with real processes: children run the jobs, a child that
dies is started again, SIGTERM to the supervisor drains every child, `--burst` ends when all
children found the queues empty, and the exit status says how it went."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from onthedot import App, JobState
from tests import waiting

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.worker.nap_app:app"


@pytest.fixture
def app(pg_url: str) -> Iterator[App]:
    application = App(pg_url)
    application.job(name="nap.nap")(lambda seconds: None)
    application.migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE nap_started (job_id bigint PRIMARY KEY, pid integer)")
    yield application
    application.close()


def supervisor(
    url: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], Path]:
    env = dict(os.environ, ONTHEDOT_DATABASE_URL=url, PYTHONUNBUFFERED="1", **(env or {}))
    env.pop("ONTHEDOT_APP", None)
    log = tmp_path / "supervisor.log"
    command = [sys.executable, "-m", "onthedot", "--app", APP, "worker", "--no-scheduler", *args]
    with log.open("wb") as handle:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=handle)
    return proc, log


def worker_pids(url: str) -> set[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return {int(r[0]) for r in conn.execute("SELECT pid FROM onthedot_workers").fetchall()}


def states(app: App, ids: list[int]) -> list[JobState]:
    return [job.state for job in map(app.get_job, ids) if job is not None]


def test_burst_children_share_the_queue_and_the_supervisor_sums_up(
    app: App, pg_url: str, tmp_path: Path
) -> None:
    ids = app.jobs["nap.nap"].enqueue_many([(0.05,)] * 40)
    proc, log = supervisor(pg_url, tmp_path, "--burst", "--processes", "2", "-c", "2")
    assert proc.wait(60) == 0, log.read_text()
    assert states(app, ids) == [JobState.SUCCEEDED] * 40
    output = log.read_text()
    assert "worker supervisor: 2 process(es) stopped (burst: queues empty); 40 attempt(s) ran" in (
        output
    )
    with psycopg.connect(pg_url, autocommit=True) as conn:
        pids = {r[0] for r in conn.execute("SELECT DISTINCT pid FROM nap_started").fetchall()}
    assert len(pids) == 2 and proc.pid not in pids  # both children ran jobs, not the supervisor


def test_a_child_killed_is_started_again(app: App, pg_url: str, tmp_path: Path) -> None:
    proc, log = supervisor(pg_url, tmp_path, "--processes", "2")
    try:
        first = waiting.wait_for(
            lambda: len(worker_pids(pg_url)) == 2 and worker_pids(pg_url), "two children registered"
        )
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        waiting.wait_for(
            lambda: "event=worker_process_restarted" in log.read_text(), "the restart event"
        )
        waiting.wait_for(lambda: len(worker_pids(pg_url) - {victim}) == 2, "a new child registered")
        assert 'exit="signal SIGKILL"' in log.read_text() or "SIGKILL" in log.read_text()
        ids = app.jobs["nap.nap"].enqueue_many([(0.01,)] * 4)
        waiting.wait_for(lambda: states(app, ids) == [JobState.SUCCEEDED] * 4, "jobs done")
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0, log.read_text()
    assert "1 restart(s)" in log.read_text()


def test_sigterm_to_the_supervisor_drains_every_child(
    app: App, pg_url: str, tmp_path: Path
) -> None:
    proc, log = supervisor(pg_url, tmp_path, "--processes", "2", "-c", "1")
    waiting.wait_for(lambda: len(worker_pids(pg_url)) == 2, "two children registered")
    ids = app.jobs["nap.nap"].enqueue_many([(1.0,)] * 2)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        waiting.wait_for(
            lambda: conn.execute("SELECT count(*) FROM nap_started").fetchone()[0] == 2,
            "both jobs started",
        )
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0, log.read_text()
    assert states(app, ids) == [JobState.SUCCEEDED] * 2  # the running jobs were let finish
    assert worker_pids(pg_url) == set()  # every child deregistered
    assert "2 process(es) stopped (signal SIGTERM); 2 attempt(s) ran" in log.read_text()


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_sigterm_while_the_children_start_is_a_clean_stop(
    app: App, pg_url: str, tmp_path: Path
) -> None:
    """SIGTERM reaching a child still importing (its handlers not installed yet) kills it
    with the signal's default action; it held no job, so the stop is clean: exit 0. Before,
    the supervisor exited 143 (128 + SIGTERM), seen in CI on a slow machine. Children started
    as new interpreters (a forked child is past that window within milliseconds)."""
    env = {"ONTHEDOT_WORKER_START": "spawn"}
    proc, log = supervisor(pg_url, tmp_path, "--processes", "2", env=env)
    waiting.wait_for(lambda: len(_children(proc.pid)) == 2, "two children spawned", 30)
    proc.send_signal(signal.SIGTERM)  # the children are still starting Python
    assert proc.wait(60) == 0, log.read_text()
    output = log.read_text()
    assert "event=worker_started" not in output  # it did reach them while starting
    assert "2 process(es) stopped (signal SIGTERM while starting); no job ran" in output
    assert worker_pids(pg_url) == set()


def test_a_burst_on_empty_queues_starts_no_process(app: App, pg_url: str, tmp_path: Path) -> None:
    app.jobs["nap.nap"].enqueue(0.01)  # ready, on a queue not given
    app.jobs["nap.nap"].enqueue(0.01, queue="paused")
    app.storage.set_queue_paused("paused", True, "test")
    args = ("--burst", "--processes", "2", "-q", "empty,paused")
    proc, log = supervisor(pg_url, tmp_path, *args)
    assert proc.wait(60) == 0, log.read_text()
    output = log.read_text()
    assert "0 process(es) stopped (burst: queues empty); no job ran" in output
    assert "event=worker_started" not in output
