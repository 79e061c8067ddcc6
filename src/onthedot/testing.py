"""Helpers for testing your own jobs and schedules, with a real database and a manual clock.

```python
from datetime import UTC, datetime
from onthedot import App
from onthedot.testing import ManualClock, drain, slots_between, tick

clock = ManualClock(datetime(2030, 1, 1, 8, 0, tzinfo=UTC))
app = App("sqlite:///test.db", clock=clock)

@app.job(name="report", schedule="0 9 * * *")
def report() -> None: ...

tick(app)                                      # first sight: the schedule starts at 08:00
fired = tick(app, datetime(2030, 1, 1, 9, 0, tzinfo=UTC))
assert [(k, s) for k, s, _ in fired] == [("report", datetime(2030, 1, 1, 9, tzinfo=UTC))]
drain(app)                                     # run the enqueued job in this process
```

`tick` runs exactly what a worker's scheduler runs (sync the declarations, then one tick), so a
test exercises the real decision, the real ledger and the real exactly-once key.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

from onthedot.clock import ManualClock
from onthedot.schedules.facade import Schedules

if TYPE_CHECKING:
    from onthedot.app import App
    from onthedot.domain.watch import ProblemRecord
    from onthedot.schedules.scheduler import Scheduler

__all__ = [
    "FiredSlot",
    "ManualClock",
    "check_health",
    "drain",
    "scheduler_for",
    "slots_between",
    "tick",
]


class FiredSlot(NamedTuple):
    """A slot a tick acted on. `job_id` is None when the slot was recorded without a job
    (`overlap="skip"` while a job of the schedule was still queued or running)."""

    key: str
    slot: datetime
    job_id: int | None


class _Entry(NamedTuple):
    scheduler: Scheduler
    code_hash: str


_ATTRIBUTE = "_onthedot_testing_scheduler"  # kept on the app itself: no module-level registry
_lock = threading.Lock()


def scheduler_for(app: App, *, now: datetime | None = None) -> Scheduler:
    """The in-process scheduler `tick` uses for `app`, prepared and synced.

    The first call validates the declarations (raising `ScheduleError` with every problem, as a
    worker refusing to start would), finds this code's generation and syncs the ledger at `now`
    (first sight). When the declarations change afterwards (a schedule added, removed or edited),
    the next call prepares and syncs again, as a deploy of the new code would.
    """
    with _lock:
        code_hash = app.schedules.code_hash()
        entry: _Entry | None = getattr(app, _ATTRIBUTE, None)
        # After app.close() the app opens a new storage: a scheduler holding the old is stale.
        stale = entry is not None and entry.scheduler.storage is not app.raw_storage()
        if entry is None or entry.code_hash != code_hash or stale:
            scheduler = app.scheduler(worker_id="onthedot.testing")
            scheduler.prepare()
            scheduler.sync(now=now)
            entry = _Entry(scheduler, code_hash)
            setattr(app, _ATTRIBUTE, entry)
        return entry.scheduler


def tick(app: App, now: datetime | None = None) -> list[FiredSlot]:
    """Run one scheduler tick of `app` at `now`; return the slots it acted on, oldest first.

    With `now` given and an app built with a `ManualClock`, the clock is set to `now` first (so
    jobs, workers and views see the same time); with another clock, `now` is passed to the
    storage verbs for this tick only. Without `now`, the app's clock decides (a `ManualClock`'s
    time, or the database clock). The first call (and the first after the declarations
    changed) syncs the ledger with the declarations at that time: first sight is then.
    """
    when = _aware(now) if now is not None else None
    clock = app.clock
    if when is not None and isinstance(clock, ManualClock):
        clock.set(when)
        when = None  # the clock now says it; storage reads it from there
    scheduler = scheduler_for(app, now=when)
    fired: list[FiredSlot] = []
    for result in scheduler.tick(now=when):
        fired.extend(FiredSlot(r.key, r.slot, r.job_id) for r in result.recorded)
    fired.sort(key=lambda f: (f.slot, f.key))
    return fired


def check_health(app: App, now: datetime | None = None) -> list[ProblemRecord]:
    """Run the health check a worker's scheduler runs at its tick (docs/health.md) at `now`
    (as `tick` takes it), until no schedule's check is due; return the problems it raised and
    resolved, oldest first."""
    when = _aware(now) if now is not None else None
    clock = app.clock
    if when is not None and isinstance(clock, ManualClock):
        clock.set(when)
        when = None
    scheduler = scheduler_for(app, now=when)
    found: list[ProblemRecord] = []
    while True:
        result = scheduler.check_health(now=when)
        found.extend(result.problems)
        if not result.evaluated:
            return found


def slots_between(
    schedules: App | Schedules,
    key: str,
    start: datetime,
    end: datetime,
    *,
    limit: int = 10_000,
) -> list[datetime]:
    """The slots of schedule `key` in `(start, end]` (UTC, oldest first), computed from its
    timing spec and time zone as the scheduler computes them, DST included.

    This is the timing alone: it ignores the ledger, catch-up and overlap policies (what a
    tick actually enqueues is what `tick` returns). `schedules` is an App or `app.schedules`.
    """
    registry = schedules if isinstance(schedules, Schedules) else schedules.schedules
    sched = registry.declared().get(key)
    if sched is None:
        sched = registry.get_definition(key)  # a runtime schedule, read from the database
    out: list[datetime] = []
    for slot in sched.spec.slots_between(_aware(start), _aware(end), sched.tz):
        out.append(slot)
        if len(out) >= limit:
            break
    return out


def drain(
    app: App,
    *,
    queues: Iterable[str] | None = None,
    concurrency: int = 1,
) -> int:
    """Run a burst worker in this process until no job of `queues` is ready and none is
    running; return how many jobs it finished. The scheduler does not run (use `tick`).

    `queues` defaults to every queue holding a job, and `default`. Readiness follows the app's
    clock: with a `ManualClock`, a job delayed past its time (a retry's backoff, a jitter) waits
    until the clock is moved past it.
    """
    names: Sequence[str]
    if queues is None:
        found = {s.queue for s in app.queue_stats() if s.queued or s.running}
        names = sorted(found | {"default"})
    else:
        names = [q for q in queues if q]
    total = 0
    while True:
        worker = app.worker(
            queues=names,
            concurrency=concurrency,
            burst=True,
            scheduler=False,
            install_signals=False,
        )
        done = int(worker.run())
        total += done
        # A burst worker can stop while the last job it ran still held a lock key
        # (overlap="serialize"): the job waiting on that key is ready now, so go on.
        if not done or not any(s.ready for s in app.queue_stats() if s.queue in names):
            return total


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError(f"{value!r} is naive: onthedot needs aware datetimes (add tzinfo=UTC)")
    return value.astimezone(UTC)
