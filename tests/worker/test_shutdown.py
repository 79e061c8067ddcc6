"""Graceful and hard shutdown of an in-process worker, on both backends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from onthedot import App, JobState, current_job
from onthedot.observability.events import JobStarted, WorkerStopped
from onthedot.worker import Worker
from tests.waiting import get_job as get
from tests.waiting import wait_for

DEADLINE = 30.0


class Runner:
    """A worker's run() in a thread."""

    def __init__(self, app: App, **options: Any) -> None:
        options.setdefault("install_signals", False)
        options.setdefault("scheduler", False)
        self.worker: Worker = app.worker(**options)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="test-worker", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.worker.run()
        except BaseException as exc:
            self.errors.append(exc)

    def join(self) -> None:
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), "worker did not stop"
        assert not self.errors, self.errors


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """An event jobs block on; always opened at the end so no thread stays blocked."""
    event = threading.Event()
    yield event
    event.set()


def test_stop_lets_running_jobs_finish(app: App, gate: threading.Event) -> None:
    started = threading.Event()

    @app.job(name="slow")
    def slow() -> str:
        started.set()
        gate.wait(DEADLINE)
        return "finished"

    job_id = slow.enqueue()
    runner = Runner(app, grace=DEADLINE)
    wait_for(started.is_set, "the job to start")
    runner.worker.stop()
    late = slow.enqueue()  # enqueued after stop(): this worker must not take it
    assert runner.thread.is_alive(), "a graceful stop waits for the running job"
    gate.set()
    runner.join()
    job = get(app, job_id)
    assert job.state is JobState.SUCCEEDED
    assert job.result == "finished"
    assert runner.worker.processed == 1
    assert runner.worker.stop_reason == "stop requested"
    assert get(app, late).state is JobState.QUEUED
    assert get(app, late).attempts == 0
    assert app.storage.list_workers() == [], "the worker deregistered"


def test_prefetched_jobs_are_given_back_without_using_an_attempt(
    app: App, gate: threading.Event
) -> None:
    started = threading.Event()
    ran: list[int] = []

    @app.job(name="blocker")
    def blocker() -> str:
        started.set()
        gate.wait(DEADLINE)
        return "done"

    @app.job(name="waiting")
    def waiting() -> None:
        ran.append(current_job().job_id)

    first = blocker.enqueue(priority=10)
    rest = waiting.enqueue_many([[] for _ in range(5)])
    runner = Runner(app, concurrency=1, prefetch=5)
    wait_for(started.is_set, "the blocker to start")
    # Claimed by this worker (state running, one attempt counted) but not started.
    wait_for(
        lambda: all(get(app, i).state is JobState.RUNNING for i in rest),
        "the prefetch buffer to fill",
    )
    assert {get(app, i).attempts for i in rest} == {1}
    runner.worker.stop()
    wait_for(
        lambda: all(get(app, i).state is JobState.QUEUED for i in rest),
        "the unstarted jobs to be given back",
    )
    gate.set()
    runner.join()
    assert ran == []
    assert get(app, first).state is JobState.SUCCEEDED
    for job in (get(app, i) for i in rest):
        assert job.state is JobState.QUEUED
        assert job.attempts == 0
        assert job.worker_id is None
        assert job.errors == []
    # The next worker runs them as first attempts.
    after = app.worker(burst=True, install_signals=False)
    assert after.run() == 5
    assert sorted(ran) == sorted(rest)
    assert {get(app, i).attempts for i in rest} == {1}


def test_hard_stop_returns_at_once_and_the_job_is_rescued_later(
    db_url: str, gate: threading.Event
) -> None:
    app = App(db_url, log_events=False, lease=1.0)
    app.migrate()
    started = threading.Event()
    try:

        @app.job(name="stubborn", max_attempts=3)
        def stubborn() -> str:
            if current_job().attempt == 1:
                started.set()
                gate.wait(DEADLINE * 2)
                return "attempt 1 returned"
            return "rescued"

        job_id = stubborn.enqueue()
        first = Runner(app, grace=3600)
        wait_for(started.is_set, "the job to start")
        first.worker.stop(graceful=False)
        first.join()  # well before the hour of grace
        job = get(app, job_id)
        assert job.state is JobState.RUNNING, "nobody finished it"
        assert first.worker.stop_reason == "stop requested"

        # Another worker rescues it once the lease (1 s) runs out, and runs attempt 2.
        second = Runner(app)
        rescued = wait_for(
            lambda: (j := get(app, job_id)).state is JobState.SUCCEEDED and j,
            "the job to be rescued and run again",
        )
        assert rescued
        job = rescued
        second.worker.stop()
        second.join()
        assert job.result == "rescued"
        assert job.attempts == 2
        assert job.errors[0]["attempt"] == 1
        assert job.errors[0]["error"].startswith("WorkerLost:")
        assert job.errors[0]["worker_id"] == first.worker.id
        assert job.worker_id == second.worker.id
    finally:
        gate.set()
        app.close()


def test_a_second_stop_request_stops_at_once(app: App, gate: threading.Event) -> None:
    started = threading.Event()

    @app.job(name="forever")
    def forever() -> None:
        started.set()
        gate.wait(DEADLINE * 2)

    job_id = forever.enqueue()
    runner = Runner(app, grace=3600)
    wait_for(started.is_set, "the job to start")
    runner.worker.stop()
    runner.worker.stop(graceful=False)
    runner.join()
    assert get(app, job_id).state is JobState.RUNNING  # left for rescue


def test_stop_after_stops_gracefully(app: App) -> None:
    @app.job(name="tick")
    def tick() -> None:
        return None

    ids = tick.enqueue_many([[] for _ in range(3)])
    worker = app.worker(stop_after=0.5, install_signals=False, scheduler=False)
    worker.run()
    assert worker.stop_reason == "stop_after elapsed"
    assert {get(app, i).state for i in ids} == {JobState.SUCCEEDED}


def test_a_job_taken_by_an_executor_as_stop_begins_is_still_finished(app: App) -> None:
    """JobStarted is emitted as an executor thread takes a job from the buffer. A stop arriving
    at that moment must still wait for the job and persist its outcome."""
    stopped = threading.Event()
    app.events.subscribe(lambda event: stopped.set(), WorkerStopped)
    worker: Worker = app.worker(install_signals=False, scheduler=False, grace=DEADLINE)

    def on_start(event: JobStarted) -> None:
        worker.stop()
        # A correct worker waits for this job, so WorkerStopped cannot come first: the wait
        # runs out. A worker that forgot the job stops meanwhile and loses its outcome.
        stopped.wait(2.0)

    app.events.subscribe(on_start, JobStarted)

    @app.job(name="just_taken")
    def just_taken() -> str:
        return "done"

    job_id = just_taken.enqueue()
    worker.run()
    job = get(app, job_id)
    assert job.state is JobState.SUCCEEDED, job
    assert job.result == "done"
    assert worker.processed == 1


def test_closing_the_app_right_after_run_returns_is_safe(db_url: str) -> None:
    """run() returns only once its threads are done with storage: closing the app at once must
    not break a heartbeat midway (pytest reports any exception in a thread)."""
    for _ in range(10):
        app = App(db_url, log_events=False, lease=0.3)
        app.migrate()
        worker = app.worker(burst=True, install_signals=False)
        assert worker.run() == 0
        app.close()
        storage_threads = ("onthedot-keeper", "onthedot-completer", "onthedot-scheduler")
        alive = [t.name for t in worker._threads if t.is_alive() and t.name in storage_threads]
        assert alive == []
