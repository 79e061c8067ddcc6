"""A full disk under a SQLite database (issue 24 item 11): an outage, not a crash.

The database lives on a tmpfs of its own (16 MiB, mounted for the test: it needs root, or the
test skips). Two real `onthedot worker` processes (`-c 4`, lease 2 s) run 400 `hostile.note`
jobs, each appending its number and pid to a file outside the tmpfs (one line per execution).
Once jobs are running, a filler file takes every free byte of the tmpfs, so each write of the
workers fails with SQLITE_FULL; the disk stays full until both workers have logged their
fifth `database_error` about it and every running job's lease ran out a whole lease ago (the
heartbeat cannot extend them); then the filler is deleted.

Checked: both workers stay up through the outage and say why in one line
(`event=database_error ... is full`), with no traceback; every job ends `succeeded` with its
result, after exactly one attempt, and ran exactly once (no number twice in the file), so no
outcome finished during the outage was lost and no lease that ran out meanwhile made another
worker (or the same one) run a job again; SIGTERM then stops both with exit 0.

Before: the first full write raised a raw `sqlite3.OperationalError: database or disk is full`
out of the worker's threads, the workers exited 1, the outcomes they held were never written,
and jobs ran a second time once space came back.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onthedot import JobState
from tests import waiting
from tests.torture.checker import Db, unfinished
from tests.torture.harness import ChaosLog, Fleet, wait_for
from tests.torture.hostile_app import make_app

APP = "tests.torture.hostile_app:app"
JOBS = 400
ERRORS_WHILE_FULL = 5  # database_error lines per worker before space comes back


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs mounted for this test (root only), unmounted afterwards."""
    mount = shutil.which("mount")
    folder = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    folder.mkdir()
    if mount is None or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, name: str = "filler") -> Path:
    """Take every free byte of the file system of `folder`; the filler file."""
    filler = folder / name
    chunk = b"\0" * 65536
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        while True:  # the last partial chunk, byte by byte
            try:
                handle.write(b"\0")
            except OSError:
                break
    return filler


def fill_with_empty_wal(folder: Path, pids: list[int]) -> Path:
    """Fill the disk with the database's WAL file emptied first. SQLite writes into the room
    the WAL file keeps after a checkpoint even on a full disk, so without this small writes
    (the heartbeat's) go on while larger ones fail. The workers are paused (SIGSTOP) for the
    checkpoint and the filling; the checkpoint is tried again until no paused worker was in
    the middle of a transaction."""
    database = sqlite3.connect(folder / "onthedot.db", timeout=0.2, isolation_level=None)

    def emptied_and_filled() -> bool:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            busy, frames, _ = database.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy == 0 and frames == 0:
                fill(folder)
                return True
        except sqlite3.OperationalError:
            pass  # a paused worker holds the write lock
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
        return False

    try:
        waiting.wait_for(emptied_and_filled, "an empty WAL file", 60, every=0.01)
    finally:
        database.close()
    return folder / "filler"


def test_a_full_disk_is_an_outage_and_every_job_runs_once(
    small_disk: Path, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    url = f"sqlite:///{small_disk / 'onthedot.db'}"
    runs = tmp_path / "runs"
    client = make_app(url)
    client.migrate()
    note = client.jobs["hostile.note"]
    ids = note.enqueue_many([[str(tmp_path), n, 100] for n in range(JOBS)])
    fleet = Fleet(url, tmp_path, ChaosLog(), lease=2.0, app=APP)
    watch = Db(url)
    try:
        procs = [fleet.start("-c", "4", "--no-scheduler") for _ in range(2)]
        for proc in procs:
            fleet.wait_started(proc)
        wait_for(lambda: runs.exists() and len(runs.read_text().splitlines()) >= 20, "jobs to run")
        filler = fill_with_empty_wal(small_disk, [p.pid for p in procs])

        def errors_logged() -> bool:
            for proc in procs:
                assert proc.alive(), f"a worker died:\n{proc.output()[-3000:]}"
            return all(_full_errors(proc.output()) >= ERRORS_WHILE_FULL for proc in procs)

        wait_for(errors_logged, "both workers to report the full disk", 120)
        wait_for(lambda: _leases_ran_out(watch), "the running jobs' leases to run out", 120)
        done_while_full = len(runs.read_text().splitlines())
        filler.unlink()
        wait_for(lambda: unfinished(watch) == 0, "every job to finish once space is back", 120)
        fleet.stop_all()
    finally:
        fleet.close()
        watch.close()
    executions = Counter(line.split()[0] for line in runs.read_text().splitlines())
    jobs = [client.get_job(i) for i in ids]
    client.close()
    logs = fleet.logs()
    record_result.update(
        jobs=JOBS,
        executed_before_space_came_back=done_while_full,
        full_errors=[_full_errors(p.output()) for p in procs],
        ran_twice=sorted(n for n, c in executions.items() if c > 1),
        not_succeeded=sum(j.state is not JobState.SUCCEEDED for j in jobs),
    )
    assert "Traceback" not in logs, logs[-3000:]
    assert len(executions) == JOBS, f"{JOBS - len(executions)} jobs never ran"
    assert not [n for n, c in executions.items() if c > 1], "jobs ran twice"
    for job in jobs:
        assert job.state is JobState.SUCCEEDED and job.attempts == 1, job
        assert job.result == job.args[1], job


def _leases_ran_out(db: Db) -> bool:
    """Jobs are running, and every one's lease ran out a whole lease (2 s) ago: what a rescue
    would take back once the database accepts writes again."""
    sql = "SELECT count(*), max(lease_until) FROM onthedot_jobs WHERE state = 'running'"
    count, latest = db.rows(sql)[0]
    return bool(count) and latest < time.time() - 2


def _full_errors(log: str) -> int:
    return sum(
        1 for line in log.splitlines() if "event=database_error" in line and " is full" in line
    )
