"""The deploy fence is part of the claiming transaction: while a scheduler worker of a newer
code generation is alive, an older scheduler's tick and sync write nothing."""

from __future__ import annotations

from datetime import timedelta

from onthedot import App, ManualClock
from onthedot.schedules.scheduler import Scheduler
from onthedot.storage.interface import WorkerInfo


def make(db_url: str, spec: str) -> tuple[App, ManualClock, Scheduler]:
    clock = ManualClock("2030-01-01T00:00:00Z")
    app = App(db_url, clock=clock, log_events=False, lease=5.0)
    app.migrate()

    @app.job(name="work")
    def work() -> None: ...

    app.schedule("report", spec, work)
    scheduler = app.scheduler(worker_id="old")
    scheduler.prepare()
    scheduler.sync()
    return app, clock, scheduler


def newer_worker(app: App, generation: int, *, scheduler: bool = True) -> None:
    app.storage.at(app.clock.fixed_now()).register_worker(
        WorkerInfo(
            id=f"new-{generation}-{scheduler}",
            hostname="h",
            pid=1,
            queues=("default",),
            concurrency=1,
            scheduler=scheduler,
            generation=generation,
        ),
    )


def test_newer_live_scheduler_fences_tick_and_sync(db_url: str) -> None:
    app, clock, old = make(db_url, "every 10s")
    clock.advance(30)
    newer_worker(app, old.generation + 1)  # heartbeat at the current (manual) instant
    results = old.tick()
    assert results[-1].fenced and old.fenced
    assert app.storage.slot_history("report") == []
    assert old.sync().fenced
    # The newer worker's heartbeat expires (rollback): the old code decides again.
    clock.advance(app.lease + 1)
    results = old.tick()
    assert not results[-1].fenced and not old.fenced
    assert [r.outcome for r in app.storage.slot_history("report")] == ["enqueued"]
    app.close()


def test_newer_worker_without_scheduler_does_not_fence(db_url: str) -> None:
    app, clock, old = make(db_url, "every 10s")
    clock.advance(10)
    newer_worker(app, old.generation + 1, scheduler=False)
    assert not old.tick()[-1].fenced
    assert len(app.storage.slot_history("report")) == 1
    app.close()


def test_older_generations_never_fence_newer(db_url: str) -> None:
    app, clock, scheduler = make(db_url, "every 10s")
    clock.advance(timedelta(seconds=20))
    newer_worker(app, scheduler.generation - 1)
    assert not scheduler.tick()[-1].fenced
    assert len(app.storage.slot_history("report")) == 1
    app.close()


def test_generation_is_assigned_once_per_code_hash(db_url: str) -> None:
    app = App(db_url, log_events=False)
    app.migrate()
    first = app.storage.code_generation("hash-a")
    second = app.storage.code_generation("hash-b")
    assert second > first
    assert app.storage.code_generation("hash-a") == first
    app.close()
