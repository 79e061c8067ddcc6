"""A clock step alone never rescues a live worker's job (issue 24 item 8).

Real `onthedot worker` processes. Worker A (`-c 8`) runs eight `chaos.gated` jobs, which run
until the test opens their gate; worker B, idle, rescues leases. The clock that judges leases
is stepped forward +30 s, then +90 s more, each step held for three leases; then the gate
opens. Checked: every job ran once, on A, its one attempt succeeded, no `WorkerLost` was
recorded, no traceback.

- Both backends, lease 2 s: B's own wall clock is stepped through
  `$ONTHEDOT_TEST_CLOCK_STEP_FILE` (the chaos app's `SteppedClock`, which its storage verbs use
  too). On SQLite that is the host clock stepped between A's heartbeat and B's rescue pass (an
  NTP step, a VM resuming; every process reads the one host clock; A, still writing leases on
  the unstepped clock, is the worst case); on PostgreSQL it stands for a step of the database
  clock as B's statements see it. Before the fix B rescued all eight at its first pass after the
  step and started them again beside A.
- PostgreSQL, lease 3 s: the server's own clock is stepped (Debian's libfaketime preloaded into
  a private cluster, `now()` moved through its timestamp file) while both workers run on the
  true clock. So that a rescue pass surely meets the stepped clock before A's next heartbeat
  renews its leases, A is frozen (SIGSTOP, for less than a lease) from the step until the
  server has logged B's next lease read, then resumed.
"""

from __future__ import annotations

import glob
import os
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from onthedot import JobState
from tests.conftest import IN_CI
from tests.torture.chaos_app import EXECUTIONS, create_tables, make_app
from tests.torture.checker import Db
from tests.torture.harness import ChaosLog, Fleet, Proc, wait_for
from tests.torture.pgcluster import PrivateCluster, unavailable_reason

pytestmark = pytest.mark.slow

JOBS = 8
STEPS = (30, 120)  # +30 s, then +90 s more
# Debian's libfaketime (`apt-get install faketime`), in its multiarch folder.
FAKETIME = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
LEASE_READ = "lease_until < COALESCE("  # a rescuer's read of the leases, as the server logs it


class Steps:
    """Eight jobs running on A, an idle rescuer B, and `step(offset)` applied in turn."""

    def __init__(self, url: str, tmp_path: Path, lease: float) -> None:
        self.client = make_app(url, log_events=False)
        self.client.migrate()
        create_tables(url)
        self.lease = lease
        self.fleet = Fleet(url, tmp_path, ChaosLog(), lease=lease)
        self.db = Db(url)
        self.gate = tmp_path / "gate"
        self.jobs: list[int] = []

    def runs(self) -> dict[int, list[int]]:
        """job id -> the pids of its executions (one per start)."""
        found: dict[int, list[int]] = {j: [] for j in self.jobs}
        for job_id, pid, count in self.db.rows(f"SELECT job_id, pid, runs FROM {EXECUTIONS}"):
            found[int(job_id)] += [int(pid)] * int(count)
        return found

    def run(
        self,
        step: Callable[[float, Proc, Proc], None],
        record: dict[str, Any],
        b_env: dict[str, str] | None = None,
    ) -> None:
        client, fleet = self.client, self.fleet
        gated = client.jobs["chaos.gated"]
        self.jobs = [gated.enqueue(n, str(self.gate)) for n in range(JOBS)]
        a = fleet.start("-c", str(JOBS), "--no-scheduler")
        wait_for(lambda: all(r == [a.pid] for r in self.runs().values()), "A to start the jobs")
        a_id = client.get_job(self.jobs[0]).worker_id
        b = fleet.start("-c", "2", "--no-scheduler", env=b_env)
        fleet.wait_started(b)
        for offset in STEPS:
            step(offset, a, b)
            moved = [
                j
                for j in self.jobs
                if (job := client.get_job(j)).state is not JobState.RUNNING or job.worker_id != a_id
            ]
            assert moved == [], f"{len(moved)} of {JOBS} jobs taken from A at +{offset}s"
        self.gate.touch()
        wait_for(lambda: all(client.get_job(j).state.finished for j in self.jobs), "the jobs")
        fleet.stop_all()
        final = self.runs()
        states = {j: client.get_job(j) for j in self.jobs}
        record.update(
            steps=[30, 90],
            executions={str(j): final[j] for j in self.jobs},
            worker_a=a.pid,
            worker_b=b.pid,
            errors={str(j): s.errors for j, s in states.items() if s.errors},
        )
        for job_id, job in states.items():
            assert final[job_id] == [a.pid], f"job {job_id} ran {final[job_id]} (A is {a.pid})"
            assert job.state is JobState.SUCCEEDED and job.attempts == 1, job
            assert not job.errors, job.errors
        assert "Traceback" not in fleet.logs()

    def close(self) -> None:
        self.gate.touch()
        self.fleet.close()
        self.db.close()
        self.client.close()


