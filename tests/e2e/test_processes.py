"""Workers as real processes (`python -m onthedot ... worker`): kill -9 and rescue, several
processes draining one queue with no job run twice, SIGTERM, and a database that is down.

The workers load `tests.e2e.apps.basic:app`, which reads the database URL from
$ONTHEDOT_DATABASE_URL and its lease from $ONTHEDOT_TEST_LEASE.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from onthedot import App, JobFilter, JobState
from tests import waiting
from tests.e2e.apps.basic import make_app
from tests.waiting import get_job as get

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 60.0

pytestmark = pytest.mark.slow


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
    return waiting.wait_for(predicate, what, timeout, every=0.05)


class Proc:
    """One worker process, its output in a log file."""

    def __init__(self, popen: subprocess.Popen[bytes], log: Path, handle: IO[bytes]) -> None:
        self.popen = popen
        self.log = log
        self._handle = handle

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, signum: int) -> None:
        self.popen.send_signal(signum)

    def wait(self, timeout: float = DEADLINE) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"worker {self.pid} did not exit within {timeout}s:\n{self.output()}")

    def close(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)
        self._handle.close()


class Workers:
    """Starts worker processes on one database; kills any still running at teardown."""

    def __init__(self, url: str, tmp: Path) -> None:
        self.url = url
        self.tmp = tmp
        self.record = tmp / "executions.txt"
        self.started: list[Proc] = []

    def start(self, *args: str, lease: float = 30.0) -> Proc:
        env = dict(os.environ)
        env.pop("ONTHEDOT_APP", None)
        env.update(
            ONTHEDOT_DATABASE_URL=self.url,
            ONTHEDOT_TEST_LEASE=str(lease),
            ONTHEDOT_TEST_RECORD=str(self.record),
            PYTHONUNBUFFERED="1",
        )
        log = self.tmp / f"worker-{len(self.started)}.log"
        handle = log.open("wb")
        command = [sys.executable, "-m", "onthedot", "--app", "tests.e2e.apps.basic:app"]
        popen = subprocess.Popen(
            [*command, "worker", "--no-scheduler", "--processes", "1", *args],
            cwd=ROOT,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        proc = Proc(popen, log, handle)
        self.started.append(proc)
        return proc

    def executions(self) -> list[tuple[int, int, int]]:
        """(job id, attempt, pid) of every execution the jobs recorded."""
        if not self.record.exists():
            return []
        rows = [line.split() for line in self.record.read_text().splitlines()]
        return [(int(r[0]), int(r[1]), int(r[2])) for r in rows]


@pytest.fixture
def client(db_url: str) -> Iterator[App]:
    """The test's own App on the database (migrated, so PostgreSQL workers can start)."""
    application = make_app(db_url)
    application.migrate()
    yield application
    application.close()


@pytest.fixture
def workers(db_url: str, tmp_path: Path, client: App) -> Iterator[Workers]:
    pool = Workers(db_url, tmp_path)
    yield pool
    for proc in pool.started:
        proc.close()


def test_a_killed_workers_job_is_rescued_and_completed_elsewhere(
    client: App, workers: Workers, tmp_path: Path
) -> None:
    marker = str(tmp_path / "hold")
    first = workers.start("-c", "2", lease=1.0)
    job_id = client.enqueue("basic.hold", marker)
    started = Path(marker + ".started")
    wait_for(started.exists, f"the job to start in worker {first.pid}")
    assert started.read_text() == str(first.pid)
    assert get(client, job_id).state is JobState.RUNNING

    first.signal(signal.SIGKILL)
    assert first.wait() == -signal.SIGKILL
    second = workers.start("-c", "2", lease=1.0)
    job = wait_for(
        lambda: (j := get(client, job_id)).state.finished and j,
        "the job to be rescued and finished by the second worker",
    )
    second.signal(signal.SIGTERM)
    assert second.wait() == 0, second.output()

    assert job.state is JobState.SUCCEEDED, job
    assert job.attempts == 2
    assert job.result == second.pid
    assert [e["attempt"] for e in job.errors] == [1]
    assert job.errors[0]["error"].startswith("WorkerLost:")
    assert "event=job_rescued" in second.output()


