"""A worker starts a job only while it can prove its claim (issue 24 item 7), in process: the
proof's arithmetic, the executors' check just before a sync or an async start, the keeper's
heartbeat timing its renewals from the moment it sent them, and the give-back of the jobs set
aside, on both databases. The frozen worker itself: tests/torture/test_frozen_worker.py."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from onthedot import JobState
from onthedot.clock import lease_clock
from onthedot.domain.jobs import ClaimedJob, NewJob
from onthedot.domain.retry import Backoff
from onthedot.observability.events import EventBus
from onthedot.storage.interface import Storage
from onthedot.worker.executor import Executors
from onthedot.worker.leases import HeldLeases
from onthedot.worker.maintenance import Keeper
from onthedot.worker.state import Flags, OutcomeQueue, Pipeline, RunningJobs, Threads
from tests.waiting import wait_for
from tests.worker.keepers import keeper

LEASE = 2.0


def test_a_claim_is_proven_until_a_lease_after_its_statement_was_sent() -> None:
    held = HeldLeases(10.0)
    assert held.margin == 1.0  # START_MARGIN; a tenth of a shorter lease
    held.add([1, 2], sent=100.0)
    assert held.proven(1, 108.9) and not held.proven(1, 109.0)
    held.renewed([1, 3], sent=105.0)  # 3 is not held: a renewal never adds a job
    assert held.proven(1, 113.9) and not held.proven(2, 109.0) and not held.proven(3, 0.0)
    held.renewed([1], sent=101.0)  # an older renewal's late answer shortens nothing
    assert held.proven(1, 113.9)
    held.discard([1])
    assert not held.proven(1, 0.0) and held.ids() == [2]
    assert HeldLeases(2.0).margin == pytest.approx(0.2)
    assert HeldLeases(None).proven(7, 1e12) is False  # not held
    unbounded = HeldLeases(None)
    unbounded.add([7], sent=0.0)
    assert unbounded.proven(7, 1e12)


def _job(job_id: int) -> ClaimedJob:
    return ClaimedJob(
        id=job_id,
        name="j",
        queue="default",
        args=[],
        kwargs={},
        attempt=1,
        max_attempts=3,
        timeout=None,
        schedule_key=None,
        slot=None,
    )


@dataclass(frozen=True)
class _Runnable:
    fn: Callable[..., Any]
    is_async: bool = False
    backoff: Backoff = field(default_factory=Backoff)


class _Rig:
    """Executors over a pipeline whose proofs the test controls."""

    def __init__(self, fn: Callable[..., Any], is_async: bool = False) -> None:
        self.pipeline = Pipeline(max_inflight=4, lease=LEASE)
        self.outcomes: OutcomeQueue = queue.SimpleQueue()
        self.threads = Threads()
        self.running = RunningJobs()
        runnable = _Runnable(fn, is_async)
        self.executors = Executors(
            worker_id="w",
            jobs={"j": runnable},
            resolve=lambda name: runnable,
            events=EventBus(),
            pipeline=self.pipeline,
            running=self.running,
            outcomes=self.outcomes,
            flags=Flags(),
            threads=self.threads,
        )

    def claim(self, job_id: int, age: float) -> ClaimedJob:
        """A job claimed by a statement sent `age` seconds ago, taken by an executor."""
        self.pipeline.add_claimed([_job(job_id)], sent=lease_clock() - age)
        taken = self.pipeline.take(threading.Event())
        assert isinstance(taken, ClaimedJob)
        return taken


def test_a_sync_job_whose_claim_lapsed_is_set_aside_not_run() -> None:
    ran: list[int] = []
    rig = _Rig(lambda: ran.append(1))
    rig.executors.run_one(rig.claim(1, age=LEASE))  # a lease old: another worker's by now
    assert ran == [] and rig.outcomes.empty()
    assert rig.pipeline.unproven_ids() == [1] and rig.pipeline.held_ids() == []
    assert rig.pipeline.taken() == 1  # counted until given back
    rig.executors.run_one(rig.claim(2, age=LEASE * 0.8))  # still inside its lease and margin
    assert ran == [1] and rig.outcomes.get_nowait()[0].id == 2
    rig.pipeline.given_back([1])
    assert rig.pipeline.unproven_ids() == [] and rig.pipeline.taken() == 0
    rig.executors.run_one(rig.claim(3, age=LEASE))
    assert rig.pipeline.take_unstarted() == [3]  # a shutdown gives it back first...
    rig.pipeline.given_back([3])  # ...and the keeper's give-back, done meanwhile, counts nothing
    assert rig.pipeline.taken() == 0


def test_jobs_given_back_stay_counted_until_the_give_back_is_written() -> None:
    """So that a worker holding nothing claims no job alone (a rescued one, maybe one it gives
    back) before its give-back statement ran: that statement would then give back the new
    claim."""
    pipeline = Pipeline(max_inflight=4, lease=LEASE)
    pipeline.add_claimed([_job(1), _job(2)])
    assert pipeline.take_stale(time.monotonic() + 1) == [1, 2]
    assert not pipeline.empty() and pipeline.held_ids() == []
    pipeline.released(2)
    assert pipeline.empty()


def test_an_async_job_whose_claim_lapsed_before_its_loop_began_it_is_set_aside() -> None:
    ran: list[int] = []
    release = threading.Event()

    async def job() -> None:
        ran.append(1)

    rig = _Rig(job, is_async=True)
    rig.executors.start_loop()
    loop = rig.executors.loop
    assert loop is not None
    loop.call_soon_threadsafe(lambda: release.wait(10))  # the loop is busy: nothing begins
    taken = rig.claim(1, age=0.0)
    rig.executors.run_one(taken)  # proven at submission
    rig.pipeline.held.add([1], sent=lease_clock() - LEASE)  # ...and no longer when it begins
    release.set()
    wait_for(lambda: rig.pipeline.unproven_ids() == [1], "the async job to be set aside", 10)
    wait_for(lambda: not rig.running.started_ids(), "its entry to be removed", 10)
    assert ran == [] and rig.outcomes.empty()
    rig.executors.stop_loop()


def _keeper(storage: Storage, pipeline: Pipeline) -> Keeper:
    return keeper(storage, worker_id="w1", lease=LEASE, pipeline=pipeline)


class _Timed:
    """The storage, noting when (lease_clock) its heartbeat was called and returned."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.called = self.returned = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.storage, name)

    def heartbeat(self, *args: Any, **kwargs: Any) -> Any:
        self.called = lease_clock()
        try:
            return self.storage.heartbeat(*args, **kwargs)
        finally:
            self.returned = lease_clock()


