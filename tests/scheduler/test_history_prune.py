"""The scheduler's own tables stay small (issue 29, item 4): slot history is pruned behind each
cursor, in batches, keeping what the scheduler and the health watch still read (each
schedule's newest slot, slots the health watch has not settled, the slot of an open problem);
pruning while schedules fire never makes a slot fire twice. SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import timedelta

from onthedot import App
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.storage.interface import WorkerInfo
from onthedot.testing import check_health, tick
from tests.scheduler.helpers import MakeApp, clock_of, history, job_slots, row, utc

T0 = utc(2030, 1, 1)
MINUTE = timedelta(minutes=1)
FAR = T0 + timedelta(days=3650)  # a prune cut-off after every row was recorded


def run_due_jobs(app: App) -> None:
    """Claim and succeed every due job (a worker's work, without the worker)."""
    storage = app.storage
    while claimed := storage.claim_jobs("w", "default", 100, 30):
        outcomes = [Outcome(c.id, OutcomeKind.SUCCEEDED, attempt=1) for c in claimed]
        storage.finish_jobs("w", outcomes)


def protected(app: App, key: str) -> set[object]:
    """The slots of `key` a prune must keep: at or after the cursor, the newest, after the
    health watch's settled slot, and the slots of open problems."""
    slots = [s for s, _ in history(app, key)]
    cursor = row(app, key).cursor
    [health] = app.storage.health_states([key])
    keep = {s for s in slots if s >= cursor}
    keep.add(max(slots))
    if health.watch_slot is not None:
        keep |= {s for s in slots if s > health.watch_slot}
    keep |= {p.slot for p in app.storage.list_problems(key=key)}
    return keep


def test_pruning_keeps_what_the_scheduler_and_the_health_watch_read(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("settled", "* * * * *", "work")
    app.job(name="stuck", queue="nobody")(lambda: None)
    app.schedule("stuck", "* * * * *", "stuck")  # its jobs never run: nothing settles
    tick(app, T0)
    for m in range(1, 31):
        now = T0 + m * MINUTE
        tick(app, now)
        app.storage.register_worker(WorkerInfo("w", "host", 1, ("default",), 1, jobs=("work",)))
        run_due_jobs(app)
        check_health(app, now + timedelta(seconds=30))  # the watch a worker's scheduler runs
    tick(app, T0 + 31 * MINUTE)
    check_health(app, T0 + 31 * MINUTE)
    before = {k: [s for s, _ in history(app, k)] for k in ("settled", "stuck")}
    keep = {k: protected(app, k) for k in before}
    assert len(keep["settled"]) < len(before["settled"]) - 20  # most of it settled
    counts = app.storage.at(T0 + 31 * MINUTE).prune(older_than=FAR, workers_older_than=T0)
    after = {k: {s for s, _ in history(app, k)} for k in before}
    assert after == keep
    assert counts["slots"] == sum(len(before[k]) - len(keep[k]) for k in before)
    # The stuck schedule's unsettled slots and open problems are all still there.
    assert app.storage.list_problems(key="stuck")
    assert {p.slot for p in app.storage.list_problems(key="stuck")} <= after["stuck"]
    # Nothing fires again: the next tick enqueues only the next minute's slot.
    fired = tick(app, T0 + 32 * MINUTE)
    assert sorted((f.key, f.slot) for f in fired) == [
        ("settled", T0 + 32 * MINUTE),
        ("stuck", T0 + 32 * MINUTE),
    ]


def test_pruning_while_schedules_fire_never_fires_a_slot_twice(make_app: MakeApp) -> None:
    first = make_app(T0)
    second = make_app(T0)  # a second worker's scheduler on the same database
    for app in (first, second):
        app.job(name="work")(lambda: None)
        for i in range(3):
            app.schedule(f"every-{i}", "* * * * * *", "work")  # every second
    tick(first, T0)
    tick(second, T0)
    stop = threading.Event()
    pruned = []
    errors: list[BaseException] = []

    def prune() -> None:
        try:
            while not stop.is_set():
                now = clock_of(first).now()
                counts = first.storage.at(now).prune(older_than=FAR, workers_older_than=T0)
                pruned.append(counts["slots"])
        except BaseException as exc:
            errors.append(exc)

    fired: list[tuple[str, object]] = []
    pruner = threading.Thread(target=prune, daemon=True)
    pruner.start()
    try:
        for s in range(1, 121):
            now = T0 + timedelta(seconds=s)
            for app in (first, second, first):  # the last: a retried tick of the same instant
                fired += [(f.key, f.slot) for f in tick(app, now) if f.job_id is not None]
            if s % 10 == 0:
                first.storage.register_worker(
                    WorkerInfo("w", "host", 1, ("default",), 1, jobs=("work",))
                )
                run_due_jobs(first)
                check_health(first, now)  # settles the slots that ran: prunable
    finally:
        stop.set()
        pruner.join(60)
    assert not errors, errors
    assert sum(pruned) > 0  # the pruner did delete history while the slots fired
    assert len(fired) == len(set(fired)), "a slot was enqueued twice"
    for i in range(3):
        slots = sorted(slot for key, slot in fired if key == f"every-{i}")
        assert slots == [T0 + timedelta(seconds=s) for s in range(1, 121)]
    # The jobs still there (the prune removed the finished ones) are one per slot too.
    left = job_slots(first, "every-0")
    assert len(left) == len(set(left))