def _write_step(path: Path, text: str) -> None:
    """Replace the step file at once: the stepped process re-reads it at every use."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.chmod(0o644)
    os.replace(tmp, path)


def test_a_clock_step_does_not_rescue_a_live_workers_jobs(
    db_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    lease = 2.0
    step_file = tmp_path / "clock-step"
    _write_step(step_file, "0")
    scenario = Steps(db_url, tmp_path, lease)
    db = scenario.db

    def step(offset: float, a: Proc, b: Proc) -> None:
        _write_step(step_file, str(offset))
        # B's keeper heartbeats (and takes its rescue turns) for three leases on the stepped
        # clock: its own heartbeats, written on that clock, show it.
        until = time.time() + offset + 3 * lease
        beat = f"SELECT {db.ep('heartbeat_at')} FROM onthedot_workers WHERE pid = %s"
        wait_for(lambda: db.rows(beat, b.pid)[0][0] > until, f"B to run 3 leases at +{offset}s")

    try:
        record_result.update(backend=db.backend)
        scenario.run(step, record_result, b_env={"ONTHEDOT_TEST_CLOCK_STEP_FILE": str(step_file)})
    finally:
        scenario.close()


@pytest.fixture(scope="module")
def stepped_server() -> Iterator[tuple[PrivateCluster, Path]]:
    """A private PostgreSQL whose clock follows a file (libfaketime), logging every statement."""
    reason = unavailable_reason() or (
        None if FAKETIME else "libfaketime is missing (apt-get install faketime)"
    )
    if reason is not None:
        if IN_CI:
            pytest.fail(f"cannot step a PostgreSQL server's clock: {reason} (required in CI)")
        pytest.skip(f"cannot step a PostgreSQL server's clock: {reason}")
    folder = Path(tempfile.mkdtemp(prefix="onthedot-clock-"))
    folder.chmod(0o755)  # the server runs as `postgres` and reads the step from here
    step = folder / "step"
    _write_step(step, "+0\n")
    env = {
        "LD_PRELOAD": FAKETIME[0],
        "FAKETIME_TIMESTAMP_FILE": str(step),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",  # an NTP step moves the wall clock only
    }
    cluster = PrivateCluster("log_statement=all", env=env)
    try:
        cluster.start()
        yield cluster, step
    finally:
        cluster.remove()
        step.unlink(missing_ok=True)
        folder.rmdir()


def test_a_step_of_the_postgresql_server_clock_rescues_no_live_job(
    stepped_server: tuple[PrivateCluster, Path], tmp_path: Path, record_result: dict[str, Any]
) -> None:
    cluster, step_file = stepped_server
    lease = 3.0
    scenario = Steps(cluster.create_database(f"t_{uuid.uuid4().hex[:12]}"), tmp_path, lease)
    db = scenario.db

    def server_now() -> float:
        return float(db.rows("SELECT extract(epoch from now())::float8")[0][0])

    def step(offset: float, a: Proc, b: Proc) -> None:
        a.popen.send_signal(signal.SIGSTOP)
        try:
            _write_step(step_file, f"+{offset:.0f}\n")
            marker = f"clock stepped to +{offset}: {uuid.uuid4().hex}"
            with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
                conn.execute("SELECT %s::text", (marker,))

            def read_since_step() -> bool:
                log = cluster.server_log()
                return marker in log and LEASE_READ in log[log.rindex(marker) :]

            wait_for(read_since_step, f"B's lease read at +{offset}s")
        finally:
            a.popen.send_signal(signal.SIGCONT)
        until = server_now() + 3 * lease
        wait_for(lambda: server_now() > until, f"three leases at +{offset}s")

    try:
        record_result.update(backend="postgresql, server clock stepped (libfaketime)")
        scenario.run(step, record_result)
    finally:
        scenario.close()
