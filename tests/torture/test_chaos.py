"""Crash and restart torture, on PostgreSQL (a private cluster) and on SQLite (several processes
on one host).

Three worker processes share one database with two schedules (`every 1s` and the cron
`*/3 * * * * *`, catch-up "all" with a one-hour window) while a producer enqueues a steady
stream of jobs (some fail and retry, some always fail, some run long). For a bounded time a
chaos loop SIGKILLs random workers (preferring one that is running a job) and starts
replacements; once it kills every worker at the same time and leaves them dead for a few
seconds (a blackout: every slot due then is owed by catch-up), and on PostgreSQL it restarts the
server once (`pg_ctl restart -m fast`, what `pg_ctlcluster ... restart` runs). Then the workers
are stopped gracefully, one drain worker without a scheduler finishes what is left, and
`checker` reads the database.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from onthedot import App
from tests.pgbouncer import PgBouncer, pgbouncer_or_skip
from tests.torture.chaos_app import SCHEDULES, create_tables, make_app
from tests.torture.checker import (
    Db,
    Report,
    check_executions,
    check_jobs,
    check_schedule,
    unfinished,
)
from tests.torture.harness import ChaosLog, Fleet, Producer, wait_for
from tests.torture.pgcluster import PrivateCluster

pytestmark = pytest.mark.slow

WORKERS = 3
CHAOS_SECONDS = float(os.environ.get("ONTHEDOT_TORTURE_SECONDS", "35"))
BLACKOUT_SECONDS = 4.0
SEED = int(os.environ.get("ONTHEDOT_TORTURE_SEED", "0")) or random.SystemRandom().randint(1, 10**6)


@pytest.fixture(params=["sqlite", "postgres", "pgbouncer"])
def database(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, PrivateCluster | None]]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/torture.db", None
        return
    cluster: PrivateCluster = request.getfixturevalue("private_cluster")
    direct = request.getfixturevalue("private_pg_url")
    if request.param == "postgres":
        yield direct, cluster
        return
    # Workers, producer and scheduler through PgBouncer (pool_mode = transaction, a pool of 4
    # server connections for 3-4 workers), LISTEN on the direct URL; the recorder and checker
    # connect directly.
    pgbouncer_or_skip()
    bouncer = PgBouncer("127.0.0.1", cluster.port, pool_size=4)
    try:
        yield (
            bouncer.url(direct.rpartition("/")[2], f"direct_url={quote(direct, safe='')}"),
            cluster,
        )
    finally:
        bouncer.stop()


@pytest.fixture
def client(database: tuple[str, PrivateCluster | None]) -> Iterator[App]:
    url, _ = database
    application = make_app(url, log_events=False)
    application.migrate()
    create_tables(url)
    yield application
    application.close()


def _busy_pids(db: Db, fleet: Fleet) -> list[int]:
    """Pids of running workers with an execution in progress (started in the last 10 s)."""
    live = {p.pid for p in fleet.running()}
    rows = db.rows(
        "SELECT DISTINCT pid FROM torture_executions WHERE ended IS NULL AND started > %s",
        time.time() - 10,
    )
    return sorted(pid for (pid,) in rows if pid in live)


def _ready(db: Db) -> dict[int, float]:
    return {int(pid): float(t) for pid, t in db.rows("SELECT pid, ready FROM torture_workers")}


def _ledger_caught_up(db: Db, end: float) -> bool:
    rows = db.rows(f"SELECT key, {db.ep('cursor')} FROM onthedot_schedules")
    cursors = {key: cursor for key, cursor in rows}
    return all(cursors.get(key, 0) >= end for key in SCHEDULES)


def _chaos(fleet: Fleet, db: Db, cluster: PrivateCluster | None, rng: random.Random) -> None:
    started = time.monotonic()
    blackout_done = restart_done = False
    while (elapsed := time.monotonic() - started) < CHAOS_SECONDS:
        time.sleep(rng.uniform(0.8, 2.0))  # the chaos cadence, not a wait for a condition
        if not blackout_done and elapsed > 0.3 * CHAOS_SECONDS:
            blackout_done = True
            for proc in fleet.running():
                fleet.kill(proc)
            fleet.chaos.add("blackout")
            time.sleep(BLACKOUT_SECONDS)
        elif cluster is not None and not restart_done and elapsed > 0.6 * CHAOS_SECONDS:
            restart_done = True
            # Restart under workers that are up and connected, not still importing.
            wait_for(lambda: set(_ready(db)) >= {p.pid for p in fleet.running()}, "workers up")
            fleet.chaos.add("database_restart")
            cluster.restart()
            fleet.chaos.add("database_back")
        else:
            try:
                busy = _busy_pids(db, fleet)
            except Exception:  # the database is restarting: pick blindly
                busy = []
            running = fleet.running()
            victims = [p for p in running if p.pid in busy] if rng.random() < 0.75 else []
            if running:
                fleet.kill(rng.choice(victims or running))
        while len(fleet.running()) < WORKERS:
            fleet.start()


def test_crash_and_restart_torture(
    database: tuple[str, PrivateCluster | None],
    client: App,
    tmp_path: Path,
    record_result: dict[str, Any],
) -> None:
    url, cluster = database
    chaos = ChaosLog()
    fleet = Fleet(url, tmp_path, chaos, lease=2.0)
    db = Db(url)
    try:
        for _ in range(WORKERS):
            fleet.start()
        wait_for(
            lambda: len(db.rows("SELECT key FROM onthedot_schedules")) == len(SCHEDULES),
            "the workers to see the schedules",
        )
        producer = Producer(client, SEED)
        producer.start()
        _chaos(fleet, db, cluster, random.Random(SEED))
        producer.halt.set()
        producer.join(60)
        assert not producer.is_alive(), "the producer could not finish its last enqueue"
        end = time.time()
        produced_ids = set(producer.produced.values())

        def settled() -> bool:
            if not _ledger_caught_up(db, end):
                return False
            marks = ",".join("%s" for _ in produced_ids)
            rows = db.rows(
                f"SELECT count(*) FROM onthedot_jobs WHERE id IN ({marks})"
                " AND state IN ('succeeded', 'failed', 'cancelled')",
                *produced_ids,
            )
            return int(rows[0][0]) == len(produced_ids)

        wait_for(settled, "every produced job to finish and the schedules to catch up", 120)
        fleet.stop_all()
        fleet.final_drain(lambda: unfinished(db))

        report = Report()
        alive = fleet.alive_spans(_ready(db))
        for key, spec in SCHEDULES.items():
            check_schedule(db, report, key, spec, end, alive=alive)
        check_jobs(db, report, producer.produced, ambiguous=producer.ambiguous)
        check_executions(db, report, fleet.killed_pids())
        logs = fleet.logs()
        record_result.update(
            backend=url.split(":", 1)[0] + (" via pgbouncer" if "pooler=" in url else ""),
            seed=SEED,
            chaos_seconds=CHAOS_SECONDS,
            workers_killed=chaos.count("kill"),
            workers_started=chaos.count("start"),
            database_restarts=chaos.count("database_restart"),
            blackouts=chaos.count("blackout"),
            producer_enqueue_errors=len(producer.errors),
            database_error_lines=logs.count("event=database_error"),
            rescued_lines=logs.count("event=job_rescued"),
            **report.numbers,
        )
        report.assert_ok()
        assert "Traceback" not in logs, logs[logs.index("Traceback") - 2000 :][:6000]
        # The run must have done what it claims, or the checks above prove nothing.
        executions = report.numbers["executions"]
        assert executions["killed_mid_run_then_rescued"] > 0, "no job was killed mid-run"
        assert chaos.count("kill") >= 5
        assert report.numbers["jobs"]["produced"] > 100
        assert report.numbers["jobs"]["by_state"].get("failed", 0) > 0, "no job failed for good"
        assert executions["jobs_with_more_than_one_attempt"] > 0
        assert all(report.numbers[key]["due_while_none_was"] > 0 for key in ["every-second"])
        if cluster is not None:
            assert "event=database_error" in logs, "the restart went unnoticed"
    finally:
        chaos.dump(tmp_path / "chaos.log")
        fleet.close()
        db.close()