def test_a_heartbeat_proves_the_claims_it_renewed_from_when_it_was_sent(storage: Storage) -> None:
    mine, theirs = storage.enqueue([NewJob(name="j", args=[], kwargs={}) for _ in range(2)])
    pipeline = Pipeline(max_inflight=4, lease=LEASE)
    claimed = storage.claim_jobs("w1", "default", 1, LEASE)
    storage.claim_jobs("w2", "default", 1, LEASE)
    assert [c.id for c in claimed] == [mine]
    pipeline.add_claimed([*claimed, _job(theirs)], sent=lease_clock() - LEASE)  # both lapsed
    timed = _Timed(storage)
    before = lease_clock()
    _keeper(timed, pipeline).heartbeat()  # type: ignore[arg-type]
    margin = pipeline.held.margin
    assert pipeline.proven(mine, before + LEASE - margin - 1e-6)
    # From the moment it was sent at the latest, never from its answer.
    assert not pipeline.proven(mine, timed.called + LEASE - margin)
    assert not pipeline.proven(theirs, timed.returned)  # not renewed: w2's job


def test_the_keeper_gives_back_jobs_set_aside(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    ids = storage.enqueue([NewJob(name="j", args=[], kwargs={}) for _ in range(3)])
    pipeline = Pipeline(max_inflight=4, lease=LEASE)
    claimed = storage.claim_jobs("w1", "default", 3, LEASE)
    pipeline.add_claimed(claimed, sent=lease_clock() - LEASE)
    for _ in claimed:
        taken = pipeline.take(threading.Event())
        assert isinstance(taken, ClaimedJob)
        pipeline.set_aside(taken.id)
    # One of them was rescued and taken by another worker meanwhile.
    storage.release_jobs("w1", [ids[2]])
    assert [c.id for c in storage.claim_jobs("w2", "default", 1, LEASE)] == [ids[2]]
    with caplog.at_level(logging.WARNING, "onthedot.worker"):
        _keeper(storage, pipeline).give_back_unproven()
    assert pipeline.unproven_ids() == [] and pipeline.taken() == 0
    jobs = [storage.get_job(i) for i in ids]
    assert [(j.state, j.attempts) for j in jobs if j] == [
        (JobState.QUEUED, 0),
        (JobState.QUEUED, 0),
        (JobState.RUNNING, 1),
    ]
    assert jobs[2] is not None and jobs[2].worker_id == "w2"
    assert "did not start 3 claimed job(s)" in caplog.text and "2 given back" in caplog.text
