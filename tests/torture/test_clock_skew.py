"""Clock skew: workers whose own clocks are shifted by up to ±30 s (the test hook
`SystemClock(offset=...)`, through $ONTHEDOT_TEST_CLOCK_OFFSET) produce the same slots, once
each, and never a slot before it is due by the database clock.

Three phases on one database, so every skewed worker provably decides slots (its log counts
them): a worker 30 s ahead runs alone, then a worker 30 s behind runs alone (it must neither
fire again what the first one fired nor skip what came due in between), then four workers
(-30, -9, +13, +30 s) together.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onthedot import App
from tests.torture.chaos_app import SCHEDULES, create_tables, make_app
from tests.torture.checker import Db, Report, check_schedule
from tests.torture.harness import ChaosLog, Fleet, Proc, wait_for

pytestmark = pytest.mark.slow

PHASE_SECONDS = 3.0


@pytest.fixture
def client(db_url: str) -> Iterator[App]:
    application = make_app(db_url, log_events=False)
    application.migrate()
    create_tables(db_url)
    yield application
    application.close()


def _run_until_slots_after(db: Db, seconds: float) -> float:
    """Wait until every schedule's cursor is `seconds` past now; return that instant."""
    until = time.time() + seconds

    def caught_up() -> bool:
        rows = db.rows(f"SELECT key, {db.ep('cursor')} FROM onthedot_schedules")
        cursors = dict(rows)
        return all(cursors.get(key, 0) >= until for key in SCHEDULES)

    wait_for(caught_up, f"the schedules to reach {seconds}s from now", seconds + 60)
    return until


def _slots_logged(proc: Proc) -> int:
    return proc.output().count("event=slot_enqueued")


def test_skewed_workers_fire_each_slot_once_and_never_early(
    db_url: str, client: App, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    fleet = Fleet(db_url, tmp_path, ChaosLog(), lease=2.0)
    db = Db(db_url)
    try:
        ahead = fleet.start(offset=30.0)
        fleet.wait_started(ahead)
        _run_until_slots_after(db, PHASE_SECONDS)
        fleet.stop_all()
        behind = fleet.start(offset=-30.0)
        fleet.wait_started(behind)
        _run_until_slots_after(db, PHASE_SECONDS)
        together = [fleet.start(offset=offset) for offset in (-30.0, -9.0, 13.0, 30.0)]
        for proc in together:
            fleet.wait_started(proc)
        end = _run_until_slots_after(db, 2 * PHASE_SECONDS)
        fleet.stop_all()

        report = Report()
        ready = {int(pid): float(t) for pid, t in db.rows("SELECT pid, ready FROM torture_workers")}
        for key, spec in SCHEDULES.items():
            check_schedule(db, report, key, spec, end, alive=fleet.alive_spans(ready))
        per_worker = {f"{p.offset:+.0f}s pid {p.pid}": _slots_logged(p) for p in fleet.procs}
        record_result.update(
            backend=db_url.split(":", 1)[0],
            offsets=[p.offset for p in fleet.procs],
            slots_enqueued_per_worker=per_worker,
            **report.numbers,
        )
        report.assert_ok()
        logs = fleet.logs()
        assert "Traceback" not in logs
        assert "event=slots_missed" not in logs
        # Each lone phase was decided by its skewed worker alone.
        assert _slots_logged(ahead) >= 3, ahead.output()
        assert _slots_logged(behind) >= 3, behind.output()
        assert sum(per_worker.values()) == sum(
            report.numbers[key]["slots_enqueued"] for key in SCHEDULES
        ), "every slot enqueued was logged by exactly one worker"
    finally:
        fleet.close()
        db.close()
