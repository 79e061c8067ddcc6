from __future__ import annotations

import hashlib
import time as clock
from datetime import UTC, date, datetime, time, timedelta, timezone
from itertools import islice, pairwise
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from onthedot.domain.specs import (
    CalendarSpec,
    CronSpec,
    IntervalSpec,
    Spec,
    SpecError,
    calendar,
    every,
    fingerprint,
    load_timezone,
    parse_spec,
)

UTC_ZONE = ZoneInfo("UTC")
NEW_YORK = ZoneInfo("America/New_York")


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


def take(spec: Spec, after: datetime, n: int, tz: ZoneInfo = UTC_ZONE) -> list[datetime]:
    out: list[datetime] = []
    t: datetime | None = after
    for _ in range(n):
        assert t is not None
        t = spec.next_after(t, tz)
        if t is None:
            break
        out.append(t)
    return out


# --------------------------------------------------------------------------
# Cron parsing


@pytest.mark.parametrize(
    ("text", "canonical", "seconds", "fixed"),
    [
        ("*/5 * * * *", "*/5 * * * *", False, False),
        ("0 9 * * mon-fri", "0 9 * * MON-FRI", False, True),
        ("  0   9 * *\t1-5 ", "0 9 * * 1-5", False, True),
        ("0 0 1 jan *", "0 0 1 JAN *", False, True),
        ("0 0 1 Jan-Mar,oct *", "0 0 1 JAN-MAR,OCT *", False, True),
        ("0 0 L * *", "0 0 L * *", False, True),
        ("0 0 lw * *", "0 0 LW * *", False, True),
        ("0 0 * * 5l", "0 0 * * 5L", False, True),
        ("0 0 * * 5#3", "0 0 * * 5#3", False, True),
        ("0 0 * * fri#3", "0 0 * * FRI#3", False, True),
        ("0 0 * * 7", "0 0 * * 7", False, True),
        ("0-59/15 * * * *", "0-59/15 * * * *", False, False),
        ("15 */2 * * *", "15 */2 * * *", False, False),
        ("* 2 * * *", "* 2 * * *", False, False),
        ("15 2 * * *", "15 2 * * *", False, True),
        ("0,30 1-3 * * *", "0,30 1-3 * * *", False, True),
        ("*/10 * * * * *", "*/10 * * * * *", True, False),
        ("30 0 9 * * *", "30 0 9 * * *", True, False),
        ("0 0 30 2 *", "0 0 30 2 *", False, True),  # valid, never fires
        ("@yearly", "0 0 1 1 *", False, True),
        ("@annually", "0 0 1 1 *", False, True),
        ("@monthly", "0 0 1 * *", False, True),
        ("@weekly", "0 0 * * 0", False, True),
        ("@daily", "0 0 * * *", False, True),
        ("@midnight", "0 0 * * *", False, True),
        ("@hourly", "0 * * * *", False, False),
        ("@DAILY", "0 0 * * *", False, True),
        (" @hourly ", "0 * * * *", False, False),
    ],
)
def test_cron_valid(text: str, canonical: str, seconds: bool, fixed: bool) -> None:
    spec = parse_spec(text)
    assert isinstance(spec, CronSpec)
    assert spec.kind == "cron"
    assert spec.expr == canonical
    assert spec.canonical() == canonical
    assert spec.seconds is seconds
    assert spec.fixed_time() is fixed
    assert parse_spec(spec.canonical()) == spec
    assert str(spec) == canonical


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("", ["empty spec"]),
        ("   ", ["empty spec"]),
        (
            "*/0 * * * *",
            ["invalid cron spec '*/0 * * * *'", "bad minute field", "a step must be at least 1"],
        ),
        ("*/ * * * *", ["bad minute field", "a step needs a number"]),
        ("60 * * * *", ["bad minute field", "between 0 and 59"]),
        ("60 JAN 13 23 24", ["bad minute field '60'"]),  # the first bad field is named
        ("* 24 * * *", ["bad hour field", "between 0 and 23"]),
        ("* * 0 * *", ["bad day-of-month field", "between 1 and 31"]),
        ("* * 32 * *", ["bad day-of-month field", "between 1 and 31"]),
        ("* * 15W * *", ["bad day-of-month field", "'W'"]),
        ("* * * 13 *", ["bad month field", "between 1 and 12"]),
        ("* * * 0 *", ["bad month field", "between 1 and 12"]),
        ("* * * FOO *", ["bad month field", "unknown name 'FOO'"]),
        ("* * * * 8", ["bad day-of-week field", "between 0 and 7"]),
        ("* * * * FUNDAY", ["bad day-of-week field", "unknown name 'FUNDAY'"]),
        ("* * * * MON#6", ["bad day-of-week field", "between 1 and 5"]),
        ("* * * * MON#", ["bad day-of-week field", "between 1 and 5"]),
        ("5-1 * * * *", ["bad minute field", "from low to high"]),
        ("? * * * *", ["bad minute field"]),
        ("60 * * * * *", ["bad second field", "between 0 and 59"]),
        ("1,,2 * * * *", ["bad minute field"]),
        ("* * * *", ["expected 5 fields", "got 4"]),
        ("* * * * * * *", ["expected 5 fields", "got 7"]),
        ("hello world", ["expected 5 fields", "got 2"]),
        ("0 9 * * mon\u2013fri", ["ASCII"]),
        ("@reboot", ["@reboot is not a recurring time"]),
        ("@fortnightly", ["unknown alias", "@yearly"]),
        ("@daily extra", ["unknown alias"]),
        ("@", ["unknown alias"]),
        ("every", ["write 'every <duration>'"]),
        ("every15m", ["put a space after 'every'"]),
        ("every 0s", ["invalid interval spec 'every 0s'", "longer than zero"]),
        ("every -5m", ["negative"]),
        ("every 1.5s", ["whole number of seconds"]),
        ("every abc", ["invalid interval spec", "use a number with a unit"]),
        ("every 15m at 09:00", ["'at' needs a calendar unit"]),
        ("every 2 weeks at 25:00", ["invalid calendar spec", "bad time '25:00'"]),
        ("every 2 weeks at 9", ["bad time '9'"]),
        ("every 0 days at 09:00", ["invalid calendar spec", "from 1 to 100000"]),
        ("every 100001 days at 09:00", ["from 1 to 100000"]),
        ("every 1 month at 09:00 from 2024-02-30", ["bad anchor date '2024-02-30'"]),
        ("every 1 day at 09:00 from 2024-01-01T00:00:00Z", ["bad anchor date"]),
        ("every 15m from yesterday", ["bad anchor 'yesterday'"]),
        ("every 15m from 2024-01-01T00:00:00", ["needs a UTC offset"]),
        ("every 15m from 2024-01-01T00:00:00.5Z", ["whole second"]),
        ("every 1mo", []),  # valid: calendar month (checked below)
    ],
)
def test_invalid_specs(text: str, fragments: list[str]) -> None:
    if text == "every 1mo":
        assert isinstance(parse_spec(text), CalendarSpec)
        return
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_exact_message_for_bad_step() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec("*/0 * * * *")
    assert str(info.value) == (
        "invalid cron spec '*/0 * * * *': bad minute field '*/0' (a step must be at least 1)"
    )


