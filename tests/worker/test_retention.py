"""Retention per final state and per job (issue 29, item 2): `App(retention={...})`, the jobs'
`keep=`, what `app.prune()` and the worker's keeper delete (and keep: a job is readable until
its retention ends), `prune(dry_run=True)`, and bad values as one line. SQLite and
PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from onthedot import App, ManualClock
from onthedot.domain.durations import SpecError
from onthedot.domain.jobs import NewJob, Outcome, OutcomeKind
from onthedot.domain.retention import Retention
from tests.worker.keepers import keeper as make_keeper

T0 = ManualClock().now()
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
POLICY = {"succeeded": "1d", "failed": "30d", "cancelled": "7d"}
KIND = {
    "succeeded": OutcomeKind.SUCCEEDED,
    "failed": OutcomeKind.FAILED,
    "cancelled": OutcomeKind.CANCELLED,
}


@pytest.fixture
def policy_app(db_url: str) -> Iterator[App]:
    application = App(db_url, log_events=False, retention=POLICY)

    @application.job(name="chatty", keep="1h")
    def chatty() -> None: ...

    @application.job(name="audit", keep={"succeeded": "60d"})
    def audit() -> None: ...

    @application.job(name="plain")
    def plain() -> None: ...

    application.migrate()
    yield application
    application.close()


def finished(app: App, name: str, state: str, ago: timedelta, now: object) -> int:
    """A job of `name` finished in `state` at `now - ago`."""
    assert isinstance(now, type(T0))
    then = app.storage.at(now - ago)
    [job_id] = then.enqueue([NewJob(name=name, args=[], kwargs={}, queue=name)])
    [c] = then.claim_jobs("w", name, 1, 30)
    kind = KIND[state]
    outcome = Outcome(c.id, kind, attempt=1, error="boom" if state == "failed" else None)
    assert then.finish_jobs("w", [outcome]) == 1
    job = app.get_job(job_id)
    assert job is not None and job.state.value == state
    return job_id


# (job, state, finished this long ago, still kept?)
CASES = [
    ("plain", "succeeded", 23 * HOUR, True),
    ("plain", "succeeded", 25 * HOUR, False),
    ("plain", "failed", 29 * DAY, True),
    ("plain", "failed", 31 * DAY, False),
    ("plain", "cancelled", 6 * DAY, True),
    ("plain", "cancelled", 8 * DAY, False),
    ("chatty", "succeeded", 50 * timedelta(minutes=1), True),
    ("chatty", "succeeded", 70 * timedelta(minutes=1), False),
    ("chatty", "failed", 70 * timedelta(minutes=1), False),  # keep="1h": every state
    ("audit", "succeeded", 59 * DAY, True),
    ("audit", "succeeded", 61 * DAY, False),
    ("audit", "failed", 29 * DAY, True),  # keep names succeeded only: failed keeps the app's
    ("audit", "failed", 31 * DAY, False),
    ("gone", "succeeded", 25 * HOUR, False),  # a job no longer in code: the app's retention
]


def _load(app: App) -> dict[int, tuple[str, str, bool]]:
    now = T0 + timedelta(days=100)
    return {
        finished(app, name, state, ago, now): (name, state, kept)
        for name, state, ago, kept in CASES
    }


def test_app_prune_keeps_each_job_until_its_retention_ends(policy_app: App) -> None:
    jobs = _load(policy_app)
    policy_app.clock = ManualClock(T0 + timedelta(days=100))
    gone = {(n, s) for n, s, kept in jobs.values() if not kept}
    preview = policy_app.prune(dry_run=True)
    assert {(p.name, p.state) for p in preview} == gone
    assert sum(p.count for p in preview) == len(CASES) - sum(k for *_, k in jobs.values())
    assert all(policy_app.get_job(i) is not None for i in jobs)  # a dry run deletes nothing
    done = policy_app.prune(step=1)
    assert {(p.name, p.state, p.count) for p in done} == {
        (p.name, p.state, p.count) for p in preview
    }
    for job_id, (name, state, kept) in jobs.items():
        assert (policy_app.get_job(job_id) is not None) is kept, (name, state)
    assert policy_app.prune(dry_run=True) == []


def test_the_workers_keeper_prunes_by_the_same_policy(policy_app: App) -> None:
    jobs = _load(policy_app)
    keeper = make_keeper(
        policy_app.storage,
        worker_id="w1",
        lease=30.0,
        clock=ManualClock(T0 + timedelta(days=100)),
        retention=policy_app.retention_policy(),
        prune_step=1,
    )
    turns = 1
    while keeper.prune():  # one row per turn, then back to the heartbeat
        turns += 1
    assert turns >= sum(not k for *_, k in jobs.values())
    for job_id, (name, state, kept) in jobs.items():
        assert (policy_app.get_job(job_id) is not None) is kept, (name, state)


def test_a_plain_retention_still_means_every_state(db_url: str) -> None:
    app = App(db_url, log_events=False, retention="2d")
    try:
        assert app.retention == timedelta(days=2)
        policy = app.retention_policy()
        assert dict(policy.states) == dict.fromkeys(("succeeded", "failed", "cancelled"), 2 * DAY)
    finally:
        app.close()


def test_a_state_left_out_keeps_the_default_and_retention_is_the_longest() -> None:
    policy = Retention.parse({"failed": "30d"})
    assert policy.keep("x", "succeeded") == timedelta(days=7)
    assert policy.longest() == timedelta(days=30)
    assert policy.with_jobs({"x": {"succeeded": timedelta(days=90)}}).longest() == 90 * DAY


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"succeded": "1d"}, "invalid retention: unknown state 'succeded' (use succeeded, failed"),
        ({"failed": "soon"}, "invalid retention['failed'] 'soon'"),
        ({}, "invalid retention: empty mapping"),
        ("-1d", "invalid retention '-1d'"),
        ({"queued": "1d"}, "unknown state 'queued'"),
    ],
)
def test_bad_retention_is_one_line(value: object, message: str) -> None:
    with pytest.raises(SpecError) as err:
        App("sqlite:///:memory:", retention=value)  # type: ignore[arg-type]
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_keep_is_one_line() -> None:
    app = App("sqlite:///:memory:")
    with pytest.raises(SpecError, match=r"^invalid job 'j': keep 'an hour': "):

        @app.job(name="j", keep="an hour")
        def j() -> None: ...

    with pytest.raises(SpecError, match=r"unknown state 'done'"):

        @app.job(name="k", keep={"done": "1h"})
        def k() -> None: ...
