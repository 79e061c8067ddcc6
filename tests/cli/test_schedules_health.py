"""`onthedot schedules health`: one line per problem and exit 1, or exit 0 when healthy; from
the database alone, with or without --app, saying "no live worker" when none is; `--json`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner

from onthedot.cli.main import cli
from onthedot.storage.interface import WorkerInfo
from onthedot.testing import ManualClock, tick
from tests.controls.cliapp import make_app

APP = "tests.controls.cliapp:make_app"


def run(db_url: str, *args: str, app: bool = True) -> tuple[int, str]:
    prefix = ["--app", APP] if app else []
    r = CliRunner().invoke(cli, [*prefix, "--database", db_url, "schedules", "health", *args])
    return r.exit_code, r.output


def first_seen(db_url: str, when: datetime) -> None:
    """The declared schedule (every minute) as a worker's first tick at `when` left it."""
    app = make_app()
    app.use_database(db_url)
    app.migrate()
    app.clock = ManualClock(when)
    tick(app)
    app.close()


def test_every_worker_down_reports_the_late_schedule_and_no_live_worker(db_url: str) -> None:
    first_seen(db_url, datetime(2025, 1, 1, tzinfo=UTC))
    code, out = run(db_url)
    assert code == 1
    assert out.splitlines() == [
        "no live worker: no worker is registered",
        "declared  2025-01-01T00:01:00Z  late  no_live_worker: no live worker: no worker is "
        "registered",
    ]
    code, bare = run(db_url, app=False)  # no app: the expectations applied are read
    assert code == 1 and bare == out


def test_healthy_is_exit_zero(db_url: str) -> None:
    first_seen(db_url, datetime.now(UTC).replace(microsecond=0))
    app = make_app()
    app.use_database(db_url)
    app.storage.register_worker(WorkerInfo("w1", "h", 1, ("default",), 1, jobs=("work",)))
    app.close()
    code, out = run(db_url)
    assert code == 0, out
    assert out.splitlines() == ["ok: 1 schedule(s) healthy"]


def test_json_holds_the_whole_report(db_url: str) -> None:
    first_seen(db_url, datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5))
    code, out = run(db_url, "--json")
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False and report["no_live_worker"].startswith("no live worker")
    (problem,) = report["problems"]
    assert problem["schedule"] == "declared" and problem["kind"] == "late"
    assert problem["recorded"] is False  # nobody could record it: every worker is down
    (schedule,) = report["schedules"]
    assert schedule["key"] == "declared" and schedule["lateness"] > 200
    assert schedule["expectations"] == {"grace": "1m"}


def test_a_database_that_cannot_be_read_is_exit_one(tmp_path: object) -> None:
    code, out = run(f"sqlite:///{tmp_path}/missing/none.db", app=False)
    assert code == 1 and "does not exist" in out


def test_explain_ends_with_the_schedules_health(db_url: str) -> None:
    first_seen(db_url, datetime(2025, 1, 1, tzinfo=UTC))
    r = CliRunner().invoke(
        cli, ["--app", APP, "--database", db_url, "schedules", "explain", "declared"]
    )
    assert r.exit_code == 0, r.output
    tail = r.output.splitlines()[-4:]
    assert tail == [
        "health:",
        "  expectations: grace=default",
        "  problem:      late at slot 2025-01-01T00:01:00Z (found now: not recorded): "
        "no_live_worker: no live worker: no worker is registered",
        "  fleet:        no live worker: no worker is registered",
    ]