def test_message_is_one_line_even_for_multiline_specs() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec("0 9 * *\n* x")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", [None, 5, 1.5, b"* * * * *", ["*"]])
def test_non_string_specs(value: object) -> None:
    with pytest.raises(SpecError, match="expected a string"):
        parse_spec(value)  # type: ignore[arg-type]


def test_spec_passes_through() -> None:
    spec = CronSpec("*/5 * * * *")
    assert parse_spec(spec) is spec


def test_cron_spec_direct_construction_normalizes_and_validates() -> None:
    assert CronSpec("@daily") == parse_spec("0 0 * * *")
    assert CronSpec("*/10 * * * * *").seconds is True
    with pytest.raises(SpecError):
        CronSpec("61 * * * *")


def test_specs_are_hashable_and_immutable() -> None:
    spec = CronSpec("0 9 * * MON")
    assert {spec, parse_spec("0 9 * * mon")} == {spec}
    with pytest.raises(AttributeError):
        spec.expr = "x"  # type: ignore[misc]


# --------------------------------------------------------------------------
# Cron evaluation (UTC: no DST)


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        ("0 0 L * *", utc(2024, 2, 1), [utc(2024, 2, 29), utc(2024, 3, 31), utc(2024, 4, 30)]),
        ("0 0 L 2 *", utc(2023, 1, 1), [utc(2023, 2, 28), utc(2024, 2, 29), utc(2025, 2, 28)]),
        # Aug 31 2024 is a Saturday, Nov 30 a Saturday, Jun 30 a Sunday
        ("0 0 LW * *", utc(2024, 6, 1), [utc(2024, 6, 28), utc(2024, 7, 31), utc(2024, 8, 30)]),
        ("0 0 LW 11 *", utc(2024, 1, 1), [utc(2024, 11, 29)]),
        ("0 0 * * 5L", utc(2024, 1, 1), [utc(2024, 1, 26), utc(2024, 2, 23), utc(2024, 3, 29)]),
        ("0 0 * * 5#3", utc(2024, 1, 1), [utc(2024, 1, 19), utc(2024, 2, 16), utc(2024, 3, 15)]),
        ("0 0 * * FRI#3", utc(2024, 1, 1), [utc(2024, 1, 19)]),
        ("0 0 * * 1#5", utc(2024, 1, 1), [utc(2024, 1, 29), utc(2024, 4, 29), utc(2024, 7, 29)]),
        # day-of-month and day-of-week both restricted: either matches (Vixie)
        (
            "0 0 13 * 5",
            utc(2024, 9, 1),
            [utc(2024, 9, 6), utc(2024, 9, 13), utc(2024, 9, 20), utc(2024, 9, 27)],
        ),
        # day-of-month starts with '*': both must match
        ("0 0 */2 * 5", utc(2024, 9, 1), [utc(2024, 9, 13), utc(2024, 9, 27), utc(2024, 10, 11)]),
        ("0 0 * 1 5", utc(2024, 1, 1), [utc(2024, 1, 5), utc(2024, 1, 12)]),
        ("0 12 * JAN MON", utc(2024, 1, 1), [utc(2024, 1, 1, 12), utc(2024, 1, 8, 12)]),
        ("0 12 * 1 1", utc(2024, 1, 1), [utc(2024, 1, 1, 12), utc(2024, 1, 8, 12)]),
        ("0 0 * * 0", utc(2024, 1, 1), [utc(2024, 1, 7), utc(2024, 1, 14)]),
        ("0 0 * * 7", utc(2024, 1, 1), [utc(2024, 1, 7), utc(2024, 1, 14)]),
        ("0 0 * * SUN", utc(2024, 1, 1), [utc(2024, 1, 7), utc(2024, 1, 14)]),
        ("0 0 29 2 *", utc(2024, 3, 1), [utc(2028, 2, 29), utc(2032, 2, 29)]),
        (
            "*/20 * * * * *",
            utc(2024, 1, 1, 12),
            [utc(2024, 1, 1, 12, 0, 20), utc(2024, 1, 1, 12, 0, 40), utc(2024, 1, 1, 12, 1)],
        ),
        (
            "30 0 9 * * *",
            utc(2024, 1, 1),
            [utc(2024, 1, 1, 9, 0, 30), utc(2024, 1, 2, 9, 0, 30)],
        ),
        ("@hourly", utc(2024, 1, 1, 0, 0, 1), [utc(2024, 1, 1, 1), utc(2024, 1, 1, 2)]),
        ("@yearly", utc(2024, 1, 1), [utc(2025, 1, 1), utc(2026, 1, 1)]),
        ("@weekly", utc(2024, 1, 1), [utc(2024, 1, 7), utc(2024, 1, 14)]),
        ("0 0 30 2 *", utc(2024, 1, 1), []),
        ("0 0 31 4,6 *", utc(2024, 1, 1), []),
        ("0 0 */29 2 MON#5", utc(2024, 1, 1), []),  # Feb 1 or 30 as fifth Monday: never
        ("0 0 * 2 MON#5", utc(2024, 1, 1), [utc(2044, 2, 29), utc(2072, 2, 29)]),
    ],
)
def test_cron_next_after_utc(text: str, after: datetime, expected: list[datetime]) -> None:
    spec = parse_spec(text)
    got = take(spec, after, len(expected) + (1 if not expected else 0))
    assert got == expected


