"""Schedule health through the scheduler's own path (tick, then the health check), on both
backends with a manual clock: each kind of problem with each cause the database can tell,
raised once and resolved once; slots that ran on time raise nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from onthedot import App, ManualClock
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.domain.watch import ProblemKind, ProblemRecord
from onthedot.observability.events import (
    Event,
    ScheduleDeadlineMissed,
    ScheduleFailed,
    ScheduleLate,
    ScheduleOverran,
    ScheduleRecovered,
)
from onthedot.storage.interface import WorkerInfo
from onthedot.testing import check_health, drain, tick
from tests.scheduler.helpers import MakeApp, utc

T0 = utc(2030, 1, 1)
S = timedelta(seconds=1)
EVENTS = (ScheduleLate, ScheduleOverran, ScheduleDeadlineMissed, ScheduleFailed, ScheduleRecovered)


def build(make_app: MakeApp, start: datetime = T0, **schedule: object) -> tuple[App, list[Event]]:
    """An app with a job `work` and (unless told) a schedule `k` every minute, grace 10 s."""
    app = make_app(start, lease=30.0)
    seen: list[Event] = []
    app.events.subscribe(seen.append, *EVENTS)

    @app.job(name="work", runtime=True)
    def work() -> None: ...

    @app.job(name="boom", max_attempts=1)
    def boom() -> None:
        raise ValueError("the report server said no")

    if schedule.get("spec") != "none":
        schedule.setdefault("spec", "every 60s")
        schedule.setdefault("job", work)
        schedule.setdefault("grace", "10s")
        spec, job = schedule.pop("spec"), schedule.pop("job")
        app.schedule("k", spec, job, **schedule)
    tick(app)  # first sight at T0
    return app, seen


def live(app: App, worker_id: str = "w1", **info: object) -> None:
    """A live worker (heartbeat now, by the app's clock) serving `default`, knowing our jobs."""
    info.setdefault("queues", ("default",))
    info.setdefault("jobs", ("work", "boom"))
    app.storage.register_worker(
        WorkerInfo(worker_id, "host", 1, info.pop("queues"), 1, **info)  # type: ignore[arg-type]
    )


def clock(app: App) -> ManualClock:
    c = app.clock
    assert isinstance(c, ManualClock)
    return c


def at(app: App, seconds: float) -> datetime:
    when = T0 + timedelta(seconds=seconds)
    clock(app).set(when)
    return when


def problems(app: App, key: str = "k") -> list[tuple[datetime, str, str]]:
    return [(p.slot, str(p.kind), p.cause) for p in app.storage.list_problems(key=key)]


def opened(found: list[ProblemRecord]) -> list[tuple[str, str]]:
    return [(str(p.kind), p.cause) for p in found if p.open]


def run_for(app: App, start: float, seconds: float) -> int:
    """A live worker claims the ready job at T0 + `start` and succeeds `seconds` later."""
    live(app)
    at(app, start)
    (job,) = app.storage.claim_jobs("w1", "default", 1, 300)
    at(app, start + seconds)
    app.storage.finish_jobs("w1", [Outcome(job.id, OutcomeKind.SUCCEEDED)])
    return job.id


def test_slots_that_ran_on_time_raise_nothing_and_teach_durations(make_app: MakeApp) -> None:
    app, seen = build(make_app)
    for minute in range(1, 4):
        live(app)
        tick(app, T0 + minute * 60 * S)
        run_for(app, minute * 60 + 2, 3)
        assert check_health(app, T0 + (minute * 60 + 20) * S) == []
    assert seen == [] and problems(app) == []
    (state,) = app.storage.health_states(["k"])
    assert state.last_success_slot == T0 + 180 * S
    assert state.last_success_at == T0 + 185 * S
    assert state.durations == (3.0, 3.0, 3.0)
    report = app.health.report()
    assert report.ok and report.schedules[0].status == "ok"
    assert report.schedules[0].last_success_at == T0 + 185 * S
    assert (report.schedules[0].p50, report.schedules[0].last) == (3.0, 3.0)


def test_late_when_no_worker_is_alive_then_recovered(make_app: MakeApp) -> None:
    app, seen = build(make_app)
    tick(app, T0 + 60 * S)  # enqueued, but no worker
    assert check_health(app, T0 + 65 * S) == []  # within grace
    found = check_health(app, T0 + 71 * S)
    assert opened(found) == [("late", "no_live_worker")]
    assert "no live worker: no worker is registered" in found[0].detail
    assert check_health(app, T0 + 90 * S) == []  # raised once
    assert [type(e).__name__ for e in seen] == ["ScheduleLate"]
    live(app)
    at(app, 100)
    drain(app)
    done = check_health(app, T0 + 110 * S)
    assert [(p.kind, p.resolution is not None) for p in done] == [(ProblemKind.LATE, True)]
    assert (
        done[0].resolution == "job 1 of slot 2030-01-01T00:01:00Z started at 2030-01-01T00:01:40Z"
    )
    assert [type(e).__name__ for e in seen] == ["ScheduleLate", "ScheduleRecovered"]
    assert problems(app) == []


@pytest.mark.parametrize(
    ("setup", "cause", "words"),
    [
        (lambda app: app.storage.set_queue_paused("default", True, "ops"), "queue_paused",
         "queue 'default' is paused"),
        (lambda app: live(app, queues=("other",)), "queue_unserved",
         "no live worker serves queue 'default'"),
        (lambda app: live(app, jobs=("something.else",)), "job_unknown",
         "knows job 'work'"),
    ],
)  # fmt: skip
def test_late_names_what_holds_the_queued_job(
    make_app: MakeApp, setup: Callable[[App], None], cause: str, words: str
) -> None:
    app, _ = build(make_app)
    tick(app, T0 + 60 * S)
    at(app, 70)
    setup(app)
    (problem,) = check_health(app, T0 + 71 * S)
    assert (problem.kind, problem.cause) == (ProblemKind.LATE, cause)
    assert words in problem.detail


def test_late_behind_a_backlog_gives_the_oldest_ready_age(make_app: MakeApp) -> None:
    app, _ = build(make_app)
    app.jobs["work"].enqueue()  # an older job ahead in the queue
    at(app, 30)
    for _ in range(3):
        app.jobs["work"].enqueue()
    live(app)  # alive, with one job running: busy
    app.storage.claim_jobs("w1", "default", 1, 300)
    tick(app, T0 + 60 * S)
    live(app)
    (problem,) = check_health(app, T0 + 71 * S)
    assert problem.cause == "backlog"
    assert "waiting behind a backlog: 4 ready job(s) in queue 'default'" in problem.detail
    assert "the oldest ready for 41s" in problem.detail


def test_late_held_by_a_saturated_limit_names_the_limit_and_its_key(make_app: MakeApp) -> None:
    app, seen = build(make_app, spec="none")
    app.limit("stripe", concurrency=2, key="customer_id")

    @app.job(name="charge", limits=["stripe"])
    def charge(customer_id: int, cents: int) -> None: ...

    app.schedule("k", "every 60s", charge, [42, 100], grace="10s")
    app.limits.sync()
    tick(app)
    live(app, jobs=("charge",))
    for _ in range(2):  # two charges of customer 42 running: its key is at 2/2
        charge.enqueue(42, 5)
    assert len(app.storage.claim_limited("w1", "default", 5, 300)) == 2
    tick(app, T0 + 60 * S)
    live(app, jobs=("charge",))
    (problem,) = check_health(app, T0 + 71 * S)
    assert (problem.kind, problem.cause) == (ProblemKind.LATE, "held_by_limit")
    assert problem.detail == (
        "held by a limit: limit stripe (customer_id=42) at 2/2 running; "
        "next start when one of them ends"
    )
    assert [type(e).__name__ for e in seen] == ["ScheduleLate"]


def test_late_while_paused_names_who_and_until_when(make_app: MakeApp) -> None:
    app, _ = build(make_app)
    live(app)
    app.schedules.pause("k", until=T0 + 3600 * S, note="db upgrade", actor="alice")
    tick(app, T0 + 60 * S)
    live(app)
    (problem,) = check_health(app, T0 + 71 * S)
    assert problem.cause == "paused"
    assert problem.detail == (
        "paused by alice since 2030-01-01T00:00:00Z until 2030-01-01T01:00:00Z: db upgrade"
    )
    assert check_health(app, T0 + 200 * S) == []  # one incident for every paused slot
    app.schedules.resume("k", actor="alice")
    tick(app, T0 + 240 * S)
    live(app)
    drain(app)
    (done,) = check_health(app, T0 + 251 * S)
    assert done.resolved_at is not None and problems(app) == []


def test_a_slot_skipped_by_an_operator(make_app: MakeApp) -> None:
    app, _ = build(make_app)
    live(app)
    app.schedules.skip("k", note="holiday", actor="bob")
    tick(app, T0 + 60 * S)
    live(app)
    (problem,) = check_health(app, T0 + 71 * S)
    assert (problem.slot, problem.cause) == (T0 + 60 * S, "skipped_by_operator")
    assert problem.detail == "skipped by bob: holiday"


def test_a_slot_skipped_by_the_overlap_policy(make_app: MakeApp) -> None:
    app, _ = build(make_app, overlap="skip")
    live(app)
    tick(app, T0 + 60 * S)
    at(app, 61)
    app.storage.claim_jobs("w1", "default", 1, 300)  # runs on, through the next slot
    tick(app, T0 + 120 * S)
    live(app)
    found = check_health(app, T0 + 131 * S)
    assert [(p.slot, p.cause) for p in found] == [(T0 + 120 * S, "overlap_skipped")]


def test_slots_coalesced_while_no_worker_ran_are_found_after_the_fact(make_app: MakeApp) -> None:
    app, seen = build(make_app)
    tick(app, T0 + 60 * S)
    live(app)
    at(app, 61)
    drain(app)
    check_health(app, T0 + 71 * S)
    # Every worker stops for five minutes: nobody ticks nor checks. Then one comes back.
    live(app)
    tick(app, T0 + 425 * S)  # catch-up "latest": 06:00 fires, 02:00 to 05:00 coalesced
    drain(app)
    found = check_health(app, T0 + 426 * S)
    assert [(p.slot, p.cause) for p in found] == [(T0 + 120 * S, "no_live_worker")]
    (problem,) = found
    assert problem.detail.startswith(
        "no live worker ran the scheduler from 2030-01-01T00:02:00Z until 2030-01-01T00:07:05Z"
    )
    assert "coalesced by catch-up 'latest' into the slot of 2030-01-01T00:07:00Z" in problem.detail
    assert problem.resolved_at is not None  # its later slot already ran: over, and said so
    assert [type(e).__name__ for e in seen] == ["ScheduleLate", "ScheduleRecovered"]
    assert check_health(app, T0 + 470 * S) == []  # never raised twice


def test_overran_then_recovered_when_the_run_ends(make_app: MakeApp) -> None:
    app, seen = build(make_app, max_runtime="45s")
    live(app)
    tick(app, T0 + 60 * S)
    at(app, 62)
    (claimed,) = app.storage.claim_jobs("w1", "default", 1, 300)
    assert check_health(app, T0 + 100 * S) == []
    live(app)
    (problem,) = check_health(app, T0 + 108 * S)
    assert (problem.kind, problem.cause) == (ProblemKind.OVERRAN, "running")
    assert problem.detail == f"its job {claimed.id} has been running for 46s, past max_runtime 45s"
    app.storage.finish_jobs("w1", [Outcome(claimed.id, OutcomeKind.SUCCEEDED)])
    (done,) = check_health(app, T0 + 125 * S)
    assert done.resolution == "its job is no longer running (succeeded)"
    assert [type(e).__name__ for e in seen] == ["ScheduleOverran", "ScheduleRecovered"]


def test_auto_max_runtime_learns_from_the_last_runs(make_app: MakeApp) -> None:
    app, _ = build(make_app, max_runtime="auto", grace="30s")
    for minute in range(1, 7):  # six runs of 4 s: p95 4 s, limit max(3 x 4, 10) = 12 s
        live(app)
        tick(app, T0 + minute * 60 * S)
        run_for(app, minute * 60 + 1, 4)
        assert check_health(app, T0 + (minute * 60 + 31) * S) == []
    assert app.storage.health_states(["k"])[0].durations == (4.0,) * 6
    live(app)
    tick(app, T0 + 420 * S)
    app.storage.claim_jobs("w1", "default", 1, 300)
    assert check_health(app, T0 + 431 * S) == []  # 11 s: under 12 s
    (problem,) = check_health(app, T0 + 433 * S)
    assert problem.kind == ProblemKind.OVERRAN and "past max_runtime 12s" in problem.detail


def test_failed_names_the_error_and_attempt_then_recovers(make_app: MakeApp) -> None:
    app, seen = build(make_app, spec="every 60s", job="boom")
    live(app)
    tick(app, T0 + 60 * S)
    drain(app)
    (problem,) = check_health(app, T0 + 71 * S)
    assert (problem.kind, problem.cause) == (ProblemKind.FAILED, "failed")
    assert problem.detail.endswith(
        "failed at attempt 1 of 1: ValueError: the report server said no"
    )
    tick(app, T0 + 120 * S)
    drain(app)
    assert check_health(app, T0 + 131 * S) == []  # the same incident
    assert len(app.storage.list_problems(open_only=False)) == 1
    assert [type(e).__name__ for e in seen] == ["ScheduleFailed"]


def test_deadline_missed_in_the_schedules_zone(make_app: MakeApp) -> None:
    app, seen = build(
        make_app, spec="0 2 * * *", timezone="Europe/Paris", deadline="06:00", grace="1h"
    )
    tick(app, utc(2030, 1, 1, 1))  # 02:00 in Paris
    live(app)
    at(app, 3600 + 60)
    app.storage.claim_jobs("w1", "default", 1, 36000)  # started at 02:01, runs and runs
    assert check_health(app, utc(2030, 1, 1, 4, 59)) == []
    live(app)
    (problem,) = check_health(app, utc(2030, 1, 1, 5, 0, 1))  # 06:00:01 in Paris
    assert problem.kind == ProblemKind.DEADLINE_MISSED and problem.cause == "running"
    assert problem.detail.startswith(
        "not succeeded by its deadline 2030-01-01T05:00:00Z: its job 1 is still running"
    )
    assert [type(e).__name__ for e in seen] == ["ScheduleDeadlineMissed"]


def test_a_deploy_that_cannot_run_a_runtime_schedule_fences_it(make_app: MakeApp) -> None:
    old, _ = build(make_app, spec="none")
    old.schedules.create("legacy", "every 60s", "work", grace="10s")
    tick(old)
    gen_old = old.scheduler().prepare()
    new = make_app(T0, lease=30.0)  # the next version: `work` is gone

    @new.job(name="other")
    def other() -> None: ...

    new.schedule("other", "every 1h", other)
    tick(new)
    gen_new = new.scheduler().prepare()
    assert gen_new > gen_old
    live(old, "old-1", generation=gen_old)
    live(new, "new-1", generation=gen_new, jobs=("other",))
    tick(new, T0 + 60 * S)  # the new code leaves "legacy" alone; the old is fenced
    at(old, 70)
    live(old, "old-1", generation=gen_old)
    live(new, "new-1", generation=gen_new, jobs=("other",))
    found = check_health(new, T0 + 71 * S)
    assert [(p.key, p.cause) for p in found] == [("legacy", "fenced")]
    assert found[0].detail.startswith(
        f"fenced by a deploy: the newest code (generation {gen_new}) cannot fire it "
        "(unknown job 'work': register it with @app.job), and the 1 older worker(s)"
    )


def test_the_report_reads_the_database_only_and_says_no_live_worker(make_app: MakeApp) -> None:
    app, _ = build(make_app)
    live(app)
    at(app, 100)  # the worker's heartbeat is now 100 s old: nobody alive, nobody checked
    report = app.health.report()
    assert not report.ok and report.fleet == "no live worker: the newest heartbeat is 1m40s old"
    (problem,) = report.problems
    assert (problem.key, problem.slot, problem.kind, problem.recorded) == (
        "k",
        T0 + 60 * S,
        ProblemKind.LATE,
        False,
    )
    assert problem.line() == (
        "k  2030-01-01T00:01:00Z  late  no_live_worker: no live worker: the newest heartbeat "
        "is 1m40s old"
    )
    assert report.schedules[0].lateness == 40.0
    assert app.storage.list_problems() == []  # read only


def test_a_dst_gap_is_shown_not_raised(make_app: MakeApp) -> None:
    start = utc(2030, 3, 10, 6, 10)
    app, _ = build(make_app, start, spec="*/30 * * * *", timezone="America/New_York", grace="5m")
    # 2030-03-10: New York springs forward at 02:00 (07:00Z): no 02:00 nor 02:30 slot.
    live(app)
    tick(app, utc(2030, 3, 10, 6, 30))  # 01:30 EST
    drain(app)
    report = app.health.report()
    assert report.schedules[0].notes == (
        "DST gap 2030-03-10 02:00 to 03:00 (America/New_York): no slot at the wall-clock times "
        "inside it (they do not exist)",
    )
    live(app)
    tick(app, utc(2030, 3, 10, 7, 0))  # 03:00 EDT
    drain(app)
    assert check_health(app, utc(2030, 3, 10, 7, 6)) == []
