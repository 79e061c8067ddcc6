"""Schedules obey limits (docs/limits.md): a slot's job sits under its job's limits, computed
from the schedule's arguments, on both tick writers; the overlap policy still applies beside
the limit."""

from __future__ import annotations

from datetime import timedelta

from onthedot import JobState
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.testing import drain, tick
from tests.scheduler.helpers import MakeApp, clock_of, utc

T0 = utc(2030, 1, 1)


def test_a_slots_job_sits_under_its_jobs_limits(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.limit("reports", concurrency=2)

    @app.job(name="build", concurrency=1, key="tenant", limits=["reports"])
    def build(tenant: int) -> None: ...

    app.schedule("nightly-7", "every 10s", build, args=[7])
    tick(app)
    (fired,) = tick(app, T0 + timedelta(seconds=10))
    assert fired.job_id is not None
    limits = app.storage.job_limits(fired.job_id)
    assert limits is not None and limits[4] == ["build|tenant=7", "reports|"]
    assert drain(app) == 1
    job = app.get_job(fired.job_id)
    assert job is not None and job.state is JobState.SUCCEEDED


def test_serialize_holds_beside_a_limit(make_app: MakeApp) -> None:
    app = make_app(T0)

    @app.job(name="sync", concurrency=5)
    def sync() -> None: ...

    app.schedule("k", "every 10s", sync, overlap="serialize")
    app.limits.sync()
    tick(app)
    first = tick(app, T0 + timedelta(seconds=10))[0].job_id
    second = tick(app, T0 + timedelta(seconds=20))[0].job_id
    s = app.storage.at(clock_of(app).now())
    assert [c.id for c in s.claim_limited("w", "default", 10, 30)] == [first]
    assert s.claim_limited("w", "default", 10, 30) == []  # the limit has room; serialize waits
    assert first is not None and second is not None
    s.finish_jobs("w", [Outcome(job_id=first, kind=OutcomeKind.SUCCEEDED)])
    assert [c.id for c in s.claim_limited("w", "default", 10, 30)] == [second]
