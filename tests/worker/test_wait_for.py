"""Reading a job's result: `app.get_job`, and waiting for it with `app.wait_for` (sync) and
`app.await_job` (async), on both databases: the finished Job is returned; a job that does not
finish in time raises TimeoutError; an unknown id raises JobNotFound."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from onthedot import App, JobState
from onthedot.domain.errors import JobNotFound


@pytest.fixture
def served(db_url: str) -> Iterator[App]:
    """A migrated app with a worker running on queue `default` (never on `idle`)."""
    app = App(db_url, log_events=False, lease=2.0)

    @app.job(name="double")
    def double(n: int) -> int:
        return 2 * n

    @app.job(name="broken", max_attempts=1)
    def broken() -> None:
        raise ValueError("no")

    @app.job(name="parked", queue="idle")
    def parked() -> None: ...

    app.migrate()
    worker = app.worker(queues=["default"], concurrency=2, scheduler=False)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    yield app
    worker.stop()
    thread.join(timeout=30)
    app.close()


def test_wait_for_returns_the_finished_job(served: App) -> None:
    job_id = served.enqueue("double", 21)
    job = served.wait_for(job_id, timeout="30s")
    assert job.state is JobState.SUCCEEDED and job.result == 42
    failed = served.wait_for(served.enqueue("broken"), timeout=30)
    assert failed.state is JobState.FAILED and "ValueError: no" in (failed.error or "")
    again = served.get_job(job_id)
    assert again is not None and again.result == 42


def test_wait_for_raises_on_timeout_and_unknown_ids(served: App) -> None:
    job_id = served.enqueue("parked")
    with pytest.raises(TimeoutError, match=f"job {job_id} is still queued after 0.2s"):
        served.wait_for(job_id, timeout=0.2)
    with pytest.raises(JobNotFound, match="no job with id 999999"):
        served.wait_for(999999, timeout=1)
    assert served.get_job(999999) is None


def test_await_job_is_the_async_twin(served: App) -> None:
    async def scenario() -> None:
        job_id = await served.jobs["double"].aenqueue(4)
        job = await served.await_job(job_id, timeout=30)
        assert job.state is JobState.SUCCEEDED and job.result == 8
        parked = served.enqueue("parked")
        with pytest.raises(TimeoutError):
            await served.await_job(parked, timeout=0.1)

    asyncio.run(scenario())