@pytest.mark.parametrize(
    "text",
    [
        "*/5 * * * *",
        "0 9 * * 1-5",
        "15,45 2,3 * JAN-MAR MON,FRI",
        "0 0 L * *",
        "0 0 LW * *",
        "0 0 * * 5L",
        "0 0 * * 5#3",
        "0 0 13 * 5",
        "*/7 */5 * * *",
        "*/13 * * * * *",
        "0 30 2 * * 1-5",
        "59 23 31 12 *",
        "0 0 1 */3 *",
        "0 0 * * *",
    ],
)
def test_cron_agrees_with_cronsim_in_utc(text: str) -> None:
    """Without a time zone cronsim is the reference for matching."""
    spec = parse_spec(text)
    start = utc(2023, 12, 20, 13, 7, 11)
    reference = CronSim(text, start.replace(tzinfo=None))
    expected = [next(reference).replace(tzinfo=UTC) for _ in range(300)]
    got = list(spec.slots_between(start, expected[-1], UTC_ZONE))
    assert got == expected
    assert spec.count_between(start, expected[-1], UTC_ZONE) == 300
    assert spec.last_at_or_before(expected[-1], UTC_ZONE, start) == expected[-1]
    assert (
        spec.last_at_or_before(expected[-1] - timedelta(seconds=1), UTC_ZONE, start)
        == (expected[-2])
    )


