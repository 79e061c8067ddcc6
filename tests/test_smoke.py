"""The shortest path through the product: enqueue, run a worker, see the result."""

from __future__ import annotations

from onthedot import App, JobState


def test_enqueue_and_run(app: App) -> None:
    @app.job(name="add")
    def add(a: int, b: int) -> int:
        return a + b

    job_id = add.enqueue(2, 3)
    done = app.worker(burst=True, concurrency=2, install_signals=False).run()
    job = app.get_job(job_id)
    assert done == 1
    assert job is not None
    assert job.state is JobState.SUCCEEDED
    assert job.result == 5
    assert job.attempts == 1
