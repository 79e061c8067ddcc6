"""The pure decision: `decide` (what one tick does to one ledger row) and `plan_sync` (how the
ledger follows the code's declarations), as tables. No database, no clock."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from onthedot.domain.definitions import ScheduleDef
from onthedot.domain.jobs import NewJob
from onthedot.domain.ledger import LedgerRow, PlannedSlot, SlotOutcome, TickPlan
from onthedot.domain.slots import decide, jitter_offset, plan_sync
from onthedot.domain.specs import parse_spec

T0 = datetime(2030, 1, 1, tzinfo=UTC)  # on the grid of every interval below


def t(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def sched(spec: str = "every 10s", key: str = "k", **options: Any) -> ScheduleDef:
    tz = ZoneInfo(options.pop("timezone", "UTC"))
    return ScheduleDef(key=key, spec=parse_spec(spec), tz=tz, job="work", **options)


def ledger(s: ScheduleDef, cursor: datetime = T0, **fields: Any) -> LedgerRow:
    return LedgerRow(
        key=s.key,
        source="code",
        fingerprint=s.fingerprint,
        spec=s.spec.canonical(),
        timezone=s.timezone,
        cursor=cursor,
        next_due_at=s.spec.next_after(cursor, s.tz),
        **fields,
    )


def fired(plan: TickPlan) -> list[tuple[float, str]]:
    return [((p.slot - T0).total_seconds(), p.outcome) for p in plan.slots]


E, SKIP = SlotOutcome.ENQUEUED, SlotOutcome.SKIPPED_OVERLAP
W = timedelta


def enq(*seconds: float) -> list[tuple[float, str]]:
    return [(x, E) for x in seconds]


# (definition options, now (seconds after T0), fired, cursor, next due, missed, coalesced)
DECIDE_TABLE = [
    pytest.param({}, 5, [], 0, 10, 0, 0, id="nothing-due-yet"),
    pytest.param({}, 10, enq(10), 10, 20, 0, 0, id="latest-one-due"),
    pytest.param({}, 65, enq(60), 60, 70, 0, 5, id="latest-coalesces"),
    pytest.param({"catchup": "all"}, 35, enq(10, 20, 30), 30, 40, 0, 0, id="all-oldest-first"),
    pytest.param(
        {"catchup": "all", "max_per_tick": 2}, 65, enq(10, 20), 20, 30, 0, 0, id="all-bounded"
    ),
    pytest.param(
        {"catchup": "none", "grace": W(seconds=15)},
        65,
        enq(50, 60),
        60,
        70,
        4,
        0,
        id="none-within-grace",
    ),
    pytest.param({"catchup": "none", "grace": W(0)}, 65, [], 64, 70, 6, 0, id="none-zero-grace"),
    pytest.param(
        {"catchup": "none", "grace": W(0)}, 60, enq(60), 60, 70, 5, 0, id="none-zero-grace-on-time"
    ),
    pytest.param(
        {"catchup_window": W(minutes=1)}, 300, enq(300), 300, 310, 23, 6, id="window-latest"
    ),
    pytest.param(
        {"catchup": "all", "catchup_window": W(minutes=1)},
        100,
        enq(40, 50, 60, 70, 80, 90, 100),
        100,
        110,
        3,
        0,
        id="window-all-edge-is-in",
    ),
    pytest.param(
        {"catchup": "all", "catchup_window": W(minutes=1)},
        100.5,
        enq(50, 60, 70, 80, 90, 100),
        100,
        110,
        4,
        0,
        id="window-fractional-now",
    ),
    pytest.param(
        {"catchup_window": W(seconds=5)}, 66, [], 60, 70, 6, 0, id="window-nothing-inside"
    ),
]


@pytest.mark.parametrize(
    ("options", "now", "slots", "cursor", "next_due", "missed", "coalesced"), DECIDE_TABLE
)
def test_decide(
    options: dict[str, Any],
    now: float,
    slots: list[tuple[float, str]],
    cursor: float,
    next_due: float,
    missed: int,
    coalesced: int,
) -> None:
    s = sched(**options)
    plan = decide(ledger(s), s, t(now))
    assert fired(plan) == slots
    assert plan.cursor == t(cursor)
    assert plan.next_due_at == t(next_due)
    assert (plan.missed, plan.coalesced) == (missed, coalesced)
    assert plan.old_cursor == T0
    assert plan.repair is None and not plan.remove and not plan.unpause


def test_missed_range_is_reported() -> None:
    s = sched(catchup_window=W(minutes=1))
    plan = decide(ledger(s), s, t(300))
    assert (plan.missed_from, plan.missed_to) == (t(10), t(230))


def test_overlap_skip_while_active_and_within_one_tick() -> None:
    s = sched(catchup="all", overlap="skip")
    busy = decide(ledger(s, active_jobs=1), s, t(25))
    assert fired(busy) == [(10, SKIP), (20, SKIP)]
    assert all(p.job is None for p in busy.slots)
    idle = decide(ledger(s), s, t(25))
    # The first slot's job is queued from then on: the second slot overlaps it.
    assert fired(idle) == [(10, E), (20, SKIP)]


def test_serialize_sets_the_lock_key_and_allow_does_not() -> None:
    for overlap, lock in (("serialize", "schedule:k"), ("allow", None), ("skip", None)):
        s = sched(overlap=overlap)
        (planned,) = decide(ledger(s), s, t(10)).slots
        assert planned.job is not None and planned.job.lock_key == lock


def test_the_job_carries_the_slot_and_the_current_definition() -> None:
    class Defaults:
        queue, priority, max_attempts, timeout = "mail", 7, 5, 30.0

    s = sched(args=(1, "a"), kwargs={"x": True})
    (planned,) = decide(ledger(s), s, t(10), job_defaults=Defaults()).slots
    assert planned == PlannedSlot(
        t(10),
        E,
        NewJob(
            name="work",
            args=[1, "a"],
            kwargs={"x": True},
            queue="mail",
            priority=7,
            run_at=None,
            max_attempts=5,
            timeout=30.0,
            schedule_key="k",
            slot=t(10),
        ),
    )
    overridden = replace(s, queue="other", priority=-1)
    (planned,) = decide(ledger(s), overridden, t(10), job_defaults=Defaults()).slots
    assert planned.job is not None
    assert (planned.job.queue, planned.job.priority) == ("other", -1)


def test_jitter_moves_run_at_not_the_slot() -> None:
    s = sched("every 1m", jitter=W(seconds=40))
    for minute in range(1, 30):
        (planned,) = decide(ledger(s, t(60 * minute - 60)), s, t(60 * minute)).slots
        assert planned.slot == t(60 * minute)
        assert planned.job is not None and planned.job.run_at is not None
        offset = planned.job.run_at - planned.slot
        assert offset == jitter_offset("k", planned.slot, W(seconds=40))
        assert W(0) <= offset < W(seconds=40)
        assert offset == offset.__class__(seconds=int(offset.total_seconds()))  # whole seconds


def test_jitter_offset_is_deterministic_and_spread() -> None:
    offsets = {jitter_offset("k", t(60 * i), W(minutes=1)) for i in range(200)}
    assert len(offsets) > 30  # spread over the range
    assert jitter_offset("k", t(60), W(minutes=1)) == jitter_offset("k", t(60), W(minutes=1))
    assert all(W(0) <= o < W(minutes=1) for o in offsets)


def test_timing_changed_restarts_at_now_without_firing() -> None:
    old = sched("every 10s")
    new = sched("every 7s")
    plan = decide(ledger(old), new, t(100))
    assert plan.slots == () and plan.cursor == t(100)
    assert plan.repair is not None
    assert (plan.repair.fingerprint, plan.repair.spec, plan.repair.repaired_reason) == (
        new.fingerprint,
        "every 7s",
        "timing changed",
    )
    assert plan.next_due_at == new.spec.next_after(t(100), new.tz)


def test_the_cursor_never_moves_backwards() -> None:
    s = sched(catchup="all")
    ahead = ledger(s, t(100))
    for plan in (decide(ahead, s, t(50)), decide(ahead, sched("every 7s"), t(50))):
        assert plan.cursor == t(100) and plan.slots == ()
    latest = sched()
    assert decide(ledger(latest, t(100)), latest, t(50)).cursor == t(100)


def test_not_declared_is_removed() -> None:
    s = sched()
    plan = decide(ledger(s, t(30)), None, t(100))
    assert (plan.remove, plan.cursor, plan.next_due_at, plan.slots) == (True, t(30), None, ())


def test_paused_fires_nothing_and_keeps_the_cursor() -> None:
    s = sched()
    plan = decide(ledger(s, paused=True), s, t(100))
    assert (plan.slots, plan.cursor, plan.next_due_at, plan.unpause) == ((), T0, None, False)
    until = decide(ledger(s, paused=True, paused_until=t(200)), s, t(100))
    assert (until.slots, until.next_due_at) == ((), t(200))


def test_paused_until_passed_counts_the_pause_as_missed_and_resumes() -> None:
    s = sched()
    plan = decide(ledger(s, paused=True, paused_until=t(50)), s, t(75))
    assert plan.unpause
    assert (plan.missed, plan.missed_from, plan.missed_to) == (5, t(10), t(50))
    assert fired(plan) == [(70, E)]
    assert plan.coalesced == 1


# -- plan_sync ------------------------------------------------------------------------------


def test_first_sight_starts_at_now() -> None:
    s = sched()
    report = plan_sync(t(5), [], {"k": s}, generation=3)
    (row,) = report.inserts
    assert (row.cursor, row.next_due_at, row.generation, row.repaired_reason) == (
        t(5),
        t(10),
        3,
        "first sight",
    )
    assert report.restarts == ()
    assert report.removals == report.conflicts == ()


def test_same_timing_changes_nothing() -> None:
    s = sched()
    other_definition = replace(s, args=(1,), queue="q", priority=3)
    report = plan_sync(t(500), [ledger(s, t(30))], {"k": other_definition}, generation=2)
    assert report.inserts == report.restarts == ()
    assert report.removals == report.conflicts == ()


def test_timing_change_restarts_at_now() -> None:
    old, new = sched("every 10s"), sched("every 10s", timezone="Europe/Paris")
    (row,) = plan_sync(t(500), [ledger(old, t(30))], {"k": new}, generation=2).restarts
    assert (row.cursor, row.fingerprint, row.timezone, row.repaired_reason) == (
        t(500),
        new.fingerprint,
        "Europe/Paris",
        "timing changed",
    )
    (ahead,) = plan_sync(t(10), [ledger(old, t(30))], {"k": new}, generation=2).restarts
    assert ahead.cursor == t(30)  # never backwards


def test_removed_and_declared_again() -> None:
    s = sched()
    live, gone = ledger(s, t(30)), ledger(s, t(30), removed_at=t(40))
    assert plan_sync(t(500), [live], {}, generation=2).removals == ("k",)
    assert plan_sync(t(500), [gone], {}, generation=2).removals == ()
    (again,) = plan_sync(t(500), [gone], {"k": s}, generation=2).restarts
    assert (again.cursor, again.next_due_at, again.repaired_reason) == (
        t(30),
        t(40),
        "declared again",
    )
    (changed,) = plan_sync(t(500), [gone], {"k": sched("every 20s")}, generation=2).restarts
    assert changed.cursor == t(500)


def test_a_runtime_schedule_of_the_same_key_wins() -> None:
    s = sched()
    dynamic = replace(ledger(s), source="dynamic")
    report = plan_sync(t(5), [dynamic], {"k": s}, generation=1)
    assert report.conflicts == ("k",) and report.inserts == report.restarts == ()
    assert plan_sync(t(5), [dynamic], {}, generation=1).removals == ()


def test_a_paused_row_keeps_sleeping_across_a_restart() -> None:
    old = sched("every 10s")
    paused = ledger(old, paused=True)
    (row,) = plan_sync(t(100), [paused], {"k": sched("every 20s")}, generation=2).restarts
    assert row.next_due_at is None
    until = ledger(old, paused=True, paused_until=t(1000))
    (row,) = plan_sync(t(100), [until], {"k": sched("every 20s")}, generation=2).restarts
    assert row.next_due_at == t(1000)


def test_decider_memo_matches_fresh_decisions_and_keeps_only_the_current_tick() -> None:
    """A scheduler's Decider shares timing work between rows of one tick; its plans must be
    those of a fresh `decide`, whatever it remembers from earlier rows and ticks, and it must
    not keep the timings of earlier ticks (they can never be used again)."""
    from onthedot.domain.slots import Decider

    shared = [sched("every 10s", key=f"s{i}", catchup="all") for i in range(3)]
    other = sched("every 15s", key="o", catchup="all")
    decider = Decider()
    for now in (t(10), t(25), t(25), t(61), t(10)):
        for s in (*shared, other):
            for cursor in (T0, t(10)):
                row = ledger(s, cursor)
                assert decider(row, s, now) == decide(row, s, now)
        # Distinct (timing, cursor) pairs of this tick only: two timings x two cursors.
        assert len(decider._memo) == 4