def test_next_after_is_strictly_after_and_second_precision() -> None:
    spec = parse_spec("*/5 * * * *")
    assert spec.next_after(utc(2024, 1, 1, 0, 5), UTC_ZONE) == utc(2024, 1, 1, 0, 10)
    assert spec.next_after(utc(2024, 1, 1, 0, 4, 59, 999999), UTC_ZONE) == utc(2024, 1, 1, 0, 5)
    assert spec.next_after(utc(2024, 1, 1, 0, 5, 0, 1), UTC_ZONE) == utc(2024, 1, 1, 0, 10)
    result = spec.next_after(utc(2024, 1, 1, 0, 5, 0, 1), UTC_ZONE)
    assert result is not None
    assert result.tzinfo is UTC and result.microsecond == 0


def test_next_after_accepts_any_zone_and_returns_utc() -> None:
    spec = parse_spec("0 * * * *")
    after = datetime(2024, 1, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    assert spec.next_after(after, NEW_YORK) == utc(2024, 1, 1, 8)


def test_naive_datetimes_are_refused() -> None:
    spec = parse_spec("0 * * * *")
    with pytest.raises(ValueError, match="timezone-aware"):
        spec.next_after(datetime(2024, 1, 1), UTC_ZONE)
    with pytest.raises(ValueError, match="timezone-aware"):
        spec.count_between(datetime(2024, 1, 1), utc(2024, 1, 2), UTC_ZONE)


@pytest.mark.parametrize(
    "text", ["*/5 * * * *", "0 9 * * *", "*/20 * * * * *", "every 5m", "every 1 day at 09:00"]
)
@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_range_bounds_are_exclusive_then_inclusive(text: str, zone: str) -> None:
    spec = parse_spec(text)
    tz = ZoneInfo(zone)
    slot = spec.next_after(utc(2024, 5, 1, 13, 1, 7), tz)
    assert slot is not None
    before = spec.last_at_or_before(slot - timedelta(seconds=1), tz, utc(2024, 1, 1))
    assert before is not None and before < slot
    second = timedelta(seconds=1)
    assert spec.last_at_or_before(slot, tz, slot - second) == slot
    assert spec.last_at_or_before(slot, tz, slot) is None
    assert spec.last_at_or_before(slot + second, tz, slot - second) == slot
    assert spec.last_at_or_before(slot - second, tz, before) is None
    assert spec.last_at_or_before(slot - second, tz, before - second) == before
    assert list(spec.slots_between(slot - second, slot, tz)) == [slot]
    assert list(spec.slots_between(slot, slot + second, tz)) == []
    assert spec.count_between(slot - second, slot, tz) == 1
    assert spec.count_between(slot, slot + second, tz) == 0
    assert spec.count_between(before - second, slot, tz) == 2
    assert spec.next_after(slot - timedelta(microseconds=1), tz) == slot
    assert spec.next_after(before, tz) == slot


def test_next_after_is_memoized() -> None:
    spec = parse_spec("17 3 * * *")
    first = spec.next_after(utc(2024, 5, 1), NEW_YORK)
    assert spec.next_after(utc(2024, 5, 1), NEW_YORK) is first
    assert parse_spec("17 3 * * *").next_after(utc(2024, 5, 1, 0, 0, 0, 5), NEW_YORK) is first


def test_far_future_and_far_past() -> None:
    spec = parse_spec("0 0 1 1 *")
    assert spec.next_after(datetime.max.replace(tzinfo=UTC), UTC_ZONE) is None
    assert spec.next_after(utc(9997, 6, 1), UTC_ZONE) is None
    assert spec.next_after(utc(1, 1, 1), UTC_ZONE) == utc(3, 1, 1)
    assert every("1h").next_after(utc(9997, 12, 31, 23, 30), UTC_ZONE) is None


def test_empty_and_reversed_ranges() -> None:
    spec = parse_spec("* * * * *")
    assert list(spec.slots_between(utc(2024, 1, 2), utc(2024, 1, 1), UTC_ZONE)) == []
    assert spec.count_between(utc(2024, 1, 2), utc(2024, 1, 1), UTC_ZONE) == 0
    assert spec.count_between(utc(2024, 1, 1), utc(2024, 1, 1), UTC_ZONE) == 0
    assert spec.last_at_or_before(utc(2024, 1, 1), UTC_ZONE, utc(2024, 1, 1)) is None
    # (start, end]: start excluded, end included
    assert list(spec.slots_between(utc(2024, 1, 1), utc(2024, 1, 1, 0, 2), UTC_ZONE)) == [
        utc(2024, 1, 1, 0, 1),
        utc(2024, 1, 1, 0, 2),
    ]


# --------------------------------------------------------------------------
# Performance


def best_of(n: int, fn: object) -> float:
    assert callable(fn)
    best = float("inf")
    for _ in range(n):
        t0 = clock.perf_counter()
        fn()
        best = min(best, clock.perf_counter() - t0)
    return best


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Australia/Lord_Howe"])
def test_count_between_does_not_walk_slots(zone: str) -> None:
    spec = parse_spec("* * * * * *")
    tz = ZoneInfo(zone)
    start, end = utc(2024, 3, 1), utc(2024, 3, 31)  # spans the March transitions
    count = spec.count_between(start, end, tz)
    assert count == 30 * 86400  # every real second matches, whatever the zone
    assert best_of(3, lambda: spec.count_between(start, end, tz)) < 0.05


def test_last_at_or_before_is_fast_over_long_ranges() -> None:
    spec = parse_spec("* * * * * *")
    t = utc(2024, 6, 1, 12, 0, 0, 500)
    assert spec.last_at_or_before(t, NEW_YORK, utc(2014, 1, 1)) == utc(2024, 6, 1, 12)
    rare = parse_spec("0 0 29 2 *")
    assert rare.last_at_or_before(t, NEW_YORK, utc(2000, 1, 1)) == utc(2024, 2, 29, 5)
    assert rare.last_at_or_before(t, NEW_YORK, utc(2024, 2, 29, 5)) is None
    assert best_of(3, lambda: spec.last_at_or_before(t, NEW_YORK, utc(2014, 1, 1))) < 0.05


def test_interval_count_is_arithmetic() -> None:
    spec = every(1)
    assert spec.count_between(utc(2000, 1, 1), utc(2100, 1, 1), UTC_ZONE) == 3155760000
    assert best_of(3, lambda: spec.count_between(utc(2000, 1, 1), utc(2100, 1, 1), NEW_YORK)) < (
        0.01
    )


# --------------------------------------------------------------------------
# Intervals


def test_interval_basics() -> None:
    spec = parse_spec("every 90s")
    assert isinstance(spec, IntervalSpec)
    assert spec.kind == "interval"
    assert spec.every == timedelta(seconds=90)
    assert spec.anchor == utc(1970, 1, 1)
    assert spec.canonical() == "every 1m30s"
    assert spec.fixed_time() is False
    assert take(spec, utc(2024, 1, 1), 3) == [
        utc(2024, 1, 1, 0, 1, 30),
        utc(2024, 1, 1, 0, 3),
        utc(2024, 1, 1, 0, 4, 30),
    ]


def test_interval_ignores_time_zones() -> None:
    spec = parse_spec("every 1h30m")
    start, end = utc(2024, 3, 9), utc(2024, 3, 12)
    expected = list(spec.slots_between(start, end, UTC_ZONE))
    assert len(expected) == 48
    for zone in ("America/New_York", "Australia/Lord_Howe", "Pacific/Apia"):
        assert list(spec.slots_between(start, end, ZoneInfo(zone))) == expected


@pytest.mark.parametrize(
    ("text", "every_", "anchor", "canonical"),
    [
        ("every 15m", timedelta(minutes=15), utc(1970, 1, 1), "every 15m"),
        ("EVERY 1h 30m", timedelta(minutes=90), utc(1970, 1, 1), "every 1h30m"),
        ("every 2 weeks", timedelta(days=14), utc(1970, 1, 1), "every 2w"),
        ("every 3d", timedelta(days=3), utc(1970, 1, 1), "every 3d"),
        ("every 90", timedelta(seconds=90), utc(1970, 1, 1), "every 1m30s"),
        (
            "every 15m from 2024-01-01T00:05:00Z",
            timedelta(minutes=15),
            utc(2024, 1, 1, 0, 5),
            "every 15m from 2024-01-01T00:05:00Z",
        ),
        (
            "every 1h from 2024-01-01T02:30:00+02:00",
            timedelta(hours=1),
            utc(2024, 1, 1, 0, 30),
            "every 1h from 2024-01-01T00:30:00Z",
        ),
        (
            "every 1d from 2024-01-01",
            timedelta(days=1),
            utc(2024, 1, 1),
            "every 1d from 2024-01-01T00:00:00Z",
        ),
    ],
)
def test_interval_parsing(text: str, every_: timedelta, anchor: datetime, canonical: str) -> None:
    spec = parse_spec(text)
    assert spec == IntervalSpec(every=every_, anchor=anchor)
    assert spec.canonical() == canonical
    assert parse_spec(canonical) == spec


def test_interval_anchor() -> None:
    spec = parse_spec("every 15m from 2024-01-01T00:05:00Z")
    assert spec.next_after(utc(2024, 1, 1), UTC_ZONE) == utc(2024, 1, 1, 0, 5)
    assert spec.next_after(utc(2024, 1, 1, 0, 5), UTC_ZONE) == utc(2024, 1, 1, 0, 20)
    # slots before the anchor do not exist
    assert spec.next_after(utc(2020, 1, 1), UTC_ZONE) == utc(2024, 1, 1, 0, 5)
    assert spec.last_at_or_before(utc(2024, 1, 1, 0, 4), UTC_ZONE, utc(2000, 1, 1)) is None
    assert spec.last_at_or_before(utc(2024, 1, 1, 0, 34), UTC_ZONE, utc(2000, 1, 1)) == utc(
        2024, 1, 1, 0, 20
    )
    assert spec.count_between(utc(2000, 1, 1), utc(2024, 1, 1, 1), UTC_ZONE) == 4


def test_every_helper() -> None:
    assert every("90m") == parse_spec("every 90m")
    assert every(300) == parse_spec("every 5m")
    assert every(timedelta(hours=2), anchor=utc(2024, 1, 1)) == parse_spec(
        "every 2h from 2024-01-01T00:00:00Z"
    )
    anchored = every("1h", anchor=datetime(2024, 1, 1, 3, tzinfo=timezone(timedelta(hours=3))))
    assert anchored.anchor == utc(2024, 1, 1)
    assert anchored.anchor.tzinfo is UTC


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"duration": "0s"}, "longer than zero"),
        ({"duration": -60}, "negative"),
        ({"duration": 1.5}, "whole number of seconds"),
        ({"duration": "abc"}, "use a number with a unit"),
        ({"duration": "1h", "anchor": datetime(2024, 1, 1)}, "aware datetime"),
        ({"duration": "1h", "anchor": utc(2024, 1, 1, 0, 0, 0, 1)}, "whole seconds"),
    ],
)
def test_every_errors(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        every(**kwargs)  # type: ignore[arg-type]
    assert fragment in str(info.value)


# --------------------------------------------------------------------------
# Calendar intervals


@pytest.mark.parametrize(
    ("text", "expected", "canonical"),
    [
        (
            "every 2 weeks at 09:00 from 2024-01-05",
            CalendarSpec(2, "week", time(9), date(2024, 1, 5)),
            "every 2 weeks at 09:00 from 2024-01-05",
        ),
        (
            "every 1 month at 23:30 from 2024-01-31",
            CalendarSpec(1, "month", time(23, 30), date(2024, 1, 31)),
            "every 1 month at 23:30 from 2024-01-31",
        ),
        ("every 3 days at 06:00", CalendarSpec(3, "day", time(6)), "every 3 days at 06:00"),
        ("Every day at 6:00", CalendarSpec(1, "day", time(6)), "every 1 day at 06:00"),
        (
            "every 3d at 06:00:30",
            CalendarSpec(3, "day", time(6, 0, 30)),
            "every 3 days at 06:00:30",
        ),
        ("every 2w at 09:00", CalendarSpec(2, "week", time(9)), "every 2 weeks at 09:00"),
        ("every 1 month", CalendarSpec(1, "month", time(0)), "every 1 month at 00:00"),
        ("every 6mo from 2024-01-15", CalendarSpec(6, "month", time(0), date(2024, 1, 15)), None),
    ],
)
def test_calendar_parsing(text: str, expected: CalendarSpec, canonical: str | None) -> None:
    spec = parse_spec(text)
    assert spec == expected
    assert spec.kind == "calendar"
    assert spec.fixed_time() is True
    if canonical is not None:
        assert spec.canonical() == canonical
    assert parse_spec(spec.canonical()) == spec


def test_calendar_helper() -> None:
    assert calendar("2w", at="09:00", anchor="2024-01-05") == parse_spec(
        "every 2 weeks at 09:00 from 2024-01-05"
    )
    assert calendar("3d") == CalendarSpec(3, "day", time(0), date(1970, 1, 1))
    assert calendar("1mo", at=time(23, 30), anchor=date(2024, 1, 31)) == parse_spec(
        "every 1 month at 23:30 from 2024-01-31"
    )
    assert calendar("2 months").count == 2
    assert calendar("week").count == 1


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (("1m",), {}, "mo = months"),
        (("0d",), {}, "from 1 to 100000"),
        (("x",), {}, "use a count and a unit"),
        (("1d",), {"at": "24:00"}, "invalid calendar time '24:00'"),
        (("1d",), {"at": "9am"}, "HH:MM"),
        (("1d",), {"anchor": "2024-13-01"}, "YYYY-MM-DD"),
        (("1d",), {"anchor": datetime(2024, 1, 1)}, "use a date"),
        (("1d",), {"at": time(9, tzinfo=UTC)}, "no time zone"),
        (("1d",), {"at": time(9, 0, 0, 5)}, "whole seconds"),
    ],
)
def test_calendar_helper_errors(args: tuple[str], kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        calendar(*args, **kwargs)  # type: ignore[arg-type]
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_calendar_days_from_default_anchor() -> None:
    spec = parse_spec("every 3 days at 06:00")
    got = take(spec, utc(2024, 1, 1), 3)
    # 1970-01-01 + 3k days: 2024-01-02 is day 19724 = 3 * 6574 + 2, so 2024-01-03 is a slot
    assert got == [utc(2024, 1, 3, 6), utc(2024, 1, 6, 6), utc(2024, 1, 9, 6)]


def test_calendar_slots_before_the_anchor_do_not_exist() -> None:
    spec = parse_spec("every 2 weeks at 09:00 from 2024-01-05")
    assert spec.next_after(utc(2000, 1, 1), UTC_ZONE) == utc(2024, 1, 5, 9)
    assert spec.last_at_or_before(utc(2024, 1, 5, 8), UTC_ZONE, utc(2000, 1, 1)) is None
    assert spec.count_between(utc(2000, 1, 1), utc(2024, 2, 2, 9), UTC_ZONE) == 3


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        (
            "every 1 month at 00:00 from 2024-01-31",
            utc(2024, 1, 1),
            [
                utc(2024, 1, 31),
                utc(2024, 2, 29),
                utc(2024, 3, 31),
                utc(2024, 4, 30),
                utc(2024, 5, 31),
            ],
        ),
        (
            "every 1 month at 00:00 from 2023-01-31",
            utc(2023, 1, 1),
            [utc(2023, 1, 31), utc(2023, 2, 28), utc(2023, 3, 31)],
        ),
        (
            "every 12 months at 12:00 from 2024-02-29",
            utc(2024, 1, 1),
            [
                utc(2024, 2, 29, 12),
                utc(2025, 2, 28, 12),
                utc(2026, 2, 28, 12),
                utc(2027, 2, 28, 12),
                utc(2028, 2, 29, 12),
            ],
        ),
        (
            "every 3 months at 08:00 from 2023-11-30",
            utc(2023, 11, 1),
            [utc(2023, 11, 30, 8), utc(2024, 2, 29, 8), utc(2024, 5, 30, 8), utc(2024, 8, 30, 8)],
        ),
    ],
)
def test_calendar_month_end_clamping(text: str, after: datetime, expected: list[datetime]) -> None:
    spec = parse_spec(text)
    assert take(spec, after, len(expected)) == expected
    assert list(spec.slots_between(after, expected[-1], UTC_ZONE)) == expected
    assert spec.count_between(after, expected[-1], UTC_ZONE) == len(expected)


