"""Daylight saving time: the contract's rules, zone by zone.

Expected slots are written as local times with their UTC offset, so each row
reads like the wall clock of the zone. Fixed-time specs (5-field cron with
minute and hour not starting with '*', calendar intervals): a slot in a gap
fires at the first instant after it, a slot in an overlap at its first
occurrence. Wildcard specs: every real instant whose wall-clock time
matches.
"""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from onthedot.domain.specs import parse_spec

NY = "America/New_York"
LORD_HOWE = "Australia/Lord_Howe"  # 30-minute shifts at 02:00
HAVANA = "America/Havana"  # transitions at midnight
SANTIAGO = "America/Santiago"  # spring forward at 24:00, fall back at 24:00
BEIRUT = "Asia/Beirut"  # transitions at midnight, fall back into the previous day
APIA = "Pacific/Apia"  # skipped 2011-12-30 entirely (24-hour gap)


def t(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    assert value.tzinfo is not None
    return value


CASES = [
    # ---- New York, spring forward 2024-03-10 02:00 EST -> 03:00 EDT
    (
        "30 2 * * *",
        NY,
        "2024-03-09T00:00-05:00",
        "2024-03-11T23:59-04:00",
        ["2024-03-09T02:30-05:00", "2024-03-10T03:00-04:00", "2024-03-11T02:30-04:00"],
    ),
    (
        "0 2,3 * * *",  # 02:00 shifts to 03:00, which is a slot: one slot
        NY,
        "2024-03-09T00:00-05:00",
        "2024-03-11T23:59-04:00",
        [
            "2024-03-09T02:00-05:00",
            "2024-03-09T03:00-05:00",
            "2024-03-10T03:00-04:00",
            "2024-03-11T02:00-04:00",
            "2024-03-11T03:00-04:00",
        ],
    ),
    (
        "15,45 2 * * *",  # both in the gap: one slot
        NY,
        "2024-03-10T00:00-05:00",
        "2024-03-10T12:00-04:00",
        ["2024-03-10T03:00-04:00"],
    ),
    (
        "59 1,2 * * *",
        NY,
        "2024-03-10T00:00-05:00",
        "2024-03-10T12:00-04:00",
        ["2024-03-10T01:59-05:00", "2024-03-10T03:00-04:00"],
    ),
    (
        "30 2,3 * * *",
        NY,
        "2024-03-10T00:00-05:00",
        "2024-03-10T12:00-04:00",
        ["2024-03-10T03:00-04:00", "2024-03-10T03:30-04:00"],
    ),
    (
        "*/30 * * * *",  # wildcard: nothing in the gap
        NY,
        "2024-03-10T01:00-05:00",
        "2024-03-10T03:30-04:00",
        ["2024-03-10T01:30-05:00", "2024-03-10T03:00-04:00", "2024-03-10T03:30-04:00"],
    ),
    (
        "@hourly",
        NY,
        "2024-03-10T00:30-05:00",
        "2024-03-10T04:30-04:00",
        ["2024-03-10T01:00-05:00", "2024-03-10T03:00-04:00", "2024-03-10T04:00-04:00"],
    ),
    (
        "* 2 * * *",  # wildcard minute: no slot at all that day
        NY,
        "2024-03-10T00:00-05:00",
        "2024-03-10T12:00-04:00",
        [],
    ),
    (
        "0 30 2 * * *",  # 6 fields: always wildcard
        NY,
        "2024-03-09T00:00-05:00",
        "2024-03-11T23:59-04:00",
        ["2024-03-09T02:30:00-05:00", "2024-03-11T02:30:00-04:00"],
    ),
    # ---- New York, fall back 2024-11-03 02:00 EDT -> 01:00 EST
    (
        "30 1 * * *",
        NY,
        "2024-11-02T12:00-04:00",
        "2024-11-04T12:00-05:00",
        ["2024-11-03T01:30-04:00", "2024-11-04T01:30-05:00"],
    ),
    (
        "0 1,2 * * *",
        NY,
        "2024-11-03T00:00-04:00",
        "2024-11-03T12:00-05:00",
        ["2024-11-03T01:00-04:00", "2024-11-03T02:00-05:00"],
    ),
    (
        "*/30 * * * *",
        NY,
        "2024-11-03T00:45-04:00",
        "2024-11-03T02:15-05:00",
        [
            "2024-11-03T01:00-04:00",
            "2024-11-03T01:30-04:00",
            "2024-11-03T01:00-05:00",
            "2024-11-03T01:30-05:00",
            "2024-11-03T02:00-05:00",
        ],
    ),
    (
        "*/30 1 * * *",
        NY,
        "2024-11-03T00:00-04:00",
        "2024-11-03T12:00-05:00",
        [
            "2024-11-03T01:00-04:00",
            "2024-11-03T01:30-04:00",
            "2024-11-03T01:00-05:00",
            "2024-11-03T01:30-05:00",
        ],
    ),
    (
        "0 * * * *",
        NY,
        "2024-11-03T00:30-04:00",
        "2024-11-03T02:30-05:00",
        ["2024-11-03T01:00-04:00", "2024-11-03T01:00-05:00", "2024-11-03T02:00-05:00"],
    ),
    (
        "0 30 1 * * *",
        NY,
        "2024-11-03T00:00-04:00",
        "2024-11-03T12:00-05:00",
        ["2024-11-03T01:30-04:00", "2024-11-03T01:30-05:00"],
    ),
    # ---- Lord Howe, spring forward 2024-10-06 02:00 +10:30 -> 02:30 +11:00
    (
        "15 2 * * *",
        LORD_HOWE,
        "2024-10-05T12:00+10:30",
        "2024-10-07T12:00+11:00",
        ["2024-10-06T02:30+11:00", "2024-10-07T02:15+11:00"],
    ),
    (
        "45 2 * * *",
        LORD_HOWE,
        "2024-10-06T00:00+10:30",
        "2024-10-06T12:00+11:00",
        ["2024-10-06T02:45+11:00"],
    ),
    (
        "0,15,30 2 * * *",
        LORD_HOWE,
        "2024-10-06T00:00+10:30",
        "2024-10-06T12:00+11:00",
        ["2024-10-06T02:30+11:00"],
    ),
    (
        "*/15 2 * * *",
        LORD_HOWE,
        "2024-10-06T00:00+10:30",
        "2024-10-06T12:00+11:00",
        ["2024-10-06T02:30+11:00", "2024-10-06T02:45+11:00"],
    ),
    (
        "*/20 3 * * *",  # wildcard: the whole 03:00 hour exists
        LORD_HOWE,
        "2024-10-06T00:00+10:30",
        "2024-10-06T12:00+11:00",
        ["2024-10-06T03:00+11:00", "2024-10-06T03:20+11:00", "2024-10-06T03:40+11:00"],
    ),
    # ---- Lord Howe, fall back 2024-04-07 02:00 +11:00 -> 01:30 +10:30
    (
        "*/15 * * * *",
        LORD_HOWE,
        "2024-04-07T01:00+11:00",
        "2024-04-07T02:00+10:30",
        [
            "2024-04-07T01:15+11:00",
            "2024-04-07T01:30+11:00",
            "2024-04-07T01:45+11:00",
            "2024-04-07T01:30+10:30",
            "2024-04-07T01:45+10:30",
            "2024-04-07T02:00+10:30",
        ],
    ),
    (
        "45 1 * * *",
        LORD_HOWE,
        "2024-04-06T12:00+11:00",
        "2024-04-07T12:00+10:30",
        ["2024-04-07T01:45+11:00"],
    ),
    (
        "59 * * * *",
        LORD_HOWE,
        "2024-04-07T00:30+11:00",
        "2024-04-07T03:00+10:30",
        [
            "2024-04-07T00:59+11:00",
            "2024-04-07T01:59+11:00",
            "2024-04-07T01:59+10:30",
            "2024-04-07T02:59+10:30",
        ],
    ),
    # ---- Havana: 2024-03-10 00:00 -> 01:00, 2024-11-03 01:00 -> 00:00
    (
        "@daily",
        HAVANA,
        "2024-03-09T12:00-05:00",
        "2024-03-11T12:00-04:00",
        ["2024-03-10T01:00-04:00", "2024-03-11T00:00-04:00"],
    ),
    (
        "*/30 0 * * *",
        HAVANA,
        "2024-03-09T12:00-05:00",
        "2024-03-10T12:00-04:00",
        [],
    ),
    (
        "30 0 * * *",
        HAVANA,
        "2024-11-02T12:00-04:00",
        "2024-11-04T12:00-05:00",
        ["2024-11-03T00:30-04:00", "2024-11-04T00:30-05:00"],
    ),
    (
        "*/30 0 * * *",
        HAVANA,
        "2024-11-02T12:00-04:00",
        "2024-11-03T12:00-05:00",
        [
            "2024-11-03T00:00-04:00",
            "2024-11-03T00:30-04:00",
            "2024-11-03T00:00-05:00",
            "2024-11-03T00:30-05:00",
        ],
    ),
    # ---- Santiago: 2024-09-08 00:00 -> 01:00, 2024-04-06 24:00 -> 23:00
    (
        "0 0 * * *",
        SANTIAGO,
        "2024-09-07T12:00-04:00",
        "2024-09-09T12:00-03:00",
        ["2024-09-08T01:00-03:00", "2024-09-09T00:00-03:00"],
    ),
    (
        "*/30 * 8 9 *",
        SANTIAGO,
        "2024-09-07T23:00-04:00",
        "2024-09-08T02:00-03:00",
        ["2024-09-08T01:00-03:00", "2024-09-08T01:30-03:00", "2024-09-08T02:00-03:00"],
    ),
    (
        "30 23 * * *",
        SANTIAGO,
        "2024-04-06T12:00-03:00",
        "2024-04-07T12:00-04:00",
        ["2024-04-06T23:30-03:00"],
    ),
    (
        "*/30 23 * * *",
        SANTIAGO,
        "2024-04-06T12:00-03:00",
        "2024-04-07T12:00-04:00",
        [
            "2024-04-06T23:00-03:00",
            "2024-04-06T23:30-03:00",
            "2024-04-06T23:00-04:00",
            "2024-04-06T23:30-04:00",
        ],
    ),
    # ---- Beirut: 2024-03-31 00:00 -> 01:00, 2024-10-27 00:00 -> 2024-10-26 23:00
    (
        "@daily",
        BEIRUT,
        "2024-03-30T12:00+02:00",
        "2024-03-31T12:00+03:00",
        ["2024-03-31T01:00+03:00"],
    ),
    (
        "@daily",
        BEIRUT,
        "2024-10-25T12:00+03:00",
        "2024-10-27T12:00+02:00",
        ["2024-10-26T00:00+03:00", "2024-10-27T00:00+02:00"],
    ),
    (
        "30 23 * * *",
        BEIRUT,
        "2024-10-26T12:00+03:00",
        "2024-10-27T12:00+02:00",
        ["2024-10-26T23:30+03:00"],
    ),
    (
        "*/30 23 * * *",
        BEIRUT,
        "2024-10-26T12:00+03:00",
        "2024-10-27T12:00+02:00",
        [
            "2024-10-26T23:00+03:00",
            "2024-10-26T23:30+03:00",
            "2024-10-26T23:00+02:00",
            "2024-10-26T23:30+02:00",
        ],
    ),
    # ---- Apia skipped 2011-12-30: a gap of 24 hours
    (
        "0 0 * * *",
        APIA,
        "2011-12-28T12:00-10:00",
        "2012-01-01T12:00+14:00",
        [
            "2011-12-29T00:00-10:00",
            "2011-12-31T00:00+14:00",  # 30th (gap) and 31st merge: one slot
            "2012-01-01T00:00+14:00",
        ],
    ),
    # ---- Calendar intervals
    (
        "every 1 day at 02:30",
        NY,
        "2024-03-09T00:00-05:00",
        "2024-03-11T23:00-04:00",
        ["2024-03-09T02:30-05:00", "2024-03-10T03:00-04:00", "2024-03-11T02:30-04:00"],
    ),
    (
        "every 1 day at 01:30",
        NY,
        "2024-11-02T12:00-04:00",
        "2024-11-04T12:00-05:00",
        ["2024-11-03T01:30-04:00", "2024-11-04T01:30-05:00"],
    ),
    (
        "every 2 weeks at 09:00 from 2024-03-01",  # keeps 09:00 local across the change
        NY,
        "2024-02-01T00:00-05:00",
        "2024-04-01T00:00-04:00",
        ["2024-03-01T09:00-05:00", "2024-03-15T09:00-04:00", "2024-03-29T09:00-04:00"],
    ),
    (
        "every 2 weeks at 09:00 from 2024-10-25",
        "Europe/Paris",
        "2024-10-01T00:00+02:00",
        "2024-11-30T00:00+01:00",
        ["2024-10-25T09:00+02:00", "2024-11-08T09:00+01:00", "2024-11-22T09:00+01:00"],
    ),
    (
        "every 1 month at 02:30 from 2024-02-10",
        NY,
        "2024-02-01T00:00-05:00",
        "2024-04-30T00:00-04:00",
        ["2024-02-10T02:30-05:00", "2024-03-10T03:00-04:00", "2024-04-10T02:30-04:00"],
    ),
    (
        "every 1 day at 00:00",
        HAVANA,
        "2024-03-09T12:00-05:00",
        "2024-03-11T12:00-04:00",
        ["2024-03-10T01:00-04:00", "2024-03-11T00:00-04:00"],
    ),
    (
        "every 1 day at 00:30",
        HAVANA,
        "2024-11-02T12:00-04:00",
        "2024-11-04T12:00-05:00",
        ["2024-11-03T00:30-04:00", "2024-11-04T00:30-05:00"],
    ),
    (
        "every 1 week at 02:15 from 2024-09-29",
        LORD_HOWE,
        "2024-09-28T00:00+10:30",
        "2024-10-14T00:00+11:00",
        ["2024-09-29T02:15+10:30", "2024-10-06T02:30+11:00", "2024-10-13T02:15+11:00"],
    ),
    (
        "every 1 day at 00:00",
        APIA,
        "2011-12-28T12:00-10:00",
        "2012-01-01T12:00+14:00",
        ["2011-12-29T00:00-10:00", "2011-12-31T00:00+14:00", "2012-01-01T00:00+14:00"],
    ),
    (
        "every 1 day at 09:00",
        APIA,
        "2011-12-28T12:00-10:00",
        "2012-01-01T12:00+14:00",
        [
            "2011-12-29T09:00-10:00",
            "2011-12-31T00:00+14:00",
            "2011-12-31T09:00+14:00",
            "2012-01-01T09:00+14:00",
        ],
    ),
]


@pytest.mark.parametrize(("text", "zone", "start", "end", "expected"), CASES)
def test_dst_slots(text: str, zone: str, start: str, end: str, expected: list[str]) -> None:
    spec = parse_spec(text)
    tz = ZoneInfo(zone)
    lo, hi = t(start), t(end)
    want = [t(x) for x in expected]

    got = list(spec.slots_between(lo, hi, tz))
    assert [g.astimezone(tz).isoformat() for g in got] == [
        w.astimezone(tz).isoformat() for w in want
    ]
    assert got == want

    assert spec.count_between(lo, hi, tz) == len(want)
    assert spec.last_at_or_before(hi, tz, lo) == (want[-1] if want else None)

    chain: list[datetime] = []
    cursor = lo
    while True:
        nxt = spec.next_after(cursor, tz)
        if nxt is None or nxt > hi:
            break
        assert nxt > cursor
        chain.append(nxt)
        cursor = nxt
    assert chain == want


@pytest.mark.parametrize(
    ("text", "zone", "after", "expected"),
    [
        # queried from the second occurrence of the repeated hour: not the
        # first occurrence again (that would be before `after`)
        ("30 1 * * *", NY, "2024-11-03T01:15-05:00", "2024-11-04T01:30-05:00"),
        ("30 1 * * *", NY, "2024-11-03T01:45-04:00", "2024-11-04T01:30-05:00"),
        ("30 1 * * *", NY, "2024-11-03T01:15-04:00", "2024-11-03T01:30-04:00"),
        ("every 1 day at 01:30", NY, "2024-11-03T01:15-05:00", "2024-11-04T01:30-05:00"),
        # wildcard in the second occurrence: the repeated times fire again
        ("30 * * * *", NY, "2024-11-03T01:15-05:00", "2024-11-03T01:30-05:00"),
        # an hour that does not exist on that day (wildcard): next year
        ("* 0 8 9 *", SANTIAGO, "2024-09-07T12:00-04:00", "2025-09-08T00:00-03:00"),
        # from inside the gap's end instant
        ("30 2 * * *", NY, "2024-03-10T03:00-04:00", "2024-03-11T02:30-04:00"),
        ("30 2 * * *", NY, "2024-03-10T01:59:59-05:00", "2024-03-10T03:00-04:00"),
    ],
)
def test_next_after_around_transitions(text: str, zone: str, after: str, expected: str) -> None:
    assert parse_spec(text).next_after(t(after), ZoneInfo(zone)) == t(expected)


@pytest.mark.parametrize("zone", [NY, LORD_HOWE, HAVANA, SANTIAGO, BEIRUT, "Europe/Paris"])
@pytest.mark.parametrize("text", ["*/5 * * * *", "30 1 * * *", "0 0,1,2,3 * * *", "0 0 * * *"])
def test_a_year_of_slots_is_consistent(zone: str, text: str) -> None:
    """Over a year with two transitions: count, walk and chain agree."""
    spec = parse_spec(text)
    tz = ZoneInfo(zone)
    lo, hi = t("2024-01-01T00:00+00:00"), t("2025-01-01T00:00+00:00")
    slots = list(spec.slots_between(lo, hi, tz))
    assert spec.count_between(lo, hi, tz) == len(slots)
    assert all(a < b for a, b in pairwise(slots))
    assert all(s.microsecond == 0 and s.utcoffset() is not None for s in slots)
    if text == "*/5 * * * *":
        assert len(slots) == 366 * 288  # every real 5th minute, whatever the zone
    if text in ("30 1 * * *", "0 0 * * *"):
        assert len(slots) == 366  # exactly once per day, DST or not
