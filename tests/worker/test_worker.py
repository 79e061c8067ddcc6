"""The worker in-process, on both backends: running, results, retries, timeouts, crashes of job
code, unknown jobs, cancellation, job context, priorities, queues, burst and paused queues.

Each test runs a real worker in a thread (`install_signals=False`) against a real database and
waits on conditions with a deadline; nothing sleeps a fixed time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from onthedot import App, Backoff, Job, JobState, current_job
from onthedot.domain.jobs import NewJob
from onthedot.worker import Worker
from tests.waiting import get_job as get
from tests.waiting import wait_for

DEADLINE = 30.0
NO_WAIT = Backoff(base=0.0, jitter=0)


def wait_state(app: App, job_id: int, *states: JobState) -> Job:
    job = wait_for(
        lambda: (j := get(app, job_id)).state in states and j,
        f"job {job_id} to reach {'/'.join(states)}",
    )
    assert job
    return job


@contextmanager
def running(app: App, **options: Any) -> Iterator[Worker]:
    """A worker running in a thread; stopped gracefully (and joined) on exit."""
    options.setdefault("install_signals", False)
    options.setdefault("scheduler", False)
    options.setdefault("poll_interval", 0.2)
    worker: Worker = app.worker(**options)
    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, name="test-worker", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(DEADLINE)
    assert not thread.is_alive(), "worker did not stop"
    assert not errors, errors


def burst(app: App, **options: Any) -> Worker:
    options.setdefault("install_signals", False)
    worker: Worker = app.worker(burst=True, **options)
    worker.run()
    return worker


# -- running and results ------------------------------------------------------------------------
def test_sync_and_async_jobs_run_and_store_results(app: App) -> None:
    @app.job(name="double")
    def double(x: int) -> list[int]:
        return [x, x * 2]

    @app.job(name="adouble")
    async def adouble(x: int) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"x": x, "double": x * 2}

    @app.job(name="nothing")
    def nothing() -> None:
        return None

    @app.job(name="odd_result")
    def odd_result() -> object:
        return {1, 2}  # not JSON: stored as its repr, the job still succeeded

    ids = [double.enqueue(3), adouble.enqueue(4), nothing.enqueue(), odd_result.enqueue()]
    worker = burst(app, concurrency=2)
    jobs = [get(app, i) for i in ids]
    assert worker.processed == 4
    assert worker.stop_reason == "burst: queues empty"
    assert [j.state for j in jobs] == [JobState.SUCCEEDED] * 4
    assert [j.result for j in jobs[:3]] == [[3, 6], {"x": 4, "double": 8}, None]
    assert jobs[3].result["note"] == "result was not JSON"
    assert "{1, 2}" in jobs[3].result["repr"]
    assert all(j.attempts == 1 and j.error is None and j.finished_at for j in jobs)


def test_retries_with_backoff_then_fails_with_error_and_traceback(app: App) -> None:
    attempts: list[int] = []

    @app.job(name="flaky", max_attempts=3, backoff=Backoff(base=0.01, jitter=0))
    def flaky() -> None:
        attempts.append(current_job().attempt)
        raise ValueError(f"boom {len(attempts)}")

    job_id = flaky.enqueue()
    with running(app):
        job = wait_state(app, job_id, JobState.FAILED)
    assert attempts == [1, 2, 3]
    assert job.attempts == 3
    assert job.error == "ValueError: boom 3"
    assert job.traceback is not None
    assert "Traceback" in job.traceback and "in flaky" in job.traceback
    assert [e["attempt"] for e in job.errors] == [1, 2, 3]
    assert [e["error"] for e in job.errors] == [f"ValueError: boom {n}" for n in (1, 2, 3)]


def test_a_failed_attempt_waits_for_its_backoff(app: App) -> None:
    @app.job(name="fails_once", max_attempts=2, backoff=Backoff(base=3600, jitter=0))
    def fails_once() -> None:
        raise RuntimeError("try again in an hour")

    job_id = fails_once.enqueue()
    before = datetime.now(UTC)
    worker = burst(app)
    job = get(app, job_id)
    assert worker.processed == 1
    assert job.state is JobState.QUEUED
    assert job.attempts == 1
    assert job.error == "RuntimeError: try again in an hour"
    # base 3600 s, factor 2, no jitter: attempt 2 is due an hour after attempt 1 failed
    assert job.run_at - before > timedelta(seconds=3500)
    assert job.run_at - before < timedelta(seconds=3700)


# -- timeouts -------------------------------------------------------------------------------------
def test_sync_timeout_fails_the_attempt_and_keeps_concurrency(app: App) -> None:
    release = threading.Event()
    returned = threading.Event()
    barrier = threading.Barrier(2, timeout=DEADLINE)

    @app.job(name="overrun", timeout=0.3, max_attempts=2, backoff=NO_WAIT)
    def overrun() -> str:
        if current_job().attempt == 1:
            release.wait(DEADLINE)
            returned.set()
            return "late result"
        return "second attempt"

    @app.job(name="pair")
    def pair() -> int:
        return barrier.wait()  # both must run at the same time

    try:
        job_id = overrun.enqueue()
        with running(app, concurrency=2) as worker:
            job = wait_state(app, job_id, JobState.SUCCEEDED)
            assert not returned.is_set(), "attempt 1 is still blocked in its thread"
            # Two executor threads are still available beside the abandoned one.
            pairs = [pair.enqueue(), pair.enqueue()]
            for pid in pairs:
                wait_state(app, pid, JobState.SUCCEEDED)
            release.set()
            wait_for(returned.is_set, "the abandoned thread to return")
            later = pair.enqueue_many([[], []])
            for pid in later:
                wait_state(app, pid, JobState.SUCCEEDED)
            assert sorted(get(app, p).result for p in later) == [0, 1]
            assert worker.processed == 6  # outcomes persisted: the timeout counts
    finally:
        release.set()
    job = get(app, job_id)
    assert job.result == "second attempt", "the overrunning attempt's result is ignored"
    assert job.attempts == 2
    assert job.errors[0]["attempt"] == 1
    assert job.errors[0]["error"].startswith("JobTimeout: job ran past its timeout of 0.3s")


def test_sync_timeout_on_the_last_attempt_fails_the_job(app: App) -> None:
    release = threading.Event()
    returned = threading.Event()

    @app.job(name="stuck", timeout=0.2, max_attempts=1)
    def stuck() -> str:
        release.wait(DEADLINE)
        returned.set()
        return "too late"

    @app.job(name="quick")
    def quick() -> str:
        return "done"

    try:
        job_id = stuck.enqueue()
        with running(app, concurrency=1):
            job = wait_state(app, job_id, JobState.FAILED)
            assert job.error is not None and job.error.startswith("JobTimeout:")
            quick_id = quick.enqueue()  # concurrency 1: runs on the replacement thread
            assert wait_state(app, quick_id, JobState.SUCCEEDED).result == "done"
            release.set()
            wait_for(returned.is_set, "the abandoned thread to return")
    finally:
        release.set()
    job = get(app, job_id)
    assert job.state is JobState.FAILED
    assert job.result is None
    assert job.attempts == 1


def test_a_retried_attempt_keeps_its_own_timeout_after_the_old_thread_returns(app: App) -> None:
    """Attempt 1 overruns and is abandoned; attempt 2 runs on the same worker and overruns too.
    The abandoned thread returning meanwhile must not forget attempt 2 (same job id)."""
    first = threading.Event()
    second = threading.Event()
    first_returned = threading.Event()

    @app.job(name="twice_stuck", timeout=1.0, max_attempts=2, backoff=NO_WAIT)
    def twice_stuck() -> str:
        if current_job().attempt == 1:
            first.wait(DEADLINE)
            first_returned.set()
            return "first"
        first.set()  # let the abandoned attempt-1 thread return now, while we run
        second.wait(DEADLINE)
        return "second"

    try:
        job_id = twice_stuck.enqueue()
        with running(app, concurrency=2):
            job = wait_state(app, job_id, JobState.FAILED)
            assert first_returned.is_set()
    finally:
        first.set()
        second.set()
    assert job.attempts == 2
    assert [e["error"].split(":")[0] for e in job.errors] == ["JobTimeout", "JobTimeout"]


def test_async_timeout(app: App) -> None:
    @app.job(name="asleep", timeout=0.2, max_attempts=1)
    async def asleep() -> str:
        await asyncio.sleep(DEADLINE)
        return "woke"

    @app.job(name="after")
    async def after() -> str:
        return "ok"

    job_id = asleep.enqueue()
    with running(app, concurrency=1):
        job = wait_state(app, job_id, JobState.FAILED)
        assert wait_state(app, after.enqueue(), JobState.SUCCEEDED).result == "ok"
    assert job.error is not None and job.error.startswith("JobTimeout:")
    assert job.result is None


# -- job code that misbehaves ---------------------------------------------------------------------
class Fatal(BaseException):
    pass


def test_system_exit_and_base_exceptions_do_not_kill_the_worker(app: App) -> None:
    @app.job(name="exits", max_attempts=1)
    def exits() -> None:
        raise SystemExit(3)

    @app.job(name="fatal", max_attempts=1)
    def fatal() -> None:
        raise Fatal("not an Exception")

    @app.job(name="aexits", max_attempts=1)
    async def aexits() -> None:
        raise SystemExit("async exit")

    @app.job(name="fine")
    def fine() -> str:
        return "still here"

    ids = [exits.enqueue(), fatal.enqueue(), aexits.enqueue()]
    with running(app, concurrency=1) as worker:
        jobs = [wait_state(app, i, JobState.FAILED) for i in ids]
        assert wait_state(app, fine.enqueue(), JobState.SUCCEEDED).result == "still here"
        assert worker.processed == 4
    assert [j.error for j in jobs] == [
        "SystemExit: 3",
        "Fatal: not an Exception",
        "SystemExit: async exit",
    ]


def test_unknown_job_name_waits_queued_for_a_worker_that_knows_it(app: App) -> None:
    # Issue 12 item 2 (a rolling deploy): a worker claims only the job names it knows, so a
    # job of another name keeps its attempts for a worker that has it. (Before, it was claimed,
    # retried and failed with JobNotRegistered after its attempts.)
    @app.job(name="known")
    def known() -> str:
        return "known"

    [ghost] = app.storage.enqueue([NewJob(name="ghost.job", args=[], kwargs={}, max_attempts=2)])
    with running(app) as worker:
        assert wait_state(app, known.enqueue(), JobState.SUCCEEDED).result == "known"
        assert worker.processed == 1
        assert [u.message() for u in app.unserved_jobs()] == [
            "1 job of `ghost.job` waits and no live worker knows it"
        ]
    job = app.get_job(ghost)
    assert (job.state, job.attempts, job.error) == (JobState.QUEUED, 0, None)

    @app.job(name="ghost.job")
    def ghost_job() -> str:
        return "known now"

    with running(app):
        assert wait_state(app, ghost, JobState.SUCCEEDED).attempts == 1


# -- cancellation ---------------------------------------------------------------------------------
def test_a_cancelled_queued_job_never_runs(app: App) -> None:
    ran: list[int] = []

    @app.job(name="never")
    def never() -> None:
        ran.append(1)

    job_id = never.enqueue()
    assert app.cancel_job(job_id).state is JobState.CANCELLED
    worker = burst(app)
    assert worker.processed == 0
    assert ran == []
    assert get(app, job_id).state is JobState.CANCELLED


def test_a_running_sync_job_sees_cancel_requested(app: App) -> None:
    started = threading.Event()
    seen: list[bool] = []

    @app.job(name="cooperative")
    def cooperative() -> str:
        ctx = current_job()
        seen.append(ctx.cancel_requested)
        started.set()
        end = time.monotonic() + DEADLINE
        while not ctx.cancel_requested and time.monotonic() < end:
            time.sleep(0.01)
        seen.append(ctx.cancel_requested)
        return "stopped early"

    job_id = cooperative.enqueue()
    with running(app):
        wait_for(started.is_set, "the job to start")
        requested = app.cancel_job(job_id)
        assert requested.state is JobState.RUNNING and requested.cancel_requested
        job = wait_state(app, job_id, JobState.SUCCEEDED)
    assert seen == [False, True]
    assert job.result == "stopped early"  # a sync job ends on its own terms
    assert not job.cancel_requested


def test_a_running_async_job_is_cancelled(app: App) -> None:
    started = threading.Event()
    interrupted = threading.Event()

    @app.job(name="long_async")
    async def long_async() -> str:
        started.set()
        try:
            await asyncio.sleep(DEADLINE)
        except asyncio.CancelledError:
            interrupted.set()
            raise
        return "finished"

    job_id = long_async.enqueue()
    with running(app) as worker:
        wait_for(started.is_set, "the job to start")
        app.cancel_job(job_id)
        job = wait_state(app, job_id, JobState.CANCELLED)
        wait_for(interrupted.is_set, "the coroutine to see CancelledError")
        # The completer counts an outcome just after committing it: a reader can see the
        # cancelled state a moment before the count.
        wait_for(lambda: worker.processed == 1, "the outcome to be counted")
    assert job.error == "cancelled on request"
    assert job.result is None
    assert job.finished_at is not None


# -- context, priorities, queues ------------------------------------------------------------------
def test_job_context(app: App) -> None:
    @app.job(name="whoami", queue="ctx")
    def whoami() -> dict[str, Any]:
        ctx = current_job()
        return {
            "id": ctx.job_id,
            "name": ctx.name,
            "attempt": ctx.attempt,
            "max_attempts": ctx.max_attempts,
            "queue": ctx.queue,
            "schedule_key": ctx.schedule_key,
            "slot": ctx.slot,
            "worker": ctx.worker_id,
        }

    @app.job(name="awhoami")
    async def awhoami() -> list[Any]:
        ctx = current_job()
        return [ctx.job_id, ctx.attempt, ctx.queue]

    with pytest.raises(RuntimeError, match="outside a running onthedot job"):
        current_job()
    sync_id = whoami.enqueue(max_attempts=4)
    async_id = awhoami.enqueue(queue="other")
    worker = burst(app, queues=["ctx", "other"])
    assert get(app, sync_id).result == {
        "id": sync_id,
        "name": "whoami",
        "attempt": 1,
        "max_attempts": 4,
        "queue": "ctx",
        "schedule_key": None,
        "slot": None,
        "worker": worker.id,
    }
    assert get(app, async_id).result == [async_id, 1, "other"]


def test_priorities_then_fifo(app: App) -> None:
    order: list[str] = []

    @app.job(name="note")
    def note(tag: str) -> None:
        order.append(tag)

    for tag, priority in [("low", -5), ("mid-1", 0), ("high", 10), ("mid-2", 0), ("top", 99)]:
        note.enqueue(tag, priority=priority)
    burst(app, concurrency=1)
    assert order == ["top", "high", "mid-1", "mid-2", "low"]


def test_several_queues_claimed_in_the_order_given(app: App) -> None:
    order: list[str] = []

    @app.job(name="tagged")
    def tagged(tag: str) -> None:
        order.append(tag)

    tagged.enqueue("b1", queue="b")
    tagged.enqueue("a1", queue="a")
    other = tagged.enqueue("c1", queue="c")
    tagged.enqueue("b2", queue="b")
    tagged.enqueue("a2", queue="a")
    worker = burst(app, queues=["a", "b"], concurrency=1, prefetch=0)
    assert order == ["a1", "a2", "b1", "b2"]
    assert worker.processed == 4
    assert get(app, other).state is JobState.QUEUED


def test_burst_exits_when_nothing_is_ready(app: App) -> None:
    @app.job(name="noop")
    def noop() -> None:
        return None

    now_ids = noop.enqueue_many([[], [], []])
    later = noop.enqueue(delay="1h")
    worker = burst(app, concurrency=2)
    assert worker.stop_reason == "burst: queues empty"
    assert worker.processed == 3
    assert {get(app, i).state for i in now_ids} == {JobState.SUCCEEDED}
    assert get(app, later).state is JobState.QUEUED
    assert burst(app).processed == 0  # an empty queue: returns at once


def test_a_paused_queue_is_not_claimed(app: App) -> None:
    @app.job(name="p")
    def p() -> None:
        return None

    app.storage.set_queue_paused("held", True, "test")
    held = p.enqueue(queue="held")
    free = p.enqueue()
    worker = burst(app, queues=["held", "default"])
    assert worker.processed == 1
    assert get(app, held).state is JobState.QUEUED
    assert get(app, free).state is JobState.SUCCEEDED
    app.storage.set_queue_paused("held", False, "test")
    assert burst(app, queues=["held"]).processed == 1
    assert get(app, held).state is JobState.SUCCEEDED


def test_jobs_enqueued_while_running_wake_the_worker(app: App) -> None:
    @app.job(name="echo")
    def echo(x: int) -> int:
        return x

    with running(app, poll_interval=30.0):
        ids = [echo.enqueue(i) for i in range(5)]
        results = [wait_state(app, i, JobState.SUCCEEDED).result for i in ids]
    assert results == [0, 1, 2, 3, 4]


def test_jobs_enqueued_elsewhere_wake_the_worker(app: App, db_url: str) -> None:
    """No in-process shortcut: LISTEN/NOTIFY (PostgreSQL) or the data_version watch (SQLite)
    wakes a worker whose poll interval is far longer than the wait."""

    @app.job(name="woken")
    def woken(x: int) -> int:
        return x

    other = App(db_url, log_events=False)
    other.job(name="woken")(lambda x: x)
    try:
        with running(app, poll_interval=600.0):
            for i in range(3):  # one at a time, so the worker is idle when each arrives
                job_id = other.jobs["woken"].enqueue(i)
                assert wait_state(app, job_id, JobState.SUCCEEDED).result == i
    finally:
        other.close()


def test_sync_jobs_run_in_parallel_up_to_concurrency(app: App) -> None:
    barrier = threading.Barrier(3, timeout=DEADLINE)

    @app.job(name="together")
    def together() -> int:
        return barrier.wait()  # breaks (and fails the job) unless three run at once

    ids = together.enqueue_many([[], [], []])
    with running(app, concurrency=3):
        jobs = [wait_state(app, i, JobState.SUCCEEDED, JobState.FAILED) for i in ids]
    assert [j.error for j in jobs] == [None, None, None]
    assert sorted(j.result for j in jobs) == [0, 1, 2]


def test_enqueue_options_override_the_job_defaults(app: App) -> None:
    @app.job(name="configured", queue="q1", priority=1, max_attempts=2, timeout="1m")
    def configured() -> None:
        return None

    plain = get(app, configured.enqueue())
    assert (plain.queue, plain.priority, plain.max_attempts, plain.timeout) == ("q1", 1, 2, 60.0)
    custom = get(app, configured.enqueue(queue="q2", priority=-3, max_attempts=7, timeout="1h30m"))
    assert (custom.queue, custom.priority, custom.max_attempts) == ("q2", -3, 7)
    assert custom.timeout == 5400.0
    assert get(app, configured.enqueue(timeout=2.5)).timeout == 2.5
    with pytest.raises(ValueError, match="invalid timeout"):
        configured.enqueue(timeout=0)
