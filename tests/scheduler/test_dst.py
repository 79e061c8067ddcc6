"""Daylight saving time through the full tick path: declare, sync, tick every few minutes with
a manual clock, and compare what the ledger enqueued with instants written by hand.

Expected instants are written as local wall-clock times with their UTC offset, so each row reads
like the contract ("02:30 on the spring-forward day in New York -> 03:00 EDT").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from onthedot.testing import slots_between, tick
from tests.scheduler.helpers import MakeApp, at, history, job_slots

NY = "America/New_York"
LORD_HOWE = "Australia/Lord_Howe"  # shifts by 30 minutes, at 02:00 local
HAVANA = "America/Havana"  # shifts at midnight
SANTIAGO = "America/Santiago"  # shifts at midnight


@dataclass(frozen=True)
class Case:
    id: str
    spec: str
    timezone: str
    start: str  # first sight (UTC)
    end: str  # last tick (UTC)
    expected: tuple[str, ...]  # local wall-clock times with their offsets


CASES = [
    # -- gaps (clocks jump forward) -----------------------------------------------------------
    Case(
        "ny-gap-fixed-fires-after-gap",
        "30 2 * * *",
        NY,
        "2024-03-09T12:00Z",
        "2024-03-11T12:00Z",
        ("2024-03-10T03:00-04:00", "2024-03-11T02:30-04:00"),
    ),
    Case(
        "ny-gap-2-and-3-oclock-is-one-slot",
        "0 2,3 * * *",
        NY,
        "2024-03-10T05:00Z",
        "2024-03-10T12:00Z",
        ("2024-03-10T03:00-04:00",),
    ),
    Case(
        "ny-gap-shifted-slots-merge-with-regular",
        "0,30 2,3 * * *",
        NY,
        "2024-03-10T05:00Z",
        "2024-03-10T12:00Z",
        ("2024-03-10T03:00-04:00", "2024-03-10T03:30-04:00"),
    ),
    Case(
        "ny-gap-wildcard-has-no-slot-in-gap",
        "*/30 * * * *",
        NY,
        "2024-03-10T06:00Z",
        "2024-03-10T08:00Z",
        (
            "2024-03-10T01:30-05:00",
            "2024-03-10T03:00-04:00",
            "2024-03-10T03:30-04:00",
            "2024-03-10T04:00-04:00",
        ),
    ),
    Case(
        "ny-gap-six-fields-is-wildcard",
        "0 30 2 * * *",
        NY,
        "2024-03-09T12:00Z",
        "2024-03-11T12:00Z",
        ("2024-03-11T02:30-04:00",),
    ),
    Case(
        "ny-gap-calendar-interval",
        "every 1 day at 02:30",
        NY,
        "2024-03-09T12:00Z",
        "2024-03-11T12:00Z",
        ("2024-03-10T03:00-04:00", "2024-03-11T02:30-04:00"),
    ),
    # -- overlaps (clocks fall back) ----------------------------------------------------------
    Case(
        "ny-overlap-fixed-fires-first-occurrence",
        "30 1 * * *",
        NY,
        "2024-11-03T04:00Z",
        "2024-11-04T12:00Z",
        ("2024-11-03T01:30-04:00", "2024-11-04T01:30-05:00"),
    ),
    Case(
        "ny-overlap-wildcard-fires-in-both",
        "*/30 * * * *",
        NY,
        "2024-11-03T04:00Z",
        "2024-11-03T08:00Z",
        (
            "2024-11-03T00:30-04:00",
            "2024-11-03T01:00-04:00",
            "2024-11-03T01:30-04:00",
            "2024-11-03T01:00-05:00",
            "2024-11-03T01:30-05:00",
            "2024-11-03T02:00-05:00",
            "2024-11-03T02:30-05:00",
            "2024-11-03T03:00-05:00",
        ),
    ),
    Case(
        "ny-overlap-wildcard-minute-fixed-hour",
        "*/20 1 * * *",
        NY,
        "2024-11-03T04:00Z",
        "2024-11-03T08:00Z",
        (
            "2024-11-03T01:00-04:00",
            "2024-11-03T01:20-04:00",
            "2024-11-03T01:40-04:00",
            "2024-11-03T01:00-05:00",
            "2024-11-03T01:20-05:00",
            "2024-11-03T01:40-05:00",
        ),
    ),
    Case(
        "ny-overlap-six-fields-fires-twice",
        "0 30 1 * * *",
        NY,
        "2024-11-03T04:00Z",
        "2024-11-03T08:00Z",
        ("2024-11-03T01:30-04:00", "2024-11-03T01:30-05:00"),
    ),
    Case(
        "ny-overlap-calendar-interval",
        "every 1 day at 01:30",
        NY,
        "2024-11-03T00:00Z",
        "2024-11-04T12:00Z",
        ("2024-11-03T01:30-04:00", "2024-11-04T01:30-05:00"),
    ),
    Case(
        "ny-interval-ignores-dst",
        "every 1h",
        NY,
        "2024-11-03T04:30Z",
        "2024-11-03T08:00Z",
        ("2024-11-03T05:00Z", "2024-11-03T06:00Z", "2024-11-03T07:00Z", "2024-11-03T08:00Z"),
    ),
    # -- 30-minute shifts ---------------------------------------------------------------------
    Case(
        "lord-howe-gap-fixed",
        "15 2 * * *",
        LORD_HOWE,
        "2024-10-05T12:00Z",
        "2024-10-06T18:00Z",
        ("2024-10-06T02:30+11:00", "2024-10-07T02:15+11:00"),
    ),
    Case(
        "lord-howe-gap-wildcard-hourly",
        "0 * * * *",
        LORD_HOWE,
        "2024-10-05T13:00Z",
        "2024-10-05T17:30Z",
        (
            "2024-10-06T00:00+10:30",
            "2024-10-06T01:00+10:30",
            "2024-10-06T03:00+11:00",
            "2024-10-06T04:00+11:00",
        ),
    ),
    Case(
        "lord-howe-overlap-fixed",
        "45 1 * * *",
        LORD_HOWE,
        "2024-04-06T12:00Z",
        "2024-04-06T18:00Z",
        ("2024-04-07T01:45+11:00",),
    ),
    Case(
        "lord-howe-overlap-wildcard",
        "*/15 * * * *",
        LORD_HOWE,
        "2024-04-06T14:00Z",
        "2024-04-06T16:00Z",
        (
            "2024-04-07T01:15+11:00",
            "2024-04-07T01:30+11:00",
            "2024-04-07T01:45+11:00",
            "2024-04-07T01:30+10:30",
            "2024-04-07T01:45+10:30",
            "2024-04-07T02:00+10:30",
            "2024-04-07T02:15+10:30",
            "2024-04-07T02:30+10:30",
        ),
    ),
    # -- transitions at midnight --------------------------------------------------------------
    Case(
        "havana-midnight-gap-daily",
        "0 0 * * *",
        HAVANA,
        "2024-03-09T00:00Z",
        "2024-03-11T12:00Z",
        ("2024-03-09T00:00-05:00", "2024-03-10T01:00-04:00", "2024-03-11T00:00-04:00"),
    ),
    Case(
        "havana-midnight-gap-two-times-one-slot",
        "0,30 0 * * *",
        HAVANA,
        "2024-03-09T12:00Z",
        "2024-03-10T12:00Z",
        ("2024-03-10T01:00-04:00",),
    ),
    Case(
        "havana-midnight-gap-wildcard",
        "*/30 * * * *",
        HAVANA,
        "2024-03-10T04:00Z",
        "2024-03-10T06:00Z",
        (
            "2024-03-09T23:30-05:00",
            "2024-03-10T01:00-04:00",
            "2024-03-10T01:30-04:00",
            "2024-03-10T02:00-04:00",
        ),
    ),
    Case(
        "havana-midnight-overlap-fixed",
        "30 0 * * *",
        HAVANA,
        "2024-11-02T12:00Z",
        "2024-11-03T12:00Z",
        ("2024-11-03T00:30-04:00",),
    ),
    Case(
        "santiago-midnight-gap",
        "0 0 * * *",
        SANTIAGO,
        "2024-09-07T12:00Z",
        "2024-09-08T12:00Z",
        ("2024-09-08T01:00-03:00",),
    ),
    Case(
        "santiago-overlap-before-midnight",
        "30 23 * * *",
        SANTIAGO,
        "2024-04-06T12:00Z",
        "2024-04-07T12:00Z",
        ("2024-04-06T23:30-03:00",),
    ),
]

STEP = timedelta(minutes=23)  # deliberately not aligned with any spec
LONG_STEP = timedelta(minutes=71)  # for cases spanning days: fewer ticks, still unaligned


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_dst_through_the_tick_path(make_app: MakeApp, case: Case) -> None:
    start, end = at(case.start), at(case.end)
    app = make_app(start)

    @app.job(name="noop")
    def noop() -> None:
        return None

    app.schedule("dst", case.spec, noop, timezone=case.timezone, catchup="all")
    assert tick(app) == []  # first sight at `start`

    fired: list[datetime] = []
    previous, t = start, start
    step = STEP if end - start <= timedelta(hours=12) else LONG_STEP
    while t < end:
        t = min(t + step, end)
        got = tick(app, t)
        for f in got:
            # Nothing before it is due, and no later than the first tick after it.
            assert previous < f.slot <= t, (f.slot, previous, t)
            assert f.job_id is not None
        fired.extend(f.slot for f in got)
        previous = t

    expected = [at(text) for text in case.expected]
    assert fired == expected
    assert history(app, "dst") == [(s, "enqueued") for s in expected]
    assert job_slots(app, "dst") == expected
    # The helper users call in their own tests agrees with what the ticks did.
    assert slots_between(app, "dst", start, end) == expected


def test_one_tick_after_the_gap_catches_up_the_same_slots(make_app: MakeApp) -> None:
    """Slots decided in one late tick are the slots decided tick by tick (catchup=all)."""
    app = make_app("2024-03-10T05:00Z")

    @app.job(name="noop")
    def noop() -> None:
        return None

    app.schedule("late", "0,30 2,3 * * *", noop, timezone=NY, catchup="all")
    tick(app)
    fired = tick(app, at("2024-03-10T12:00Z"))
    assert [f.slot for f in fired] == [at("2024-03-10T03:00-04:00"), at("2024-03-10T03:30-04:00")]