def test_several_processes_drain_one_queue_running_each_job_once(
    client: App, workers: Workers
) -> None:
    count, processes = 2000, 3
    procs = [workers.start("-c", "4") for _ in range(processes)]
    wait_for(
        lambda: len(client.storage.list_workers()) == processes,
        f"{processes} workers to register",
    )
    ids: list[int] = []
    for chunk in range(4):  # enqueue while they run: claims, enqueues and finishes interleave
        start = chunk * count // 4
        ids += client.jobs["basic.record"].enqueue_many(
            # 5 ms each: a worker holds what it can start within its claim horizon, so
            # the others get a share (no-op jobs could all be run by the first to wake)
            [[f"n{i}", 0.005] for i in range(start, start + count // 4)]
        )
    flt = JobFilter(state=JobState.SUCCEEDED, queue="default")
    wait_for(lambda: client.storage.count_jobs(flt) == count, "every job to succeed", 90)
    for proc in procs:
        proc.signal(signal.SIGTERM)
    logs = []
    for proc in procs:
        assert proc.wait() == 0, proc.output()
        logs.append(proc.output())

    runs = workers.executions()
    per_run = Counter((job_id, attempt) for job_id, attempt, _ in runs)
    assert [key for key, n in per_run.items() if n > 1] == [], "a job ran twice in one attempt"
    assert Counter(job_id for job_id, _, _ in runs) == Counter(ids), "each job ran exactly once"
    assert {attempt for _, attempt, _ in runs} == {1}
    pids = {pid for _, _, pid in runs}
    assert pids <= {p.pid for p in procs}
    assert len(pids) >= 2, "the processes shared the queue"
    assert client.storage.count_jobs(JobFilter(queue="default")) == count
    for log in logs:
        assert "database is locked" not in log
        assert "event=database_error" not in log, log


def test_sigterm_finishes_the_running_job_then_exits_0(
    client: App, workers: Workers, tmp_path: Path
) -> None:
    marker = str(tmp_path / "graceful")
    proc = workers.start("--grace", "60")
    job_id = client.enqueue("basic.wait_release", marker)
    wait_for(Path(marker + ".started").exists, "the job to start")
    proc.signal(signal.SIGTERM)
    wait_for(lambda: "finishing running jobs" in proc.output(), "the first signal to be seen")
    queued_after = client.enqueue("basic.greet", "late")
    Path(marker + ".release").touch()
    assert proc.wait() == 0, proc.output()
    job = get(client, job_id)
    assert job.state is JobState.SUCCEEDED, proc.output()
    assert job.result == proc.pid
    assert get(client, queued_after).state is JobState.QUEUED, "no claim after SIGTERM"
    assert 'reason="signal SIGTERM"' in proc.output()


def test_a_second_sigterm_stops_at_once(client: App, workers: Workers, tmp_path: Path) -> None:
    marker = str(tmp_path / "stuck")
    proc = workers.start("--grace", "3600")
    job_id = client.enqueue("basic.wait_release", marker)
    wait_for(Path(marker + ".started").exists, "the job to start")
    proc.signal(signal.SIGTERM)
    wait_for(lambda: "finishing running jobs" in proc.output(), "the first signal to be seen")
    assert proc.popen.poll() is None, "the first signal waits for the running job"
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 1, proc.output()  # long before the hour of grace; work cut short
    assert "second signal: stopping at once" in proc.output()
    assert "1 job(s) still running" in proc.output()
    assert get(client, job_id).state is JobState.RUNNING  # its lease will expire: rescued


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_worker_waits_for_an_unreachable_postgresql(tmp_path: Path) -> None:
    url = f"postgresql://postgres@127.0.0.1:{_free_port()}/postgres"
    pool = Workers(url, tmp_path)
    proc = pool.start()
    try:
        wait_for(lambda: "event=database_error" in proc.output(), "a database error line", 45)
        assert proc.popen.poll() is None, proc.output()
        line = next(x for x in proc.output().splitlines() if "event=database_error" in x)
        assert "ERROR" in line
        assert 'where="schema check"' in line
        assert "is unreachable" in line and "retry_in=" in line
        assert "Traceback" not in proc.output()
    finally:
        proc.close()
