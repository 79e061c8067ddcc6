"""Operator controls on declared and runtime schedules: pause, resume, skip, unskip, trigger,
backfill, reset, and the audit log. Driven by a manual clock on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from onthedot import App, JobState, ManualClock, ScheduleError
from onthedot.schedules.controls import BACKFILL_BOUND
from onthedot.testing import tick

T0 = datetime(2030, 1, 1, tzinfo=UTC)
MIN = timedelta(minutes=1)


def build(db_url: str, clock: ManualClock) -> App:
    app = App(db_url, clock=clock, log_events=False)

    @app.job(name="work")
    def work() -> None: ...

    app.schedule("every-minute", "* * * * *", work)
    return app


@pytest.fixture
def ops(db_url: str) -> Iterator[App]:
    app = build(db_url, ManualClock(T0))
    app.migrate()
    tick(app)
    yield app
    app.close()


def slots_of(fired: list[object]) -> list[datetime]:
    return [f.slot for f in fired]  # type: ignore[attr-defined]


def test_pause_stops_firing_and_resume_restarts_now_counting_missed(ops: App) -> None:
    view = ops.schedules.pause("every-minute", note="db upgrade", actor="alice")
    assert view["status"] == "paused" and view["paused_by"] == "alice"
    assert view["pause_note"] == "db upgrade"
    assert tick(ops, T0 + 5 * MIN) == []
    view = ops.schedules.resume("every-minute", actor="alice")
    assert view["status"] == "active" and view["missed"] == 5
    assert tick(ops, T0 + 5 * MIN + timedelta(seconds=30)) == []
    assert slots_of(tick(ops, T0 + 6 * MIN)) == [T0 + 6 * MIN]
    assert [e.action for e in ops.schedules.audit("every-minute")] == ["resumed", "paused"]


def test_resume_with_catchup_lets_the_policy_fire_the_latest(ops: App) -> None:
    ops.schedules.pause("every-minute")
    tick(ops, T0 + 5 * MIN + timedelta(seconds=10))
    ops.schedules.resume("every-minute", catchup=True)
    fired = tick(ops)
    assert slots_of(fired) == [T0 + 5 * MIN]  # catchup="latest": the newest, the rest coalesced
    row = next(iter(ops.storage.list_schedule_rows(["every-minute"])), None)
    assert row is not None and row.coalesced_total == 4


def test_pause_until_resumes_by_itself(ops: App) -> None:
    ops.schedules.pause("every-minute", until=T0 + 3 * MIN)
    assert tick(ops, T0 + 2 * MIN) == []
    fired = tick(ops, T0 + 4 * MIN)
    assert slots_of(fired) == [T0 + 4 * MIN]
    row = next(iter(ops.storage.list_schedule_rows(["every-minute"])), None)
    assert row is not None and not row.paused and row.missed_total == 3


def test_pause_refuses_a_past_until_and_resume_needs_a_pause(ops: App) -> None:
    with pytest.raises(ScheduleError, match="not in the future"):
        ops.schedules.pause("every-minute", until=T0 - MIN)
    with pytest.raises(ScheduleError, match="not paused"):
        ops.schedules.resume("every-minute")


def test_skip_next_and_named_slot_then_unskip(ops: App) -> None:
    first = ops.schedules.skip("every-minute", note="holiday", actor="bob")
    assert first == T0 + MIN
    second = ops.schedules.skip("every-minute")  # the next one not already skipped
    assert second == T0 + 2 * MIN
    named = ops.schedules.skip("every-minute", T0 + 5 * MIN)
    ops.schedules.unskip("every-minute", second)
    assert ops.schedules.skipped("every-minute") == [first, named]
    fired = tick(ops, T0 + 5 * MIN)
    # catch-up "latest" would fire 00:05, but it is skipped: nothing is enqueued for it.
    assert fired == []
    history = {r.slot: r.outcome for r in ops.storage.slot_history("every-minute")}
    assert history[first] == "skipped_operator" and history[named] == "skipped_operator"
    assert slots_of(tick(ops, T0 + 6 * MIN)) == [T0 + 6 * MIN]


def test_skip_rejects_past_or_non_slots(ops: App) -> None:
    with pytest.raises(ScheduleError, match="not in the future"):
        ops.schedules.skip("every-minute", T0 - MIN)
    with pytest.raises(ScheduleError, match="not a slot"):
        ops.schedules.skip("every-minute", T0 + timedelta(seconds=90))
    with pytest.raises(ScheduleError, match="not skipped"):
        ops.schedules.unskip("every-minute", T0 + 3 * MIN)


def test_trigger_runs_now_and_consumes_no_slot(ops: App) -> None:
    ops.clock.advance(timedelta(seconds=20))  # type: ignore[attr-defined]
    job_id = ops.schedules.trigger("every-minute", note="rerun", actor="carol")
    job = ops.get_job(job_id)
    # Issue 14: a manual run carries the instant it was asked for as its slot, and the slot
    # history records it as `manual` (before, its slot was None and the history empty).
    asked = T0 + timedelta(seconds=20)
    assert job is not None and job.schedule_key == "every-minute" and job.slot == asked
    history = ops.storage.slot_history("every-minute")
    assert [(r.slot, r.outcome, r.job_id) for r in history] == [(asked, "manual", job_id)]
    assert slots_of(tick(ops, T0 + MIN)) == [T0 + MIN]
    entry = ops.schedules.audit("every-minute")[0]
    assert (entry.action, entry.actor, entry.details) == ("manual", "carol", {"job_id": job_id})


def test_backfill_previews_then_enqueues_once(ops: App) -> None:
    tick(ops, T0 + 10 * MIN)  # fires 00:10 (latest), coalesces the rest
    start, end = T0 - 2 * MIN, T0 + 10 * MIN
    preview = ops.schedules.backfill("every-minute", start, end)
    assert preview.dry_run
    assert preview.slots == [T0 + k * MIN for k in range(-2, 10)]
    assert preview.already == [T0 + 10 * MIN]
    # Issue 14: nothing was pruned (the schedule is younger than the retention), so no warning.
    assert not preview.beyond_history
    assert ops.list_jobs(schedule_key="every-minute", limit=100).__len__() == 1
    done = ops.schedules.backfill("every-minute", start, end, dry_run=False, actor="dan")
    assert done.slots == preview.slots and len(done.enqueued) == len(preview.slots)
    again = ops.schedules.backfill("every-minute", start, end, dry_run=False)
    assert again.slots == [] and len(again.already) == len(preview.slots) + 1
    outcomes = [r.outcome for r in ops.storage.slot_history("every-minute", limit=100)]
    assert outcomes.count("backfilled") == len(preview.slots)
    jobs = ops.list_jobs(schedule_key="every-minute", limit=100)
    assert len(jobs) == len(preview.slots) + 1
    assert all(j.state is JobState.QUEUED for j in jobs)


def test_backfill_refuses_future_and_unbounded_ranges(ops: App) -> None:
    with pytest.raises(ScheduleError, match="future"):
        ops.schedules.backfill("every-minute", T0, T0 + 5 * MIN)
    tick(ops, T0 + (BACKFILL_BOUND + 10) * MIN)
    start = T0
    end = T0 + (BACKFILL_BOUND + 5) * MIN
    with pytest.raises(ScheduleError, match="force"):
        ops.schedules.backfill("every-minute", start, end, dry_run=False)
    done = ops.schedules.backfill("every-minute", start, end, dry_run=False, force=True)
    assert len(done.enqueued) > BACKFILL_BOUND


def test_reset_clears_operator_state(ops: App) -> None:
    ops.schedules.pause("every-minute")
    ops.schedules.skip("every-minute", T0 + 3 * MIN)
    ops.schedules.reset("every-minute", actor="erin")
    row = next(iter(ops.storage.list_schedule_rows(["every-minute"])), None)
    assert row is not None and not row.paused
    assert ops.schedules.skipped("every-minute") == []
    assert slots_of(tick(ops, T0 + 3 * MIN)) == [T0 + 3 * MIN]


def test_operator_state_of_declared_schedule_survives_a_restart(db_url: str) -> None:
    clock = ManualClock(T0)
    first = build(db_url, clock)
    first.migrate()
    tick(first)
    first.schedules.pause("every-minute", note="keep paused")
    skipped = first.schedules.skip("every-minute", T0 + 10 * MIN)
    first.close()
    # A new process with the same code (a restart or a deploy that keeps the timing).
    second = build(db_url, clock)
    assert tick(second, T0 + 5 * MIN) == []
    view = second.schedules.get("every-minute")
    assert view["status"] == "paused" and view["pause_note"] == "keep paused"
    assert second.schedules.skipped("every-minute") == [skipped]
    second.close()


def test_controls_on_unknown_or_unseen_keys_are_clear(ops: App) -> None:
    with pytest.raises(ScheduleError, match="no schedule"):
        ops.schedules.pause("nope")
    ops.schedule("later", "every 1h", "work")
    # Issue 14: a declared schedule no worker has run yet gets its ledger row on demand
    # (before, this raised "no worker has started with it yet").
    assert ops.schedules.pause("later")["status"] == "paused"
