"""Expectations on declared and runtime schedules: stored with a runtime schedule, overridden
by an operator at run time (Python and CLI), cleared by `reset`, audited; bad values refused
with one line and nothing stored. On both backends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from onthedot import App, ManualClock, ScheduleError
from onthedot.cli.main import cli
from onthedot.domain.expectations import Deadline
from onthedot.testing import tick
from tests.controls.cliapp import make_app

T0 = datetime(2030, 1, 1, tzinfo=UTC)
APP = "tests.controls.cliapp:make_app"


@pytest.fixture
def ops(db_url: str) -> Iterator[App]:
    app = App(db_url, clock=ManualClock(T0), log_events=False)

    @app.job(name="work", runtime=True)
    def work() -> None: ...

    app.schedule(
        "nightly-report",
        "0 2 * * *",
        work,
        timezone="Europe/Paris",
        grace="10m",
        max_runtime="30m",
        deadline="06:00",
        ping="https://hc-ping.com/<uuid>",
    )
    app.migrate()
    tick(app)
    yield app
    app.close()


def test_a_declared_schedule_keeps_its_expectations(ops: App) -> None:
    found = ops.schedules.expectations("nightly-report")
    assert found.grace == timedelta(minutes=10) and found.max_runtime == timedelta(minutes=30)
    assert found.deadline is not None and found.deadline.text() == "06:00"
    assert found.ping == "https://hc-ping.com/<uuid>"


def test_an_operator_overrides_then_clears_them(ops: App) -> None:
    now = ops.schedules.expect(
        "nightly-report", max_runtime="auto", deadline=None, note="slow week", actor="alice"
    )
    assert now.max_runtime == "auto" and now.deadline is None
    assert now.grace == timedelta(minutes=10)  # not given: the code's
    (state,) = ops.storage.health_states(["nightly-report"])
    assert state.overrides == {"max_runtime": "auto", "deadline": None}
    assert (state.overrides_by, state.overrides_note) == ("alice", "slow week")
    assert ops.schedules.expect("nightly-report", grace="1m").max_runtime == "auto"  # kept
    entry = ops.schedules.audit("nightly-report")[0]
    assert entry.action == "expected" and entry.details is not None
    assert entry.details["overrides"] == {"max_runtime": "auto", "deadline": None, "grace": "1m"}
    # reset: back to the code's.
    ops.schedules.reset("nightly-report", actor="bob")
    assert ops.schedules.expectations("nightly-report").max_runtime == timedelta(minutes=30)
    assert ops.storage.health_states(["nightly-report"])[0].overrides is None
    reset = ops.schedules.audit("nightly-report")[0]
    assert reset.action == "reset" and reset.details and reset.details["expectations"] is True
    ops.schedules.expect("nightly-report", grace="2m")
    cleared = ops.schedules.expect("nightly-report", clear=True)
    assert cleared.grace == timedelta(minutes=10)


def test_bad_overrides_are_refused_and_nothing_is_stored(ops: App) -> None:
    with pytest.raises(ScheduleError) as err:
        ops.schedules.expect("nightly-report", grace="soon", deadline="24:00")
    assert str(err.value).startswith("schedule 'nightly-report': invalid grace 'soon'")
    assert "invalid deadline '24:00'" in str(err.value) and "\n" not in str(err.value)
    assert ops.storage.health_states(["nightly-report"])[0].overrides is None
    with pytest.raises(ScheduleError, match="no schedule with key 'nope'"):
        ops.schedules.expect("nope", grace="1m")


def test_runtime_schedules_store_and_update_their_expectations(ops: App) -> None:
    ops.schedules.create("r", "*/5 * * * *", "work", max_runtime="auto", deadline="4h")
    found = ops.schedules.expectations("r")
    assert found.grace is None and found.max_runtime == "auto"
    assert found.deadline == Deadline(after=timedelta(hours=4))
    ops.schedules.update("r", grace="90s", deadline=None)
    found = ops.schedules.expectations("r")
    assert found.grace == timedelta(seconds=90) and found.deadline is None
    assert found.max_runtime == "auto"
    with pytest.raises(ScheduleError, match="ping URL 'ftp://h/…' must be an http"):
        ops.schedules.update("r", ping="ftp://h/secret")
    with pytest.raises(ScheduleError, match="invalid max_runtime"):
        ops.schedules.create("r2", "*/5 * * * *", "work", max_runtime="forever")
    assert [v["key"] for v in ops.schedules.list()] == ["nightly-report", "r"]


def test_catchup_none_keeps_its_60s_cutoff_without_a_grace(ops: App) -> None:
    ops.schedules.create("n", "every 1h", "work", catchup="none")
    sched = ops.schedules.get_definition("n")
    assert sched.grace is None and sched.enqueue_grace == timedelta(seconds=60)


def run(db_url: str, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["--app", APP, "--database", db_url, *args])
    return r.exit_code, r.output


def test_the_cli_expect_and_create_options(db_url: str) -> None:
    app = make_app()
    app.use_database(db_url)
    app.migrate()
    tick(app)
    app.close()
    code, out = run(
        db_url, "schedules", "expect", "declared", "--grace", "2m", "--max-runtime", "auto"
    )
    assert code == 0, out
    assert out.strip() == "declared: grace=2m max_runtime=auto"
    code, out = run(db_url, "schedules", "expect", "declared", "--grace", "off", "--ping", "x")
    assert code == 1 and "ping URL 'x' must be an http:// or https:// URL" in out
    code, out = run(db_url, "schedules", "expect", "declared", "--clear")
    assert code == 0 and out.strip() == "declared: grace=default"
    code, out = run(
        db_url,
        "schedules",
        "create",
        "r",
        "*/10 * * * *",
        "work",
        "--max-runtime",
        "5m",
        "--ping",
        "https://hc-ping.com/abc",
    )
    assert code == 0, out
    code, out = run(db_url, "schedules", "update", "r", "--max-runtime", "off")
    assert code == 0, out
    code, out = run(db_url, "schedules", "expect", "r")
    assert code == 0 and out.strip() == "r: grace=default ping=https://hc-ping.com/…"
    code, out = run(db_url, "schedules", "audit", "declared", "--json")
    assert [a["action"] for a in json.loads(out)] == ["expected", "expected"]
