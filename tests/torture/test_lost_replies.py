"""Replies lost on the way back: the database committed a statement, the worker saw an error.

Found by the outage torture (a crash between a claim's commit and its reply left jobs
`running` under a live worker that did not know it had them; its heartbeat renewed their leases
forever). These pin the two rules that make such replies harmless, on both backends:
- a worker extends the leases of the jobs it knows it holds, and only those (`held`), so a job
  whose claim reply was lost expires and is rescued;
- an outcome is for one attempt: a late outcome of an earlier attempt never finishes a later
  one (the job was rescued and claimed again meanwhile, possibly by the same worker).
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

from onthedot import App, JobState
from onthedot.clock import ManualClock
from onthedot.domain.errors import DatabaseUnavailable
from onthedot.domain.jobs import ClaimedJob, Job, NewJob, Outcome, OutcomeKind
from onthedot.storage.interface import Storage
from tests.torture.harness import wait_for

T0 = ManualClock().now()


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _new(name: str = "lost") -> NewJob:
    return NewJob(name=name, args=[], kwargs={})


def _job(storage: Storage, job_id: int) -> Job:
    found = storage.get_job(job_id)
    assert found is not None
    return found


def test_only_the_leases_a_worker_holds_are_extended(app: App) -> None:
    storage = app.storage
    held, lost = storage.at(T0).enqueue([_new(), _new()])
    assert len(storage.at(T0).claim_jobs("w1", "default", 2, 10)) == 2
    # w1 got only `held` back: the reply naming `lost` never arrived.
    assert storage.at(at(8)).heartbeat("w1", 10, held=[held]).renewed == {held}
    assert [r.id for r in storage.at(at(12)).rescue_jobs()] == [lost]
    assert _job(storage, held).state is JobState.RUNNING
    assert _job(storage, lost).state is JobState.QUEUED
    assert storage.at(at(13)).heartbeat("w1", 10, held=[]).renewed == set()  # holds nothing
    assert [r.id for r in storage.at(at(19)).rescue_jobs()] == [held]


def test_an_outcome_of_an_earlier_attempt_finishes_nothing(app: App) -> None:
    storage = app.storage
    (job_id,) = storage.at(T0).enqueue([_new()])
    (first,) = storage.at(T0).claim_jobs("w1", "default", 1, 5)
    assert [r.id for r in storage.at(at(6)).rescue_jobs()] == [job_id]
    (second,) = storage.at(at(7)).claim_jobs("w1", "default", 1, 5)
    assert (first.attempt, second.attempt) == (1, 2)
    late = [
        Outcome(job_id, OutcomeKind.RETRY, error="E: late", retry_in=0, attempt=1),
        Outcome(job_id, OutcomeKind.SUCCEEDED, result=1, attempt=1),
        Outcome(job_id, OutcomeKind.SUCCEEDED, attempt=1),
    ]
    for outcome in late:
        assert storage.at(at(8)).finish_jobs("w1", [outcome]) == 0, outcome
        assert _job(storage, job_id).state is JobState.RUNNING
    assert storage.finish_jobs("w1", [Outcome(job_id, OutcomeKind.SUCCEEDED, attempt=2)]) == 1
    done = _job(storage, job_id)
    assert (done.state, done.attempts) == (JobState.SUCCEEDED, 2)


def test_a_worker_whose_claim_reply_is_lost_gets_the_jobs_back(app: App) -> None:
    """In a real worker: the first claim commits, then raises as if the connection dropped."""
    storage = app.storage
    real_claim = storage.claim_jobs
    lost: list[int] = []

    def claim_then_lose_the_reply(*args: Any, **kwargs: Any) -> list[ClaimedJob]:
        jobs = real_claim(*args, **kwargs)
        if jobs and not lost:
            lost.extend(j.id for j in jobs)
            raise DatabaseUnavailable("connection lost after the claim committed (injected)")
        return jobs

    storage.claim_jobs = claim_then_lose_the_reply  # type: ignore[method-assign]
    done: list[int] = []
    app.job(name="lost.ok")(lambda n: done.append(n))
    ids = [app.enqueue("lost.ok", n) for n in range(3)]
    worker = app.worker(concurrency=2, scheduler=False, install_signals=False, poll_interval=0.1)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: lost, "the first claim")
        wait_for(
            lambda: all(_job(storage, i).state is JobState.SUCCEEDED for i in ids),
            "the jobs of the lost claim to be rescued and run",
            30,
        )
    finally:
        worker.stop()
        thread.join(30)
    assert sorted(done) == [0, 1, 2]
    for job_id in lost:
        job = _job(storage, job_id)
        assert job.attempts == 2 and job.errors[0]["error"].startswith("WorkerLost"), job
