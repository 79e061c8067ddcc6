"""The keeper's rescue turn (issue 24 item 8), on both databases: a rescuer whose clock says
every lease ended long ago (a clock stepped 90 s past them) still rescues a job only once it has
itself seen the job's lease unrenewed for a whole lease of its own monotonic clock; a renewal
in between starts the watch again. Under a test's manual clock the watch runs on that clock,
which moves only when the test moves it. The real processes:
tests/torture/test_clock_step.py."""

from __future__ import annotations

import math
import time
from datetime import timedelta

import pytest

from onthedot import JobState, ManualClock
from onthedot.clock import Clock
from onthedot.domain.jobs import NewJob
from onthedot.observability.events import EventBus, JobRescued
from onthedot.storage.interface import Storage
from onthedot.worker.maintenance import Keeper
from tests.waiting import wait_for
from tests.worker.keepers import keeper

T0 = ManualClock().now()
LEASE = 0.3  # the rescuer's lease, in seconds of its monotonic clock


def _rescuer(storage: Storage, events: EventBus, clock: Clock | None = None) -> Keeper:
    return keeper(storage, worker_id="w2", lease=LEASE, events=events, clock=clock)


def test_a_stepped_rescuer_waits_a_lease_of_its_own_clock(storage: Storage) -> None:
    (job_id,) = storage.at(T0).enqueue([NewJob(name="j", args=[], kwargs={})])
    storage.at(T0).claim_jobs("w1", "default", 1, 10)  # w1's lease: until T0+10
    events = EventBus()
    rescued: list[int] = []
    events.subscribe(lambda e: rescued.append(e.job_id) if isinstance(e, JobRescued) else None)
    rescuer = _rescuer(storage.at(T0 + timedelta(seconds=100)), events)

    def look() -> float:
        """One rescue turn; the earliest monotonic instant the watched lease can be due."""
        before = time.monotonic()
        return before + rescuer.rescue()

    due = look()  # seen ended (by 90 s on the rescuer's clock): watched, not rescued
    assert rescued == [] and due != math.inf
    assert look() <= due + 0.1 and rescued == []  # seen again at once: still watched
    storage.at(T0 + timedelta(seconds=5)).heartbeat("w1", 10)  # w1 lives: until T0+15
    wait_for(lambda: time.monotonic() >= due + 0.05, "a lease of the rescuer's clock", 10)
    renewed_due = look()
    assert rescued == [] and renewed_due > due + 0.05  # the renewal started the watch again
    running = storage.get_job(job_id)
    assert running is not None and running.state is JobState.RUNNING

    wait_for(lambda: rescuer.rescue() and rescued, "the unrenewed lease to be rescued", 10)
    assert time.monotonic() >= renewed_due  # not one turn sooner
    assert rescued == [job_id]
    job = storage.get_job(job_id)
    assert job is not None and job.state is JobState.QUEUED and job.error
    assert job.error.startswith("WorkerLost")
    assert rescuer.rescue() == math.inf  # nothing left to watch


def test_under_a_manual_clock_the_watch_runs_on_that_clock(storage: Storage) -> None:
    (job_id,) = storage.at(T0).enqueue([NewJob(name="j", args=[], kwargs={})])
    storage.at(T0).claim_jobs("w1", "default", 1, 10)  # until T0+10
    clock = ManualClock(T0 + timedelta(seconds=11))
    rescuer = _rescuer(storage.at(T0 + timedelta(seconds=11)), EventBus(), clock)
    assert rescuer.rescue() == pytest.approx(LEASE) and rescuer.rescued == 0  # watched
    # Time passes only when the test moves the clock: not one turn rescues it until then.
    assert rescuer.rescue() == pytest.approx(LEASE) and rescuer.rescued == 0
    clock.advance(LEASE / 2)
    assert rescuer.rescue() == pytest.approx(LEASE / 2) and rescuer.rescued == 0
    clock.advance(LEASE)
    assert rescuer.rescue() == math.inf and rescuer.rescued == 1
    job = storage.get_job(job_id)
    assert job is not None and job.state is JobState.QUEUED