# --------------------------------------------------------------------------
# describe, min_period, fingerprint


@pytest.mark.parametrize(
    ("text", "description"),
    [
        ("*/5 * * * *", "Every fifth minute of every hour"),
        ("0 9 * * 1-5", "At 09:00 on Monday through Friday"),
        ("@daily", "At 00:00 every day"),
        ("0 0 L * *", "At 00:00 on the last day of every month"),
        ("every 90s", "Every 90 seconds"),
        ("every 15m", "Every 15 minutes"),
        ("every 1h30m", "Every 90 minutes"),
        ("every 1h", "Every hour"),
        ("every 1s", "Every second"),
        ("every 2d", "Every 2 days"),
        ("every 1w", "Every week"),
        ("every 2h from 2024-01-01T00:00:00Z", "Every 2 hours starting 2024-01-01T00:00:00Z"),
        ("every 2 weeks at 09:00 from 2024-01-01", "Every 2 weeks at 09:00 from 2024-01-01"),
        ("every 1 day at 06:30", "Every day at 06:30"),
        ("every 1 month at 23:30 from 2024-01-31", "Every month at 23:30 from 2024-01-31"),
    ],
)
def test_describe(text: str, description: str) -> None:
    assert parse_spec(text).describe() == description


@pytest.mark.parametrize(
    ("text", "period"),
    [
        ("*/5 * * * *", timedelta(minutes=5)),
        ("0 9 * * 1-5", timedelta(days=1)),
        ("@monthly", timedelta(days=1)),
        ("0 9,17 * * *", timedelta(hours=8)),
        ("0 1,23 * * *", timedelta(hours=2)),  # 23:00 -> 01:00 next day
        ("50,10 * * * *", timedelta(minutes=20)),
        ("* * * * * *", timedelta(seconds=1)),
        ("0,50 * * * * *", timedelta(seconds=10)),  # :50 -> :00 of the next minute
        ("30 0 * * * *", timedelta(hours=1)),
        ("0 0 30 2 *", timedelta(days=1)),
        ("every 90m", timedelta(minutes=90)),
        ("every 3 days at 06:00", timedelta(days=3)),
        ("every 2 weeks at 06:00", timedelta(days=14)),
        ("every 1 month at 06:00", timedelta(days=28)),
    ],
)
def test_min_period(text: str, period: timedelta) -> None:
    assert parse_spec(text).min_period() == period


