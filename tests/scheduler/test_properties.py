"""Exactly once under contention, as properties: for random specs and random tick times,
several schedulers over one database (threads here; processes in test_processes.py) enqueue
every slot in (first sight, last tick] exactly once, checked in the slot history and in the
jobs table."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onthedot import App, ManualClock
from onthedot.testing import tick
from tests.scheduler.helpers import history, job_slots, utc
from tests.scheduler.slot_rules import (
    SlotRule,
    every,
    every_minute,
    range_step,
    seconds_list,
    step,
    tick_times,
)

SCHEDULERS = 3
JOIN_TIMEOUT = 120.0

rules = st.one_of(
    st.integers(1, 7).map(every),
    st.integers(2, 9).map(step),
    st.lists(st.integers(0, 59), min_size=1, max_size=5).map(seconds_list),
    st.tuples(st.integers(0, 40), st.integers(2, 15)).map(lambda t: range_step(*t)),
    st.just(every_minute()),
)
zones = st.sampled_from(["UTC", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"])
# Near New York's fall-back (06:00Z), so wildcard specs in that zone cross the repeated hour.
starts = st.integers(0, 3_000_000).map(
    lambda ms: utc(2024, 11, 3, 5, 58) + timedelta(milliseconds=ms)
)
gaps = st.lists(st.integers(0, 12_000), min_size=1, max_size=14)

PROPERTY = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def build(url: str, start: datetime, keyed: list[tuple[str, SlotRule, str]]) -> App:
    app = App(url, clock=ManualClock(start), log_events=False, lease=2.0, pool_size=2)
    app.job(name="work")(lambda: None)
    for key, rule, zone in keyed:
        app.schedule(key, rule.text, "work", timezone=zone, catchup="all", catchup_window="1d")
    return app


def run_scheduler(app: App, times: list[datetime], go: threading.Barrier) -> None:
    scheduler = app.scheduler(worker_id=f"sched-{uuid.uuid4().hex[:6]}")
    scheduler.prepare()
    go.wait(JOIN_TIMEOUT)
    assert isinstance(app.clock, ManualClock)
    for t in times:
        app.clock.set(t)
        scheduler.tick()


@PROPERTY
@given(
    specs=st.lists(st.tuples(rules, zones), min_size=1, max_size=3),
    start=starts,
    gaps_ms=gaps,
)
def test_concurrent_schedulers_enqueue_every_slot_exactly_once(
    db_url: str, specs: list[tuple[SlotRule, str]], start: datetime, gaps_ms: list[int]
) -> None:
    run = uuid.uuid4().hex[:8]  # one database for every example: keys of their own
    keyed = [(f"p{run}-{i}", rule, zone) for i, (rule, zone) in enumerate(specs)]
    times = tick_times(start, gaps_ms)
    apps = [build(db_url, start, keyed) for _ in range(SCHEDULERS)]
    try:
        apps[0].migrate()
        assert tick(apps[0]) == []  # first sight at `start`, before anyone ticks
        go = threading.Barrier(SCHEDULERS)
        errors: list[BaseException] = []

        def target(app: App) -> None:
            try:
                run_scheduler(app, times, go)
            except BaseException as exc:  # reported below, with the example
                errors.append(exc)
                go.abort()

        threads = [threading.Thread(target=target, args=(a,)) for a in apps]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
        assert not errors, errors
        assert not any(t.is_alive() for t in threads)
        # Every scheduler's last tick was at the last time; one more tick there finds nothing.
        assert tick(apps[0], times[-1]) == []
        for key, rule, _ in keyed:
            expected = rule.slots(start, times[-1])
            assert history(apps[0], key) == [(s, "enqueued") for s in expected], key
            assert job_slots(apps[0], key) == expected, key
    finally:
        for app in apps:
            app.close()
