"""A scheduler frozen in the middle of a tick (issue 24 item 13), PostgreSQL (private cluster).

Two real `onthedot worker` processes tick the same 100 declared `every 1s` schedules (catch-up
"all"). Process A stops itself (SIGSTOP, through `hostile_app`'s test hook) inside a tick's
transaction, after locking its batch of due ledger rows and before deciding: as a paused VM,
a long GC pause or a swap storm would leave it, `idle in transaction` with the rows locked.

Checked: PostgreSQL ends A's transaction after onthedot's idle limit (`IDLE_LIMIT`, 5 s), and
process B fires the slots A had locked within that limit and a few seconds; after SIGCONT, A
finds its connection gone, says so in one `database_error` line, ticks again, and exits 0 on
SIGTERM with no traceback; every slot of every schedule, from its first sight to the end,
was enqueued exactly once.

Before: A's transaction held its rows for as long as A was stopped, and those slots waited for
it (the tester saw 1,000 of 5,000 schedules stalled).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

from onthedot.storage.sql.dialect import IDLE_LIMIT
from tests.torture.checker import Db
from tests.torture.harness import ChaosLog, Fleet, wait_for
from tests.torture.hostile_app import make_app

APP = "tests.torture.hostile_app:app"
SCHEDULES = 100


def stopped(pid: int) -> bool:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0] == "T"


def test_a_frozen_scheduler_holds_no_schedule_past_the_idle_limit(
    private_pg_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    url = private_pg_url
    env = {"ONTHEDOT_TEST_SCHEDULES": str(SCHEDULES)}
    client = make_app(url)
    client.migrate()
    client.close()
    trigger = tmp_path / "freeze"
    fleet = Fleet(url, tmp_path, ChaosLog(), app=APP)
    db = Db(url)
    try:
        frozen = fleet.start(env={**env, "ONTHEDOT_TEST_FREEZE_TICK": str(trigger)})
        other = fleet.start(env=env)
        for proc in (frozen, other):
            fleet.wait_started(proc)
        wait_for(lambda: _slots(db) >= 3 * SCHEDULES, "both schedulers to fire slots")

        trigger.touch()
        wait_for(lambda: stopped(frozen.pid), "process A to stop itself inside a tick")
        frozen_at = time.time()
        sessions = db.rows(
            "SELECT state, left(query, 40) FROM pg_stat_activity WHERE datname = current_database()"
        )
        idle = [s for s in sessions if s[0] == "idle in transaction"]
        assert idle, f"process A stopped outside a transaction: {sessions}"

        # Every slot due while A was stopped is fired, by B, within the idle limit and a tick.
        wait_for(
            lambda: _oldest_cursor(db) > frozen_at + 1,
            "the slots A locked to be fired by B",
            IDLE_LIMIT + 15,
        )
        fired_after = _oldest_cursor(db) - frozen_at
        lag = db.rows(
            "SELECT max(extract(epoch from created_at - slot)) FROM onthedot_jobs"
            " WHERE slot > to_timestamp(%s) - interval '2 seconds'",
            frozen_at,
        )[0][0]

        frozen.popen.send_signal(signal.SIGCONT)
        wait_for(
            lambda: "event=database_error where=scheduler" in frozen.output(),
            "A to find its transaction ended",
        )
        resumed = frozen.output().count("event=slot_enqueued")
        wait_for(
            lambda: frozen.output().count("event=slot_enqueued") > resumed,
            "A to fire slots again after it resumed",
        )
        fleet.stop_all()
        end = time.time() - 2  # a slot due this late may have been left to the next tick
        report = _check_slots(db, end)
        record_result.update(
            schedules=SCHEDULES,
            fired_after_freeze_s=round(fired_after, 2),
            max_lag_near_freeze_s=round(float(lag), 2),
            idle_limit_s=IDLE_LIMIT,
            **report,
        )
        assert float(lag) < IDLE_LIMIT + 4, f"slots fired {lag:.1f}s late"
        assert not report["slots_twice"] and not report["slots_missing"], report
        for proc in (frozen, other):
            assert "Traceback" not in proc.output(), proc.output()[-3000:]
    finally:
        fleet.close()
        db.close()


def _slots(db: Db) -> int:
    return int(db.rows("SELECT count(*) FROM onthedot_jobs WHERE schedule_key IS NOT NULL")[0][0])


def _oldest_cursor(db: Db) -> float:
    return float(db.rows('SELECT min(extract(epoch from "cursor")) FROM onthedot_schedules')[0][0])


def _check_slots(db: Db, end: float) -> dict[str, int]:
    """Every slot of every schedule once: none twice, and from each schedule's first slot to
    `end` none missing (`every 1s`: one a second)."""
    twice = db.rows(
        "SELECT count(*) FROM (SELECT schedule_key, slot FROM onthedot_jobs"
        " WHERE schedule_key IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1) d"
    )[0][0]
    per_key = db.rows(
        "SELECT schedule_key, extract(epoch from min(slot)), count(*) FROM onthedot_jobs"
        " WHERE schedule_key IS NOT NULL AND slot <= to_timestamp(%s) GROUP BY 1",
        end,
    )
    missing = sum(int(end - float(first)) + 1 - int(n) for _, first, n in per_key)
    return {
        "slots": sum(int(n) for _, _, n in per_key),
        "slots_twice": int(twice),
        "slots_missing": missing,
        "schedules_checked": len(per_key),
    }
