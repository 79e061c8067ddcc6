"""Database outages, on a private PostgreSQL cluster that the tests stop and start.

- A worker started while the database is down waits, retrying with backoff and logging one
  clear `event=database_error` line per try (no traceback), then works once it is back.
- A worker running when the database crashes (`pg_ctl stop -m immediate`) survives, logs the
  errors, and resumes: its queued and running jobs all finish, no slot due during the outage is
  lost or doubled (catch-up "all"), and the process is the same one afterwards.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onthedot import App
from tests.torture.chaos_app import SCHEDULES, create_tables, make_app
from tests.torture.checker import (
    Db,
    Report,
    check_executions,
    check_jobs,
    check_schedule,
    unfinished,
)
from tests.torture.harness import ChaosLog, Fleet, Proc, wait_for
from tests.torture.pgcluster import PrivateCluster

pytestmark = pytest.mark.slow

OUTAGE = 15.0  # seconds the server stays down, at least
TICK = 1.0  # a slot due this long before the crash may not have been claimed yet
ERROR_LINE = re.compile(r"ERROR onthedot event=database_error where=(\S+|\"[^\"]*\") error=")


@pytest.fixture
def client(private_pg_url: str) -> Iterator[App]:
    application = make_app(private_pg_url, log_events=False)
    application.migrate()
    create_tables(private_pg_url)
    yield application
    application.close()


def _error_lines(proc: Proc) -> list[str]:
    return [line for line in proc.output().splitlines() if "event=database_error" in line]


def _retry_in(line: str) -> float:
    match = re.search(r"retry_in=([0-9.]+)", line)
    assert match, line
    return float(match.group(1))


def _produce(client: App, count: int, ms: int) -> dict[int, int]:
    work = client.jobs["chaos.work"]
    return {n: work.enqueue(n, 0, ms, unique_key=f"n{n}") for n in range(count)}


def _final(db: Db, ids: set[int]) -> bool:
    marks = ",".join("%s" for _ in ids)
    rows = db.rows(
        f"SELECT count(*) FROM onthedot_jobs WHERE id IN ({marks})"
        " AND state IN ('succeeded', 'failed', 'cancelled')",
        *ids,
    )
    return int(rows[0][0]) == len(ids)


def _caught_up(db: Db, until: float) -> bool:
    cursors = dict(db.rows(f"SELECT key, {db.ep('cursor')} FROM onthedot_schedules"))
    return all(cursors.get(key, 0) >= until for key in SCHEDULES)


def test_workers_ride_out_a_database_outage(
    private_cluster: PrivateCluster,
    private_pg_url: str,
    client: App,
    tmp_path: Path,
    record_result: dict[str, Any],
) -> None:
    fleet = Fleet(private_pg_url, tmp_path, ChaosLog())
    db = Db(private_pg_url)
    try:
        running = fleet.start()
        fleet.wait_started(running)
        work = client.jobs["chaos.work"]
        produced = {
            n: work.enqueue(n, 0, 20 if n % 4 else 2000, unique_key=f"n{n}") for n in range(40)
        }
        # Jobs only the worker started during the outage can take: it must come to work.
        produced |= {
            n: work.enqueue(n, 0, 20, queue="late", unique_key=f"n{n}") for n in range(40, 50)
        }
        before = time.time() + 2
        wait_for(lambda: _caught_up(db, before), "slots before the outage")
        wait_for(
            lambda: db.rows("SELECT count(*) FROM torture_executions WHERE ended IS NULL")[0][0],
            "a job running when the database goes away",
        )

        down = time.time()
        private_cluster.stop("immediate")  # a crash: no shutdown checkpoint, connections cut
        late = fleet.start("-q", "late")
        wait_for(lambda: len(_error_lines(late)) >= 2, "two database_error lines", 90)
        wait_for(lambda: _error_lines(running), "the running worker to notice the outage")
        # The fault injected is an outage of OUTAGE seconds at least (workers now report a
        # refused connection at once, so the lines above no longer take 10 s each).
        wait_for(lambda: time.time() - down >= OUTAGE, "the outage to last", OUTAGE + 5)
        private_cluster.start()
        up = time.time()

        wait_for(lambda: _final(db, set(produced.values())), "every job to finish", 90)
        recovered_at = time.time()
        end = time.time() + 3
        wait_for(lambda: _caught_up(db, end), "slots after the outage")
        assert running.alive() and late.alive(), "a worker died of the outage"
        fleet.stop_all()  # each exits 0
        fleet.final_drain(lambda: unfinished(db))

        report = Report()
        check_jobs(db, report, produced)
        for key, spec in SCHEDULES.items():
            check_schedule(
                db,
                report,
                key,
                spec,
                end,
                alive=[(down - TICK, recovered_at)],
                names=("due_in_outage_or_recovery", "due_before_or_after"),
            )
        check_executions(db, report, killed_pids=set())
        late_lines = _error_lines(late)
        delays = [_retry_in(line) for line in late_lines]
        record_result.update(
            database_down_s=round(up - down, 1),
            error_lines_running_worker=len(_error_lines(running)),
            error_lines_late_worker=len(late_lines),
            late_worker_retry_in=delays,
            recovered_after_s=round(recovered_at - up, 1),
            **report.numbers,
        )
        report.assert_ok()
        for line in late_lines:
            assert ERROR_LINE.search(line), line
            assert "unreachable" in line or "failed" in line, line
        assert delays == sorted(delays) and delays[-1] > delays[0], f"no backoff: {delays}"
        assert "Traceback" not in running.output() + late.output()
        late_ran = db.rows("SELECT count(*) FROM torture_executions WHERE pid = %s", late.pid)
        assert late_ran[0][0] >= 10, "the worker started during the outage never worked"
        outage = report.numbers["every-second"]["due_in_outage_or_recovery"]
        assert outage > 0, "no slot came due during the outage"
    finally:
        fleet.close()
        db.close()
