"""Lifecycle: first sight, timing changes, definition changes, removal, re-adding, deploys, and
validation of every declaration at once. Several apps on one database are several deploys."""

from __future__ import annotations

from datetime import timedelta

import pytest

from onthedot import App, ScheduleError
from onthedot.observability.events import SchedulerFenced
from onthedot.storage.interface import WorkerInfo
from onthedot.testing import scheduler_for, tick
from tests.scheduler.helpers import MakeApp, history, job_slots, row, utc

T0 = utc(2030, 1, 1)


def s(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)


def deploy(make_app: MakeApp, at: object, declare: object) -> App:
    """A new app (a new code version) on the same database, with its clock at `at`."""
    app = make_app(at)

    @app.job(name="work")
    def work(n: int = 0) -> int:
        return n

    declare(app)  # type: ignore[operator]
    return app


def test_first_sight_starts_at_now(make_app: MakeApp) -> None:
    app = deploy(make_app, T0 + s(5), lambda a: a.schedule("k", "every 10s", "work"))
    daily = "0 0 * * *"  # 00:00 today is before first sight: it never fires
    app.schedule("daily", daily, "work", catchup="all")
    assert tick(app) == []
    assert row(app, "k").cursor == T0 + s(5)
    assert row(app, "k").next_due_at == T0 + s(10)
    assert row(app, "k").repaired_reason == "first sight"
    fired = tick(app, T0 + s(31))
    assert [(f.key, f.slot) for f in fired] == [("k", T0 + s(30))]
    assert history(app, "daily") == []


def test_first_sight_with_catchup_all_fires_nothing_before_it(make_app: MakeApp) -> None:
    app = deploy(make_app, T0 + s(5), lambda a: a.schedule("k", "every 10s", "work", catchup="all"))
    tick(app)
    assert [f.slot for f in tick(app, T0 + s(31))] == [T0 + s(10), T0 + s(20), T0 + s(30)]


def test_timing_change_restarts_at_the_change_without_a_phantom_run(make_app: MakeApp) -> None:
    old = deploy(make_app, T0, lambda a: a.schedule("k", "every 10s", "work", catchup="all"))
    tick(old)
    assert len(tick(old, T0 + s(30))) == 3
    # The new code changes the timing at T0+100: slots of either timing up to then (40..100 of
    # the old one, 40..100 of the new one) never fire, not even the slot at the change itself.
    new = deploy(make_app, T0, lambda a: a.schedule("k", "every 20s", "work", catchup="all"))
    assert tick(new, T0 + s(100)) == []
    ledger = row(new, "k")
    assert (ledger.cursor, ledger.spec, ledger.repaired_reason) == (
        T0 + s(100),
        "every 20s",
        "timing changed",
    )
    assert [f.slot for f in tick(new, T0 + s(125))] == [T0 + s(120)]
    assert job_slots(new, "k") == [T0 + s(10), T0 + s(20), T0 + s(30), T0 + s(120)]


def test_time_zone_change_is_a_timing_change(make_app: MakeApp) -> None:
    old = deploy(make_app, T0, lambda a: a.schedule("k", "0 * * * *", "work"))
    tick(old)
    new = deploy(
        make_app, T0, lambda a: a.schedule("k", "0 * * * *", "work", timezone="Asia/Kolkata")
    )
    assert tick(new, T0 + s(10)) == []
    assert row(new, "k").cursor == T0 + s(10)
    assert row(new, "k").timezone == "Asia/Kolkata"
    assert [f.slot for f in tick(new, T0 + s(3600))] == [T0 + s(1800)]  # India is UTC+05:30


def test_definition_change_is_not_a_timing_change(make_app: MakeApp) -> None:
    old = deploy(make_app, T0, lambda a: a.schedule("k", "every 10s", "work", args=[1]))
    tick(old)
    first = tick(old, T0 + s(10))
    new = deploy(
        make_app,
        T0,
        lambda a: a.schedule("k", "every 10s", "work", args=[2], queue="other", priority=5),
    )
    assert tick(new, T0 + s(15)) == []  # the sync keeps the cursor: nothing restarts
    assert row(new, "k").cursor == T0 + s(10)
    assert row(new, "k").repaired_reason == "first sight"
    second = tick(new, T0 + s(20))
    assert [f.slot for f in second] == [T0 + s(20)]
    job1, job2 = old.get_job(first[0].job_id or 0), new.get_job(second[0].job_id or 0)
    assert job1 is not None and job2 is not None
    assert (job1.args, job1.queue, job1.priority) == ([1], "default", 0)
    assert (job2.args, job2.queue, job2.priority) == ([2], "other", 5)


def test_removed_from_code_stops_and_is_marked_removed(make_app: MakeApp) -> None:
    old = deploy(make_app, T0, lambda a: a.schedule("k", "every 10s", "work"))
    tick(old)
    tick(old, T0 + s(10))
    new = deploy(make_app, T0, lambda a: a.schedule("other", "every 10s", "work"))
    tick(new, T0 + s(15))
    ledger = row(new, "k")
    assert ledger.removed_at == T0 + s(15)
    assert ledger.next_due_at is None
    assert ledger.repaired_reason == "no longer declared in code"
    view = next(v for v in new.schedules.views() if v["key"] == "k")
    assert view["status"] == "removed"
    fired = tick(new, T0 + s(3600))
    assert {f.key for f in fired} == {"other"}
    assert history(new, "k") == [(T0 + s(10), "enqueued")]


