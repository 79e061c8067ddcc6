"""Safe rolling deploys, proven with two app versions in separate processes on one PostgreSQL.

- once a v2 worker is alive, v1 workers never fire a slot of the old timing of `report` and never
  fire `legacy` (removed in v2), and never write their timing back into the ledger;
- after a rollback (the v2 worker killed, its heartbeat expired) v1 takes over with no manual step.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.conftest import drop_pg_schema, new_pg_schema_url

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0
MARGIN = timedelta(seconds=1.5)  # a tick that began just before the newer worker registered


@pytest.fixture
def pg() -> Iterator[str]:
    url, schema = new_pg_schema_url()
    subprocess.run(
        [sys.executable, "-m", "onthedot", "--database", url, "migrate"],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    yield url
    drop_pg_schema(schema)


def start_worker(url: str, version: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "ONTHEDOT_DATABASE_URL": url,
        "ONTHEDOT_TEST_VERSION": str(version),
        "ONTHEDOT_TEST_LEASE": str(LEASE),
        "PYTHONPATH": str(ROOT),
    }
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "onthedot",
                "--app",
                "tests.deploy.apps.versioned:app",
                "worker",
                "--concurrency",
                "2",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def query(url: str, sql: str, *params: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]


def live_generations(url: str) -> list[int]:
    rows = query(
        url,
        "SELECT generation FROM onthedot_workers "
        "WHERE heartbeat_at > now() - %s * interval '1 second'",
        LEASE,
    )
    return sorted(int(r[0]) for r in rows)  # type: ignore[call-overload]


def slots(url: str, key: str, after: datetime | None = None) -> list[datetime]:
    rows = query(
        url,
        "SELECT slot FROM onthedot_slots WHERE schedule_key = %s AND slot > %s ORDER BY slot",
        key,
        after or datetime(1970, 1, 1, tzinfo=UTC),
    )
    return [r[0] for r in rows]  # type: ignore[misc]


def ledger_fingerprint(url: str, key: str) -> tuple[str, str]:
    row = query(url, "SELECT fingerprint, spec FROM onthedot_schedules WHERE key = %s", key)
    return row[0]  # type: ignore[return-value]


@pytest.mark.slow
def test_newest_code_decides_and_rollback_hands_back(pg: str, tmp_path: Path) -> None:
    procs: list[subprocess.Popen[bytes]] = []
    try:
        old_a = start_worker(pg, 1, tmp_path / "v1a.log")
        old_b = start_worker(pg, 1, tmp_path / "v1b.log")
        procs += [old_a, old_b]
        wait_for(
            "v1 firing", lambda: len(slots(pg, "report")) >= 2 and len(slots(pg, "legacy")) >= 2
        )
        assert all(int(s.timestamp()) % 2 == 0 for s in slots(pg, "report"))
        v1_fingerprint = ledger_fingerprint(pg, "report")

        new = start_worker(pg, 2, tmp_path / "v2.log")
        procs.append(new)
        wait_for("v2 registered", lambda: len(set(live_generations(pg))) == 2)
        alive_at = query(pg, "SELECT now()")[0][0]
        assert isinstance(alive_at, datetime)
        wait_for("v2 firing", lambda: len(slots(pg, "report", alive_at + MARGIN)) >= 3)
        v2_fingerprint = ledger_fingerprint(pg, "report")
        assert v2_fingerprint != v1_fingerprint and v2_fingerprint[1] == "every 3s"

        # The overlap: old and new workers run side by side for a while.
        overlap_end = time.monotonic() + 8
        while time.monotonic() < overlap_end:
            assert ledger_fingerprint(pg, "report") == v2_fingerprint, "v1 undid v2's ledger"
            time.sleep(0.2)
        during = slots(pg, "report", alive_at + MARGIN)
        assert during, "report stopped firing during the overlap"
        assert all(int(s.timestamp()) % 3 == 0 for s in during), (
            f"a v1 worker fired a slot of the old timing after v2 was alive: {during}"
        )
        assert slots(pg, "legacy", alive_at + MARGIN) == [], "removed schedule fired under v2"
        ran_by = query(
            pg,
            "SELECT DISTINCT result->>'version' FROM onthedot_jobs "
            "WHERE schedule_key = 'report' AND slot > %s AND state = 'succeeded'",
            alive_at + MARGIN,
        )
        assert ran_by, "no report job finished during the overlap"

        # Rollback: the v2 worker dies; once its heartbeat expires v1 decides again.
        new.send_signal(signal.SIGKILL)
        new.wait(10)
        killed_at = query(pg, "SELECT now()")[0][0]
        assert isinstance(killed_at, datetime)
        wait_for(
            "v1 back on its timing", lambda: ledger_fingerprint(pg, "report") == v1_fingerprint
        )
        wait_for("legacy firing again", lambda: len(slots(pg, "legacy", killed_at)) >= 2)
        wait_for(
            "report on the 2 s grid",
            lambda: any(
                int(s.timestamp()) % 2 == 0 and int(s.timestamp()) % 3 != 0
                for s in slots(pg, "report", killed_at)
            ),
        )
        # Exactly once held throughout: the history's primary key and one job per slot.
        dupes = query(
            pg,
            "SELECT schedule_key, slot, count(*) FROM onthedot_jobs "
            "WHERE slot IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1",
        )
        assert dupes == []
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(10)


@pytest.mark.slow
def test_old_worker_started_during_deploy_is_fenced_from_the_start(pg: str, tmp_path: Path) -> None:
    """A v1 worker that (re)starts while v2 runs neither rewrites the ledger nor fires."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(start_worker(pg, 1, tmp_path / "v1.log"))
        wait_for("v1 firing", lambda: len(slots(pg, "report")) >= 1)
        procs[0].send_signal(signal.SIGTERM)
        procs[0].wait(30)
        procs.append(start_worker(pg, 2, tmp_path / "v2.log"))
        wait_for("v2 owns report", lambda: ledger_fingerprint(pg, "report")[1] == "every 3s")
        restarted_at = query(pg, "SELECT now()")[0][0]
        assert isinstance(restarted_at, datetime)
        procs.append(start_worker(pg, 1, tmp_path / "v1-again.log"))
        wait_for("both alive", lambda: len(set(live_generations(pg))) == 2)
        end = time.monotonic() + 6
        while time.monotonic() < end:
            assert ledger_fingerprint(pg, "report")[1] == "every 3s"
            time.sleep(0.2)
        fired = slots(pg, "report", restarted_at)
        assert fired and all(int(s.timestamp()) % 3 == 0 for s in fired)
        assert slots(pg, "legacy", restarted_at) == []
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(10)
