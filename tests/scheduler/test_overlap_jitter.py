"""Overlap policies (skip, serialize, allow), jitter, and the context of a scheduled job."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

from onthedot import App, JobContext, JobState, current_job
from onthedot.domain.slots import jitter_offset
from onthedot.testing import FiredSlot, drain, tick
from tests import waiting
from tests.scheduler.helpers import MakeApp, clock_of, history, row, utc

T0 = utc(2030, 1, 1)
DEADLINE = 60.0


def s(seconds: float) -> timedelta:
    return timedelta(seconds=seconds)


def wait_for(condition: Callable[[], bool], what: str) -> None:
    waiting.wait_for(condition, what, DEADLINE)


def state(app: App, job_id: int | None) -> JobState:
    job = app.get_job(job_id or 0)
    assert job is not None
    return job.state


class Gate:
    """A job body whose first run blocks until released; records starts and ends by slot."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.log: list[tuple[str, object]] = []
        self.lock = threading.Lock()

    def run(self) -> None:
        slot = current_job().slot
        with self.lock:
            first = not self.log
            self.log.append(("start", slot))
        if first:
            assert self.release.wait(DEADLINE), "never released"
        with self.lock:
            self.log.append(("end", slot))


def background_worker(app: App, concurrency: int) -> threading.Thread:
    worker = app.worker(concurrency=concurrency, burst=True, scheduler=False, install_signals=False)
    thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    thread.start()
    return thread


def test_skip_records_skipped_overlap_while_a_job_is_queued(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("k", "every 10s", "work", overlap="skip")
    tick(app)
    first = tick(app, T0 + s(10))
    assert tick(app, T0 + s(20)) == [FiredSlot("k", T0 + s(20), None)]
    assert drain(app) == 1
    third = tick(app, T0 + s(30))
    assert [f.slot for f in third] == [T0 + s(30)] and third[0].job_id is not None
    assert history(app, "k") == [
        (T0 + s(10), "enqueued"),
        (T0 + s(20), "skipped_overlap"),
        (T0 + s(30), "enqueued"),
    ]
    assert row(app, "k").last_outcome == "enqueued"
    assert first[0].job_id != third[0].job_id


def test_skip_records_skipped_overlap_while_a_job_is_running(make_app: MakeApp) -> None:
    # A long lease: moving the manual clock past a running job's lease would make it look
    # abandoned (rescued), as a worker that stopped heartbeating would.
    app = make_app(T0, lease=3600.0)
    gate = Gate()
    app.job(name="work")(gate.run)
    app.schedule("k", "every 10s", "work", overlap="skip")
    tick(app)
    (first,) = tick(app, T0 + s(10))
    thread = background_worker(app, 1)
    try:
        wait_for(lambda: state(app, first.job_id) is JobState.RUNNING, "the first job to run")
        assert tick(app, T0 + s(20)) == [FiredSlot("k", T0 + s(20), None)]
    finally:
        gate.release.set()
        thread.join(DEADLINE)
    assert state(app, first.job_id) is JobState.SUCCEEDED
    assert [f.slot for f in tick(app, T0 + s(30))] == [T0 + s(30)]
    assert [o for _, o in history(app, "k")] == ["enqueued", "skipped_overlap", "enqueued"]


def test_serialize_enqueues_but_the_second_job_waits_for_the_first(make_app: MakeApp) -> None:
    app = make_app(T0)
    gate = Gate()
    app.job(name="work")(gate.run)
    app.schedule("k", "every 10s", "work", overlap="serialize")
    tick(app)
    (first,) = tick(app, T0 + s(10))
    (second,) = tick(app, T0 + s(20))
    assert second.job_id is not None  # enqueued, not skipped
    thread = background_worker(app, 2)
    try:
        wait_for(lambda: state(app, first.job_id) is JobState.RUNNING, "the first job to run")
        # Another worker asking for work now gets nothing: the second job waits on the first.
        claimed = app.storage.at(clock_of(app).now()).claim_jobs("probe", "default", 10, 30.0)
        assert claimed == []
        assert state(app, second.job_id) is JobState.QUEUED
    finally:
        gate.release.set()
        thread.join(DEADLINE)
    drain(app)
    a, b = first.slot, second.slot
    assert gate.log == [("start", a), ("end", a), ("start", b), ("end", b)]
    assert state(app, second.job_id) is JobState.SUCCEEDED


def test_allow_lets_jobs_of_one_schedule_run_at_once(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("k", "every 10s", "work")
    tick(app)
    tick(app, T0 + s(10))
    tick(app, T0 + s(20))
    claimed = app.storage.at(T0 + s(20)).claim_jobs("probe", "default", 10, 30.0)
    assert sorted(j.slot for j in claimed if j.slot) == [T0 + s(10), T0 + s(20)]


def test_jitter_delays_run_at_deterministically_and_keeps_the_slot(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    jitter = s(20)
    app.schedule("k", "every 1m", "work", jitter="20s", catchup="all")
    tick(app)
    offsets = []
    for minute in range(1, 21):
        (fired,) = tick(app, T0 + s(60 * minute))
        job = app.get_job(fired.job_id or 0)
        assert job is not None
        assert fired.slot == job.slot == T0 + s(60 * minute)  # identity: the nominal slot
        offset = job.run_at - job.slot
        assert timedelta(0) <= offset < jitter
        assert offset == jitter_offset("k", job.slot, jitter)  # every worker agrees
        offsets.append(offset)
    assert len(set(offsets)) > 1
    assert [slot for slot, _ in history(app, "k")] == [T0 + s(60 * m) for m in range(1, 21)]


def test_a_jittered_job_does_not_start_before_its_run_at(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("k", "every 1m", "work", jitter="50s")
    tick(app)
    (fired,) = tick(app, T0 + s(60))
    job = app.get_job(fired.job_id or 0)
    assert job is not None
    assert job.slot is not None
    assert job.run_at > job.slot  # true for this (key, slot): the offset is deterministic
    clock_of(app).set(job.run_at - s(1))
    assert drain(app) == 0
    clock_of(app).set(job.run_at)
    assert drain(app) == 1


def test_jitter_must_be_shorter_than_the_period(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    app.schedule("ok", "*/5 * * * *", "work", jitter="299s")
    app.schedule("too-long", "*/5 * * * *", "work", jitter="5m")
    assert [p.key for p in app.schedules.check().errors] == ["too-long"]


def test_a_scheduled_job_knows_its_schedule_key_and_slot(make_app: MakeApp) -> None:
    app = make_app(T0)
    seen: list[JobContext] = []

    @app.job(name="report", schedule="0 9 * * *", timezone="Europe/Paris")
    def report() -> None:
        seen.append(current_job())

    tick(app)
    app.enqueue("report")  # the same job enqueued by hand has no slot
    (fired,) = tick(app, utc(2030, 1, 1, 8, 0, 30))  # 09:00 in Paris (UTC+1)
    assert drain(app) == 2
    by_slot = {ctx.slot: ctx for ctx in seen}
    assert by_slot[None].schedule_key is None
    ctx = by_slot[utc(2030, 1, 1, 8)]
    assert (ctx.schedule_key, ctx.slot, ctx.job_id) == ("report", fired.slot, fired.job_id)
    assert ctx.slot is not None and ctx.slot.utcoffset() == timedelta(0)
