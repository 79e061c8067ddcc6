"""Many worker processes on one PostgreSQL database (issue 16, item 5).

32 real `onthedot worker --processes 1` processes, every one running its scheduler, on a private
cluster (32 x 3 connections would exhaust the shared server's 100; this one allows 200 and
preloads `pg_stat_statements`, which counts every statement the server runs).

1. Idle: once every worker is registered and listening, and nothing is due (an empty queue, one
   `every 1h` schedule), the statements the fleet runs in a window are counted per worker and
   second and held under `IDLE_BOUND`, a bound derived from the design (below).
2. Drain: three runtime schedules `every 1s` are created (each of the 32 schedulers races on
   the ledger for their slots) and 20,000 light jobs are enqueued in batches of 1,000 (each
   commit's NOTIFY wakes the whole fleet). Every job must run exactly once (each execution
   appends `job_id attempt pid` to a file), end final, every slot be enqueued exactly once
   (`checker.check_schedule`), more than a few processes take part, no worker die, and neither
   any worker's log nor the server's log say `deadlock detected`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from onthedot.schedules.scheduler import MAX_SLEEP
from onthedot.worker.maintenance import PAUSED_EVERY
from tests.conftest import IN_CI
from tests.torture.checker import Db, Report, check_schedule, unfinished
from tests.torture.harness import ChaosLog, Fleet, wait_for
from tests.torture.many_app import make_app
from tests.torture.pgcluster import PrivateCluster, unavailable_reason

pytestmark = pytest.mark.slow

WORKERS = 32
JOBS = 20_000
BATCH = 1_000
LEASE = 30.0  # the default lease: the keeper's intervals follow from it
POLL = 1.0  # the default poll interval
IDLE_WINDOW = 15.0
RUNTIME_SCHEDULES = {f"every-second-{i}": "every 1s" for i in range(3)}
SCHEDULE_SECONDS = 12.0  # the schedules keep ticking at least this long

# Statements an idle worker runs per second, by design (none of them waits for another):
# - one-statement reads (autocommit): the claimer's look for the next ready job once per poll
#   interval (it claims only when that look finds one), the scheduler's idle tick at most once
#   per MAX_SLEEP, the keeper's read of the paused queues every PAUSED_EVERY;
# - the keeper's heartbeat every lease/3 and its rescue check every lease/2, transactions of at
#   most 4 statements (BEGIN, two statements, COMMIT);
# - the prune lease (3 statements), once a minute and 5 s after a start, so once in the window.
IDLE_DESIGN = (
    1 / POLL + 1 / MAX_SLEEP + 1 / PAUSED_EVERY + 4 * (3 / LEASE + 2 / LEASE) + 3 / IDLE_WINDOW
)
# One statement a second of slack per worker (a tick or a lookup woken early by a change): the
# bound fails a claim per poll interval besides the lookup, let alone a loop polling every 10 ms.
IDLE_BOUND = IDLE_DESIGN + 1.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    reason = unavailable_reason()
    if reason is not None:
        if IN_CI:
            pytest.fail(f"cannot build a private PostgreSQL cluster: {reason} (CI=true)")
        pytest.skip(f"cannot build a private PostgreSQL cluster: {reason}")
    cluster = PrivateCluster("shared_preload_libraries=pg_stat_statements")
    try:
        cluster.start()
        with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        yield cluster
    finally:
        cluster.remove()


class Statements:
    """What the server ran for one database: `pg_stat_statements` calls and the database's
    transactions (`pg_stat_database`, flushed by each backend within about 10 s, so only
    the statement counts are exact)."""

    def __init__(self, cluster: PrivateCluster, database: str) -> None:
        self.conn = psycopg.connect(cluster.admin_url, autocommit=True)
        self.database = database

    def reset(self) -> int:
        self.conn.execute("SELECT pg_stat_statements_reset()")
        return self.transactions()

    def transactions(self) -> int:
        row = self.conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            (self.database,),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def calls(self) -> list[tuple[str, int]]:
        rows = self.conn.execute(
            "SELECT s.query, s.calls FROM pg_stat_statements s"
            " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s ORDER BY s.calls DESC",
            (self.database,),
        ).fetchall()
        return [(" ".join(str(q).split())[:90], int(n)) for q, n in rows]

    def listening(self) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND query LIKE 'LISTEN%%'",
            (self.database,),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def close(self) -> None:
        self.conn.close()


def _measure_idle(stats: Statements, window: float) -> dict[str, Any]:
    before = stats.reset()
    started = time.monotonic()
    time.sleep(window)  # the measuring window itself, not a wait for a condition
    calls = stats.calls()
    elapsed = time.monotonic() - started
    transactions = stats.transactions() - before
    total = sum(n for _, n in calls)
    return {
        "window_s": round(elapsed, 1),
        "statements_per_s": round(total / elapsed, 1),
        "statements_per_s_per_worker": round(total / elapsed / WORKERS, 2),
        "transactions_per_s_per_worker": round(transactions / elapsed / WORKERS, 2),
        "top": [(q, round(n / elapsed / WORKERS, 2)) for q, n in calls[:8]],
    }


def _executions(record: Path) -> list[tuple[int, int, int]]:
    if not record.exists():
        return []
    lines = record.read_text().splitlines()
    return [(int(a), int(b), int(c)) for a, b, c in (line.split() for line in lines)]


def test_many_processes_drain_and_idle_load(
    cluster: PrivateCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    record_result: dict[str, Any],
) -> None:
    url = cluster.create_database("many")
    record = tmp_path / "executions.txt"
    client = make_app(url, log_events=False)
    client.migrate()
    fleet = Fleet(url, tmp_path, ChaosLog(), lease=LEASE, app="tests.torture.many_app:app")
    monkeypatch.setenv("ONTHEDOT_TEST_RECORD", str(record))  # every worker's, the last drain's
    db = Db(url)
    stats = Statements(cluster, "many")
    try:
        t0 = time.monotonic()
        procs = [fleet.start() for _ in range(WORKERS)]
        wait_for(
            lambda: (
                db.rows("SELECT count(*) FROM onthedot_workers")[0][0] >= WORKERS
                and stats.listening() >= WORKERS
            ),
            f"{WORKERS} workers registered and listening",
            180,
        )
        startup = time.monotonic() - t0
        time.sleep(2.0)  # past the last worker's start-up statements (schema check, sync)
        idle = _measure_idle(stats, IDLE_WINDOW)

        # -- the drain, under schedules every second --------------------------------------
        # Each one's first slot is the first after the cursor it is created with, an instant
        # of the database clock between these two reads (give or take the app's estimate of
        # that clock).
        now = f"SELECT {db.ep('now()')}"
        cursors = {}
        for key, spec in RUNTIME_SCHEDULES.items():
            before = float(db.rows(now)[0][0])
            client.schedules.create(key, spec, "many.tick", catchup="all", catchup_window="1h")
            cursors[key] = (before - 0.5, float(db.rows(now)[0][0]) + 0.5)
        created = time.time()
        t1 = time.monotonic()
        noop = client.jobs["many.noop"]
        ids: list[int] = []
        for start in range(0, JOBS, BATCH):
            ids += noop.enqueue_many([[n] for n in range(start, start + BATCH)])
        marks = ",".join(str(i) for i in ids)

        def drained() -> bool:
            rows = db.rows(f"SELECT count(*) FROM onthedot_jobs WHERE state = 'succeeded'"
                           f" AND id IN ({marks})")  # fmt: skip
            return int(rows[0][0]) == JOBS

        wait_for(drained, f"{JOBS} jobs to succeed", 300)
        drain_s = time.monotonic() - t1
        time.sleep(max(0.0, created + SCHEDULE_SECONDS - time.time()))  # let the slots tick
        end = time.time()
        wait_for(
            lambda: all(
                cursor >= end
                for (cursor,) in db.rows(
                    f"SELECT {db.ep('cursor')} FROM onthedot_schedules WHERE key <> 'hourly'"
                )
            ),
            "the schedules to pass the end of the run",
        )
        dead = [p.pid for p in procs if not p.alive()]
        assert not dead, f"workers died: {dead}\n{fleet.logs()[-3000:]}"
        fleet.stop_all()
        fleet.final_drain(lambda: unfinished(db))

        report = Report()
        for key, spec in RUNTIME_SCHEDULES.items():
            check_schedule(db, report, key, spec, end, since=cursors[key])
        runs = Counter((job, attempt) for job, attempt, _ in _executions(record))
        twice = sorted(k for k, n in runs.items() if n > 1)
        if twice:
            report.fail(f"{len(twice)} attempts ran more than once, e.g. {twice[:5]}")
        states = dict(db.rows("SELECT state, count(*) FROM onthedot_jobs GROUP BY state"))
        if set(states) != {"succeeded"}:
            report.fail(f"jobs not all succeeded: {states}")
        for job_id, attempts in db.rows("SELECT id, attempts FROM onthedot_jobs"):
            if runs.get((job_id, attempts), 0) != 1:
                report.fail(f"job {job_id} attempt {attempts} succeeded but never ran")
                break
        pids = Counter(pid for _, _, pid in _executions(record))
        logs = fleet.logs()
        server_log = cluster.server_log()
        record_result.update(
            workers=WORKERS,
            startup_s=round(startup, 1),
            idle=idle,
            idle_bound_statements_per_s_per_worker=round(IDLE_BOUND, 2),
            jobs=JOBS,
            drain_s=round(drain_s, 1),
            jobs_per_s=round(JOBS / drain_s),
            processes_that_ran_jobs=len(pids),
            busiest_process_share=round(max(pids.values()) / sum(pids.values()), 3),
            retries=sum(1 for _job, attempt in runs if attempt > 1),
            server_log_errors=server_log.count("ERROR:"),
            **report.numbers,
        )
        report.assert_ok()
        assert "deadlock detected" not in logs, logs[logs.index("deadlock detected") - 2000 :]
        assert "deadlock detected" not in server_log, server_log[-4000:]
        assert "Traceback" not in logs, logs[logs.index("Traceback") - 2000 :][:6000]
        assert len(pids) >= WORKERS // 4, f"only {len(pids)} processes ran jobs: {pids}"
        assert idle["statements_per_s_per_worker"] < IDLE_BOUND, idle
        # The measurement must have seen the idle fleet, or the bound proves nothing.
        assert idle["statements_per_s_per_worker"] > IDLE_DESIGN / 2, idle
    finally:
        stats.close()
        fleet.close()
        db.close()
        client.close()
