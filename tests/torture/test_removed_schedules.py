"""A deploy that removes a declared schedule (issue 12, item 4), with real worker processes of
two code versions (`tests/torture/removal_app.py`) on both backends.

- Version 2, started beside a running version 1, marks `gone` removed and cancels its queued
  slot jobs in the same transaction, with a `removed` audit entry; version 1 is fenced and
  enqueues no more of them.
- Rolled back (version 2 stopped), version 1 marks version 2's `fresh` removed but does not
  cancel its jobs: an older generation never cancels jobs of a schedule a newer one declared.
- With `keep_removed_jobs=True` the queued jobs of `gone` are kept, and the audit says so.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onthedot import App, JobFilter, JobState
from tests.torture.checker import Db
from tests.torture.harness import ROOT, wait_for, worker_env
from tests.torture.removal_app import make_app

pytestmark = pytest.mark.slow


class Workers:
    def __init__(self, url: str, tmp: Path) -> None:
        self.url, self.tmp = url, tmp
        self.procs: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(self, version: int, *, keep: bool = False) -> subprocess.Popen[bytes]:
        log = self.tmp / f"worker-{len(self.procs)}-v{version}.log"
        env = worker_env(self.url)
        env.update(ONTHEDOT_TEST_VERSION=str(version), ONTHEDOT_TEST_KEEP_REMOVED=str(int(keep)))
        command = [sys.executable, "-m", "onthedot", "--app", "tests.torture.removal_app:app"]
        with log.open("wb") as handle:
            proc = subprocess.Popen(
                [*command, "worker", "-c", "2", "-q", "default"], cwd=ROOT, env=env, stdout=handle,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        self.procs.append((proc, log))
        wait_for(lambda: "event=worker_started" in log.read_text(), f"v{version} to start")
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0

    def close(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)

    def logs(self) -> str:
        return "\n".join(log.read_text(errors="replace") for _, log in self.procs)


@pytest.fixture
def client(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.chdir(tmp_path)
    application = make_app(db_url, version=1)
    application.migrate()
    yield application
    application.close()


@pytest.fixture
def workers(db_url: str, tmp_path: Path) -> Iterator[Workers]:
    fleet = Workers(db_url, tmp_path)
    yield fleet
    fleet.close()


def _removed(db_url: str, key: str) -> bool:
    db = Db(db_url)
    try:
        rows = db.rows("SELECT removed_at FROM onthedot_schedules WHERE key = %s", key)
    finally:
        db.close()
    return bool(rows) and rows[0][0] is not None


def _jobs(client: App, key: str, state: JobState | None = None) -> list[int]:
    return [j.id for j in client.list_jobs(schedule_key=key, state=state, limit=10_000)]


def _parked(client: App, key: str, count: int = 3) -> None:
    wait_for(lambda: len(_jobs(client, key, JobState.QUEUED)) >= count, f"queued {key} jobs")


def test_a_deploy_cancels_the_removed_schedules_jobs(
    client: App, workers: Workers, db_url: str, record_result: dict[str, Any]
) -> None:
    v1 = workers.start(1)
    _parked(client, "gone")
    v2 = workers.start(2)
    wait_for(lambda: _removed(db_url, "gone"), "gone to be marked removed")
    gone_after_v2 = set(_jobs(client, "gone"))
    _parked(client, "fresh")
    assert _jobs(client, "gone", JobState.QUEUED) == []  # cancelled, and v1 is fenced
    assert set(_jobs(client, "gone")) == gone_after_v2  # none enqueued since
    (entry,) = [e for e in client.schedules.audit("gone") if e.action == "removed"]
    assert entry.details == {"cancelled_jobs": len(gone_after_v2), "kept_jobs": False}

    workers.stop(v2)  # the rollback: version 1 decides again
    wait_for(lambda: _removed(db_url, "fresh"), "fresh to be marked removed")
    fresh = _jobs(client, "fresh", JobState.QUEUED)
    assert fresh, "version 1 cancelled the jobs of a schedule version 2 declared"
    assert [e.action for e in client.schedules.audit("fresh")] == []
    workers.stop(v1)
    assert "Traceback" not in workers.logs()
    record_result.update(
        backend=client.storage.backend, cancelled=len(gone_after_v2), fresh_kept=len(fresh)
    )


def test_keep_removed_jobs_keeps_them(client: App, workers: Workers, db_url: str) -> None:
    v1 = workers.start(1)
    _parked(client, "gone")
    workers.stop(v1)
    queued = _jobs(client, "gone", JobState.QUEUED)
    v2 = workers.start(2, keep=True)
    wait_for(lambda: _removed(db_url, "gone"), "gone to be marked removed")
    assert _jobs(client, "gone", JobState.QUEUED) == queued
    (entry,) = [e for e in client.schedules.audit("gone") if e.action == "removed"]
    assert entry.details == {"cancelled_jobs": 0, "kept_jobs": True}
    workers.stop(v2)
    assert client.storage.count_jobs(JobFilter(schedule_key="gone")) == len(queued)