@pytest.mark.parametrize(
    "text",
    [
        "*/5 * * * *",
        "0,50 * * * * *",
        "50,10 * * * *",
        "0 1,23 * * *",
        "7,8,30 */7 * * *",
        "every 1 month at 06:00 from 2024-01-31",
        "every 1 month at 06:00 from 2023-12-31",
    ],
)
def test_min_period_is_a_lower_bound_in_utc(text: str) -> None:
    spec = parse_spec(text)
    slots = list(islice(spec.slots_between(utc(2023, 1, 1), utc(2025, 1, 1), UTC_ZONE), 2000))
    gaps = [b - a for a, b in pairwise(slots)]
    assert min(gaps) == spec.min_period() or text.startswith("every")
    assert min(gaps) >= spec.min_period()


def test_fingerprint() -> None:
    spec = parse_spec("*/5 * * * *")
    expected = hashlib.sha256(b"cron\n*/5 * * * *\nUTC").hexdigest()[:16]
    assert fingerprint(spec, UTC_ZONE) == expected
    assert len(expected) == 16
    assert fingerprint(parse_spec("0 9 * * mon"), UTC_ZONE) == fingerprint(
        parse_spec(" 0  9 * * MON "), UTC_ZONE
    )
    assert fingerprint(spec, UTC_ZONE) != fingerprint(spec, NEW_YORK)
    assert fingerprint(spec, UTC_ZONE) != fingerprint(parse_spec("*/10 * * * *"), UTC_ZONE)
    assert fingerprint(parse_spec("every 1d"), UTC_ZONE) != fingerprint(
        parse_spec("every 1 day at 00:00"), UTC_ZONE
    )


# --------------------------------------------------------------------------
# Time zones


@pytest.mark.parametrize("name", ["UTC", "Europe/Paris", "America/New_York", "Etc/GMT+5"])
def test_load_timezone(name: str) -> None:
    assert load_timezone(name) == ZoneInfo(name)
    assert load_timezone(name).key == name


def test_load_timezone_message() -> None:
    with pytest.raises(SpecError) as info:
        load_timezone("Mars/Base")
    assert str(info.value) == (
        "unknown time zone 'Mars/Base': use an IANA name such as 'Europe/Paris' or 'UTC'"
    )


@pytest.mark.parametrize(
    "name",
    [
        "",
        " ",
        "Mars/Base",
        "Europe/Paris ",
        "../etc/passwd",
        "/etc/localtime",
        "America",
        "UTC\x00",
    ],
)
def test_load_timezone_errors(name: str) -> None:
    with pytest.raises(SpecError) as info:
        load_timezone(name)
    assert "\n" not in str(info.value)