def test_readding_within_retention_resumes_from_the_old_cursor(make_app: MakeApp) -> None:
    def declare(a: App) -> None:
        a.schedule("k", "every 10s", "work", catchup_window="1m")

    first = deploy(make_app, T0, declare)
    tick(first)
    tick(first, T0 + s(30))
    removed = deploy(make_app, T0, lambda a: None)
    tick(removed, T0 + s(35))
    assert row(removed, "k").removed_at is not None
    again = deploy(make_app, T0, declare)
    assert [f.slot for f in tick(again, T0 + s(300))] == [T0 + s(300)]  # sync, then tick
    ledger = row(again, "k")
    assert ledger.removed_at is None
    assert ledger.repaired_reason == "declared again"
    # Resumed from cursor 30 under the 1 minute window: 40..230 missed, 240..290 coalesced
    # (after 10 and 20, coalesced into 30 before the removal).
    assert (ledger.missed_total, ledger.coalesced_total) == (20, 2 + 6)
    assert ledger.last_slot == T0 + s(300)
    assert job_slots(again, "k") == [T0 + s(30), T0 + s(300)]


def test_readding_with_another_timing_restarts_at_now(make_app: MakeApp) -> None:
    first = deploy(make_app, T0, lambda a: a.schedule("k", "every 10s", "work", catchup="all"))
    tick(first)
    removed = deploy(make_app, T0, lambda a: None)
    tick(removed, T0 + s(35))
    again = deploy(make_app, T0, lambda a: a.schedule("k", "every 20s", "work", catchup="all"))
    assert tick(again, T0 + s(100)) == []
    assert row(again, "k").cursor == T0 + s(100)


def test_older_code_is_fenced_while_newer_code_is_alive(make_app: MakeApp) -> None:
    old = deploy(make_app, T0, lambda a: a.schedule("k", "every 10s", "work"))
    tick(old)
    new = deploy(make_app, T0, lambda a: a.schedule("k", "every 7s", "work"))
    newer = new.scheduler(worker_id="new-worker")
    generation = newer.prepare()
    info = WorkerInfo("new-worker", "host", 1, ("default",), 1, True, generation)
    new.storage.at(T0 + s(50)).register_worker(info)
    newer.sync(now=T0 + s(50))
    # The old code neither fires nor rewrites the timing the new code wrote.
    assert tick(old, T0 + s(51)) == []
    assert row(old, "k").spec == "every 7s"
    assert row(old, "k").cursor == T0 + s(50)
    # The new worker's heartbeat expires (lease 2 s): the old code decides again.
    tick(old, T0 + s(60))
    assert row(old, "k").spec == "every 10s"
    assert row(old, "k").cursor == T0 + s(60)


def test_check_reports_every_problem_at_once(make_app: MakeApp) -> None:
    app = deploy(make_app, T0, lambda a: None)
    app.schedule("dup", "every 10s", "work")
    app.schedule("dup", "every 20s", "work")
    app.schedule("bad-spec", "61 * * * *", "work")
    app.schedule("bad-zone", "0 9 * * *", "work", timezone="Mars/Olympus_Mons")
    app.schedule("unknown-job", "0 9 * * *", "nope")
    app.schedule("bad-args", "0 9 * * *", "work", args=[1, 2, 3])
    app.schedule("not-json", "0 9 * * *", "work", args=[{1, 2}])
    app.schedule("jitter", "every 10s", "work", jitter="10s")
    app.schedule("never", "0 0 30 2 *", "work")
    report = app.schedules.check()
    errors = {p.key for p in report.errors}
    assert errors == {
        "dup",
        "bad-spec",
        "bad-zone",
        "unknown-job",
        "bad-args",
        "not-json",
        "jitter",
    }
    assert [p.key for p in report.warnings] == ["never"]
    assert not report.ok
    rendered = report.render()
    for key in errors | {"never"}:
        assert f"schedule {key!r}" in rendered
    assert "7 error(s), 1 warning(s)" in rendered
    with pytest.raises(ScheduleError) as raised:
        tick(app)
    assert str(raised.value) == rendered


def test_a_never_firing_spec_is_only_a_warning(make_app: MakeApp) -> None:
    app = deploy(make_app, T0, lambda a: a.schedule("never", "0 0 30 2 *", "work"))
    report = app.schedules.check()
    assert report.ok and [p.level for p in report.problems] == ["warning"]
    assert tick(app, T0 + timedelta(days=800)) == []
    assert row(app, "never").next_due_at is None


def test_a_fenced_scheduler_stays_fenced_while_idle(make_app: MakeApp) -> None:
    """Idle ticks of fenced older code report it fenced once, and never flip back and forth."""
    old = deploy(make_app, T0, lambda a: a.schedule("k", "0 0 1 1 *", "work"))
    events: list[bool] = []
    old.events.subscribe(lambda e: events.append(e.fenced), SchedulerFenced)
    tick(old)
    new = deploy(make_app, T0, lambda a: a.schedule("k", "0 0 1 6 *", "work"))
    newer = new.scheduler(worker_id="new-worker")
    info = WorkerInfo("new-worker", "host", 1, ("default",), 1, True, newer.prepare())
    new.storage.at(T0 + s(10)).register_worker(info)
    newer.sync(now=T0 + s(10))
    for second in (11, 11.5, 11.9):  # nothing is due: each tick is idle
        assert tick(old, T0 + s(second)) == []
    assert events == [True]
    assert scheduler_for(old).fenced
