"""`app.operations`: the reads and operator actions the web admin, the CLI and the integrations
share, on each backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from onthedot import App, JobAction, JobFilter, JobState, ManualClock
from onthedot.domain.jobs import Job
from onthedot.testing import drain


def _register(app: App) -> None:
    @app.job(name="ok")
    def ok() -> None:
        return None

    @app.job(name="boom", max_attempts=1)
    def boom() -> None:
        raise RuntimeError("boom")


def test_act_on_all_changes_only_the_jobs_its_state_allows(app: App) -> None:
    _register(app)
    for _ in range(3):
        app.enqueue("boom")
    app.enqueue("ok")
    drain(app)
    ops = app.operations
    failed = JobFilter(state=JobState.FAILED)
    assert ops.count_jobs(failed) == 3
    assert ops.act_on_all(JobAction.RETRY, JobFilter()) == 3  # the succeeded one is left
    assert ops.count_jobs(failed) == 0
    assert ops.count_jobs(JobFilter(state=JobState.QUEUED)) == 3
    assert ops.act_on_all(JobAction.CANCEL, JobFilter(name="boom")) == 3
    assert ops.act_on_all(JobAction.DELETE, JobFilter(state=JobState.CANCELLED)) == 3
    assert [j.name for j in ops.list_jobs(JobFilter())] == ["ok"]


def test_act_on_one_job(app: App) -> None:
    _register(app)
    job_id = app.enqueue("ok")
    cancelled = app.operations.act(JobAction.CANCEL, job_id)
    assert isinstance(cancelled, Job) and cancelled.state is JobState.CANCELLED
    retried = app.operations.act(JobAction.RETRY, job_id)
    assert retried is not None and retried.state is JobState.QUEUED
    app.operations.act(JobAction.CANCEL, job_id)
    assert app.operations.act(JobAction.DELETE, job_id) is None
    assert app.operations.get_job(job_id) is None


def test_ready_now_skips_paused_queues_and_delayed_jobs(app: App) -> None:
    _register(app)
    ops = app.operations
    assert ops.ready_now(["default"]) is False  # nothing queued
    app.resolve("ok").enqueue_with([], delay=timedelta(hours=1))
    assert ops.ready_now(["default"]) is False  # queued, not yet due
    app.enqueue("ok")
    assert ops.ready_now(["default"]) is True
    ops.set_queue_paused("default", True, "ops")
    assert ops.ready_now(["default"]) is False
    ops.set_queue_paused("default", False, "ops")
    assert ops.ready_now(["other", "default"]) is True


def test_now_is_the_fixed_clock_else_the_database_clock(db_url: str) -> None:
    fixed = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    app = App(db_url, log_events=False, clock=ManualClock(fixed))
    try:
        app.migrate()
        assert app.operations.now() == fixed
    finally:
        app.close()
    app = App(db_url, log_events=False)
    try:
        before = datetime.now(UTC) - timedelta(minutes=5)  # the database's clock, not this one
        assert app.operations.now() > before
    finally:
        app.close()


def test_unknown_action_strings_are_refused() -> None:
    with pytest.raises(ValueError, match="'purge' is not a valid JobAction"):
        JobAction("purge")
