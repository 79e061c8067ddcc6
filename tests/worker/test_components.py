"""The worker's shared-state objects and the in-process wake-up hub, without a database."""

from __future__ import annotations

import threading

import pytest

from onthedot.domain.errors import DatabaseUnavailable
from onthedot.domain.jobs import ClaimedJob
from onthedot.observability.events import DatabaseError, Event, EventBus
from onthedot.wakeups import WakeupHub
from onthedot.worker.maintenance import DatabaseBackoff
from onthedot.worker.state import STOP, Flags, Pipeline, Running, RunningJobs


def _job(job_id: int, timeout: float | None = None) -> ClaimedJob:
    return ClaimedJob(
        id=job_id,
        name="j",
        queue="default",
        args=[],
        kwargs={},
        attempt=1,
        max_attempts=3,
        timeout=timeout,
        schedule_key=None,
        slot=None,
    )


def test_hub_notifies_listeners_until_they_unregister() -> None:
    hub = WakeupHub()
    heard: list[set[str]] = []
    changed: list[bool] = []
    hub.jobs_added(["a"])  # nobody listens: nothing to do
    unregister = hub.on_jobs(heard.append)
    unregister_schedules = hub.on_schedules_changed(lambda: changed.append(True))
    hub.jobs_added(job for job in ["a", "b", "a"])
    hub.schedules_changed()
    unregister()
    unregister()  # twice is harmless
    unregister_schedules()
    hub.jobs_added(["c"])
    hub.schedules_changed()
    assert heard == [{"a", "b"}]
    assert changed == [True]


def test_pipeline_counts_claimed_finished_and_persisted() -> None:
    pipeline = Pipeline(max_inflight=4, refill_at=2)
    stopping = threading.Event()
    assert pipeline.wait_for_room() == 4
    pipeline.add_claimed([_job(1), _job(2), _job(3)])
    assert pipeline.taken() == 3
    assert sorted(pipeline.held_ids()) == [1, 2, 3]
    first = pipeline.take(stopping)
    assert isinstance(first, ClaimedJob) and first.id == 1
    pipeline.finished()
    assert not pipeline.drained(0)  # one outcome not yet persisted, two jobs taken
    pipeline.persisted([1], 1, burst=True)
    assert pipeline.take_unstarted() == [2, 3]
    assert pipeline.held_ids() == []
    assert pipeline.drained(0)
    pipeline.stop_executors(1)
    stopping.set()
    assert pipeline.take(stopping) is STOP


def test_running_jobs_expire_once_and_remove_only_their_own_entry() -> None:
    running = RunningJobs()
    entry = Running(_job(7, timeout=1.0), started=0.0, deadline=1.0)
    running.add(entry)
    assert running.expire(0.5) == []
    assert running.expire(2.0) == [entry]
    assert running.expire(3.0) == []  # already marked
    later = Running(_job(7), started=2.0, deadline=None)  # the next attempt, same job
    running.add(later)
    assert running.remove(entry) is True  # timed out: its thread retires
    running.request_cancel({7})
    running.forget_finished_cancels()
    assert running.cancel_requested == {7}  # the later attempt still runs
    assert running.remove(later) is False
    running.forget_finished_cancels()
    assert running.cancel_requested == set()


class _NoWait(threading.Event):
    """A stop event whose waits return at once: the backoff's pauses cost no time here."""

    def wait(self, timeout: float | None = None) -> bool:
        return self.is_set()


def test_backoff_retries_while_the_database_is_unavailable() -> None:
    events = EventBus()
    seen: list[Event] = []
    events.subscribe(seen.append)
    flags = Flags(stopping=_NoWait())
    calls = iter([DatabaseUnavailable("down"), None])

    def attempt() -> str:
        exc = next(calls)
        if exc is not None:
            raise exc
        return "up"

    backoff = DatabaseBackoff(events, flags)
    assert backoff.retry("start", attempt) == "up"
    assert [type(e) for e in seen] == [DatabaseError]
    flags.stopping.set()
    with pytest.raises(DatabaseUnavailable):
        backoff.retry("start", lambda: (_ for _ in ()).throw(DatabaseUnavailable("down")))
