"""`onthedot.testing`, the helpers users test their own schedules with."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

import onthedot.testing as testing
from onthedot import App, JobState, ManualClock, ScheduleError, SystemClock
from onthedot.testing import FiredSlot, drain, scheduler_for, slots_between, tick
from tests.scheduler.helpers import MakeApp, clock_of, row, utc

T0 = utc(2030, 1, 1, 8)


def test_the_module_docstring_example(db_url: str) -> None:
    clock = ManualClock(T0)
    app = App(db_url, clock=clock, log_events=False)
    ran: list[str] = []

    @app.job(name="report", schedule="0 9 * * *")
    def report() -> None:
        ran.append("report")

    app.migrate()
    try:
        assert tick(app) == []
        fired = tick(app, utc(2030, 1, 1, 9))
        assert [(k, s) for k, s, _ in fired] == [("report", utc(2030, 1, 1, 9))]
        assert drain(app) == 1
        assert ran == ["report"]
    finally:
        app.close()


def test_public_names() -> None:
    assert testing.ManualClock is ManualClock
    for name in ("tick", "drain", "slots_between", "scheduler_for", "FiredSlot", "ManualClock"):
        assert name in testing.__all__


def test_tick_sets_a_manual_clock_and_returns_fired_slots_oldest_first(
    make_app: MakeApp,
) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("b", "every 10s", "work", catchup="all")
    app.schedule("a", "every 15s", "work", catchup="all")
    assert tick(app) == []
    fired = tick(app, T0 + timedelta(seconds=30))
    assert clock_of(app).now() == T0 + timedelta(seconds=30)
    assert [(f.key, (f.slot - T0).seconds) for f in fired] == [
        ("b", 10),
        ("a", 15),
        ("b", 20),
        ("a", 30),
        ("b", 30),
    ]
    assert all(isinstance(f, FiredSlot) and f.job_id for f in fired)
    job = app.get_job(fired[0].job_id or 0)
    assert job is not None and (job.schedule_key, job.slot) == ("b", T0 + timedelta(seconds=10))


def test_tick_without_now_uses_the_manual_clock(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("k", "every 10s", "work")
    tick(app)
    clock_of(app).advance(25)
    assert [f.slot for f in tick(app)] == [T0 + timedelta(seconds=20)]


def test_tick_passes_now_to_an_app_without_a_manual_clock(db_url: str) -> None:
    app = App(db_url, log_events=False)
    app.migrate()
    try:
        app.job(name="work")(lambda: None)
        app.schedule("k", "every 10s", "work")
        assert isinstance(app.clock, SystemClock)
        assert tick(app, T0) == []  # first sight at T0, not at the real time
        assert row(app, "k").cursor == T0
        fired = tick(app, T0 + timedelta(seconds=10))
        assert [f.slot for f in fired] == [T0 + timedelta(seconds=10)]
        job = app.get_job(fired[0].job_id or 0)
        assert job is not None and job.run_at == T0 + timedelta(seconds=10)
    finally:
        app.close()


def test_tick_syncs_again_when_declarations_change(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("first", "every 10s", "work")
    tick(app)
    before = scheduler_for(app)
    assert scheduler_for(app) is before
    app.schedule("second", "every 10s", "work", catchup="all")
    fired = tick(app, T0 + timedelta(seconds=35))  # first sight of "second" is now
    assert [(f.key, f.slot) for f in fired] == [("first", T0 + timedelta(seconds=30))]
    assert scheduler_for(app) is not before
    assert row(app, "second").cursor == T0 + timedelta(seconds=35)


def test_tick_refuses_invalid_declarations(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.schedule("a", "every 10s", "missing-job")
    app.schedule("b", "not a spec", command=["true"])
    with pytest.raises(ScheduleError) as raised:
        tick(app)
    assert "schedule 'a'" in str(raised.value) and "schedule 'b'" in str(raised.value)


def test_tick_refuses_naive_datetimes(make_app: MakeApp) -> None:
    app = make_app(T0)
    with pytest.raises(ValueError, match="naive"):
        tick(app, datetime(2030, 1, 1))


def test_slots_between(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("ny", "30 2 * * *", "work", timezone="America/New_York")
    start, end = utc(2024, 3, 9), utc(2024, 3, 12)
    expected = [utc(2024, 3, 9, 7, 30), utc(2024, 3, 10, 7), utc(2024, 3, 11, 6, 30)]
    assert slots_between(app, "ny", start, end) == expected
    assert slots_between(app.schedules, "ny", start, end) == expected
    assert slots_between(app, "ny", start, end, limit=2) == expected[:2]
    assert slots_between(app, "ny", expected[0], expected[1]) == expected[1:2]  # (start, end]
    with pytest.raises(ScheduleError, match="no schedule with key 'nope'"):
        slots_between(app, "nope", start, end)


def test_slots_between_finds_runtime_schedules(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work", runtime=True)(lambda: None)
    app.schedules.create("dyn", "every 1h", "work")
    assert slots_between(app, "dyn", T0, T0 + timedelta(hours=2)) == [
        T0 + timedelta(hours=1),
        T0 + timedelta(hours=2),
    ]


def test_drain_runs_every_queue_holding_jobs_by_default(make_app: MakeApp) -> None:
    app = make_app(T0)
    ran: list[str] = []
    app.job(name="mail", queue="mail")(lambda: ran.append("mail"))
    app.job(name="plain")(lambda: ran.append("plain"))
    app.enqueue("mail")
    app.enqueue("plain")
    assert drain(app, queues=["mail"]) == 1
    assert ran == ["mail"]
    app.enqueue("mail")
    assert drain(app, concurrency=2) == 2
    assert sorted(ran) == ["mail", "mail", "plain"]
    assert drain(app) == 0


def test_drain_follows_the_manual_clock(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="later")(lambda: None)
    job_id = app.enqueue("later", delay="1h")
    assert drain(app) == 0
    clock_of(app).advance(timedelta(hours=1))
    assert drain(app) == 1
    job = app.get_job(job_id)
    assert job is not None and job.state is JobState.SUCCEEDED


def test_tick_after_closing_the_app_uses_the_new_storage(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("k", "every 10s", "work")
    tick(app)
    app.close()
    assert [f.slot for f in tick(app, T0 + timedelta(seconds=10))] == [T0 + timedelta(seconds=10)]
