"""PostgreSQL refusing a connection for a reason (issue 12, item 14), on the private cluster:
a database or role that does not exist, a wrong password (a role of its own with a password and
a `scram-sha-256` line in pg_hba.conf), a role whose connection limit is reached. The real
`onthedot` command reports the server's reason in one line at once (not "unreachable" after
10 s of pool warnings); a worker waiting for a missing database logs one line per retry, and
starts once the database exists."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.torture.chaos_app import create_tables, make_app
from tests.torture.harness import ROOT, ChaosLog, Fleet, wait_for, worker_env
from tests.torture.pgcluster import PrivateCluster

pytestmark = pytest.mark.slow

FAST = 5.0  # seconds: well under the pool's 10 s connection timeout


@pytest.fixture
def cluster(private_cluster: PrivateCluster) -> Iterator[PrivateCluster]:
    private_cluster.start()
    hba = private_cluster.data / "pg_hba.conf"
    original = hba.read_text()
    with psycopg.connect(private_cluster.admin_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS pw_user")
        conn.execute("DROP ROLE IF EXISTS limited")
        conn.execute("CREATE ROLE pw_user LOGIN PASSWORD 'right-one'")
        conn.execute("CREATE ROLE limited LOGIN CONNECTION LIMIT 0")
    hba.write_text("host all pw_user 127.0.0.1/32 scram-sha-256\n" + original)
    private_cluster._run("pg_ctl", "-D", str(private_cluster.data), "reload")
    try:
        yield private_cluster
    finally:
        hba.write_text(original)
        private_cluster._run("pg_ctl", "-D", str(private_cluster.data), "reload")


def onthedot(url: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "onthedot", "--database", url, *args],
        cwd=ROOT, env=worker_env(url), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done, time.monotonic() - started


def test_refusals_are_one_line_at_once(cluster: PrivateCluster, record_result: Any) -> None:
    port = cluster.port
    cases = {
        f"postgresql://postgres@127.0.0.1:{port}/shop": (
            'database "shop" does not exist: create it or fix the URL'
        ),
        f"postgresql://nobody@127.0.0.1:{port}/postgres": (
            'role "nobody" does not exist: create it or fix the user in the URL'
        ),
        f"postgresql://pw_user:wrong@127.0.0.1:{port}/postgres": (
            'password authentication failed for user "pw_user"'
        ),
        f"postgresql://limited@127.0.0.1:{port}/postgres": "too many connections for role",
    }
    seen = {}
    for url, reason in cases.items():
        for verb in (("jobs", "list"), ("health",)):
            done, took = onthedot(url, *verb)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 1, (url, done.stdout, done.stderr)
            assert len(lines) == 1, (url, done.stderr)
            assert reason in lines[0], (url, lines[0])
            assert "wrong" not in lines[0]  # the password is never shown
            assert took < FAST, (url, f"{took:.1f}s")
            seen[url.split("@")[0].split("//")[1]] = (lines[0], round(took, 2))
    record_result.update(answers=seen)


def test_a_worker_waits_for_a_missing_database(
    cluster: PrivateCluster, tmp_path: Path, record_result: Any
) -> None:
    name = f"later_{uuid.uuid4().hex[:8]}"
    url = cluster.url(name)
    fleet = Fleet(url, tmp_path, ChaosLog())
    try:
        proc = fleet.start("--no-scheduler")

        def errors() -> list[str]:
            return [line for line in proc.output().splitlines() if "event=database_error" in line]

        wait_for(lambda: len(errors()) >= 3, "three retries logged", 30)
        lines = proc.output().splitlines()
        assert all(f'database \\"{name}\\" does not exist' in e for e in errors()), errors()
        assert not [line for line in lines if "psycopg.pool" in line], lines[:20]
        assert len(lines) <= len(errors()) + 1, lines  # one line per retry, nothing else
        cluster.create_database(name)
        app = make_app(url, log_events=False)
        app.migrate()
        app.close()
        create_tables(url)
        fleet.wait_started(proc)
        record_result.update(retries_logged=len(errors()))
        fleet.stop_all()
    finally:
        fleet.close()
