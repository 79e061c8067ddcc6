"""Property tests: the fast paths against a brute-force oracle, and fuzzing.

The oracle enumerates matching wall-clock times with cronsim on naive
datetimes (no time zone, so no DST logic involved) and maps each one to
instants with plain ``zoneinfo`` and the contract's rules, one at a time.
"""

from __future__ import annotations

import calendar as stdcalendar
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim, CronSimError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onthedot.domain.specs import (
    CalendarSpec,
    CronSpec,
    IntervalSpec,
    Spec,
    SpecError,
    load_timezone,
    parse_spec,
)

ZONES = [
    "UTC",
    "America/New_York",
    "Europe/Paris",
    "Australia/Lord_Howe",  # 30-minute shifts
    "America/Santiago",  # transitions at midnight
    "America/Havana",  # transitions at midnight
    "Asia/Beirut",  # falls back into the previous day
    "America/St_Johns",  # -03:30
    "Pacific/Chatham",  # +12:45, transitions at 02:45 / 03:45
    "Asia/Kolkata",  # no DST
    "Pacific/Apia",  # skipped 2011-12-30
]


def offset_changes(zone: str, year: int) -> list[datetime]:
    """Hours (UTC) in which the zone's offset changes, found by plain sampling."""
    tz = ZoneInfo(zone)
    t = datetime(year, 1, 1, tzinfo=UTC)
    found = []
    previous = t.astimezone(tz).utcoffset()
    while t.year == year:
        t += timedelta(hours=1)
        current = t.astimezone(tz).utcoffset()
        if current != previous:
            found.append(t - timedelta(hours=1))
        previous = current
    return found


ORDINARY = [
    datetime(2024, 2, 29, 12, tzinfo=UTC),
    datetime(2023, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime(2024, 6, 30, 22, tzinfo=UTC),
]
# The hour (UTC) before each offset change of each zone; ordinary instants
# for zones that have none.
POINTS = {
    zone: offset_changes(zone, 2011 if zone == "Pacific/Apia" else 2024) or ORDINARY
    for zone in ZONES
}


SECOND = ["0", "30", "*/20", "15,45", "0-10/5"]
MINUTE = ["*", "0", "30", "59", "*/15", "*/7", "0,30", "10-20/5", "5-55/25", "0-59/20", "1-3"]
HOUR = ["*", "0", "1", "2", "3", "23", "2,3", "1-3", "*/2", "0-23/6", "9", "0,12"]
DAY = ["*", "*", "1", "15", "29", "31", "L", "LW", "1-7", "*/10", "13"]
MONTH = ["*", "*", "*", "2", "3", "3,10", "*/3", "JAN-MAR", "NOV", "9-12", "4"]
WEEKDAY = ["*", "*", "*", "1-5", "0", "MON", "5L", "5#3", "SAT,SUN", "*/2", "5"]


@st.composite
def cron_texts(draw: st.DrawFn) -> str:
    fields = [
        draw(st.sampled_from(MINUTE)),
        draw(st.sampled_from(HOUR)),
        draw(st.sampled_from(DAY)),
        draw(st.sampled_from(MONTH)),
        draw(st.sampled_from(WEEKDAY)),
    ]
    if draw(st.booleans()) and draw(st.booleans()):
        fields.insert(0, draw(st.sampled_from(SECOND)))
    return " ".join(fields)


@st.composite
def interval_texts(draw: st.DrawFn) -> str:
    seconds = draw(st.sampled_from([1, 7, 60, 90, 300, 3600, 5400, 86400, 7 * 86400, 100003]))
    if draw(st.booleans()):
        return f"every {seconds}"
    anchor = draw(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1)))
    return f"every {seconds} from {anchor.replace(microsecond=0).isoformat()}Z"


@st.composite
def calendar_texts(draw: st.DrawFn) -> str:
    unit = draw(st.sampled_from(["day", "week", "month"]))
    count = draw(st.integers(1, 13))
    hh = draw(st.sampled_from([0, 1, 2, 3, 9, 23]))
    mm = draw(st.sampled_from([0, 15, 30, 59]))
    text = f"every {count} {unit} at {hh:02d}:{mm:02d}"
    if draw(st.booleans()):
        anchor = draw(st.dates(min_value=date(2010, 1, 1), max_value=date(2025, 12, 31)))
        text += f" from {anchor.isoformat()}"
    return text


specs = st.one_of(cron_texts(), cron_texts(), interval_texts(), calendar_texts()).map(parse_spec)


@st.composite
def targeted_spec(draw: st.DrawFn, tz: ZoneInfo, base: datetime) -> Spec:
    """A cron or calendar spec whose times fall near the local times around
    ``base`` (a transition), so that gaps and overlaps are hit often."""
    h0 = base.astimezone(tz).hour  # wall-clock hours around it, existing or not
    near = sorted({(h0 + d) % 24 for d in range(-1, 4)})
    hours = [str(h) for h in near] + [",".join(str(h) for h in near), f"{near[0]}-{near[-1]}"]
    if draw(st.booleans()):
        minute = draw(st.sampled_from(MINUTE))
        hour = draw(st.sampled_from(hours))
        day = draw(st.sampled_from(["*", "*", "*", str(base.astimezone(tz).day), "L"]))
        return parse_spec(f"{minute} {hour} {day} * *")
    local_day = base.astimezone(tz).date()
    unit = draw(st.sampled_from(["day", "week", "month"]))
    count = 1 if unit == "day" else draw(st.integers(1, 3))
    anchor = local_day - timedelta(days=draw(st.sampled_from([0, 0, 1, 2, 7, 14])))
    if unit == "month" and draw(st.booleans()):
        anchor = anchor.replace(day=min(anchor.day, 28))
    at = f"{int(draw(st.sampled_from(near))):02d}:{draw(st.sampled_from([0, 15, 30, 45, 59])):02d}"
    return parse_spec(f"every {count} {unit} at {at} from {anchor.isoformat()}")


@st.composite
def cases(draw: st.DrawFn) -> tuple[Spec, ZoneInfo, datetime, datetime]:
    """A spec, a zone, and a window (start, end], most often around one of the
    zone's transitions with a spec whose times fall near it."""
    zone = ZoneInfo(draw(st.sampled_from(ZONES)))
    base = draw(st.sampled_from(POINTS[zone.key] + ORDINARY[:1]))
    spec = draw(st.one_of(specs, targeted_spec(zone, base), targeted_spec(zone, base)))
    if draw(st.integers(0, 4)):  # the window holds base and the hour after it
        start = base - timedelta(seconds=draw(st.integers(0, 26 * 3600)))
        end = base + timedelta(seconds=draw(st.integers(3600, 26 * 3600)))
    else:
        start = base + timedelta(seconds=draw(st.integers(-30 * 3600, 6 * 3600)))
        end = start + timedelta(seconds=draw(st.integers(0, 36 * 3600)))
    if draw(st.booleans()):
        start += timedelta(microseconds=draw(st.integers(1, 999_999)))
    return spec, zone, start, end


# --------------------------------------------------------------------------
# The oracle


def local_of(u: datetime, tz: ZoneInfo) -> datetime:
    return u.astimezone(tz).replace(tzinfo=None)


def real_instants(wall: datetime, tz: ZoneInfo) -> list[datetime]:
    out = set()
    for fold in (0, 1):
        u = wall.replace(tzinfo=tz, fold=fold).astimezone(UTC)
        if local_of(u, tz) == wall:
            out.add(u)
    return sorted(out)


def fixed_instant(wall: datetime, tz: ZoneInfo) -> datetime:
    real = real_instants(wall, tz)
    if real:
        return real[0]
    # in a gap: walk to the first instant whose local time is past `wall`
    u = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    u = min(u, wall.replace(tzinfo=tz, fold=0).astimezone(UTC))
    while local_of(u, tz) <= wall:
        u += timedelta(minutes=1)
    while local_of(u - timedelta(seconds=1), tz) > wall:
        u -= timedelta(seconds=1)
    return u


def oracle_walls(spec: Spec, lo: datetime, hi: datetime, tz: ZoneInfo) -> list[datetime]:
    wall_lo = local_of(lo, tz).replace(microsecond=0) - timedelta(days=2)
    wall_hi = local_of(hi, tz) + timedelta(days=2)
    walls: list[datetime] = []
    if isinstance(spec, CronSpec):
        try:
            reference = CronSim(spec.expr, wall_lo - timedelta(seconds=1))
        except CronSimError:  # cronsim refuses specs that can never fire ('* * 31 NOV *')
            return []
        for wall in reference:
            if wall > wall_hi:
                break
            walls.append(wall)
    elif isinstance(spec, CalendarSpec):
        if spec.unit == "month":
            months = (wall_lo.year - spec.anchor.year) * 12 + wall_lo.month - spec.anchor.month
            k = max(0, months // spec.count - 2)
        else:
            step = spec.count * (7 if spec.unit == "week" else 1)
            k = max(0, (wall_lo.date() - spec.anchor).days // step - 2)
        while True:
            if spec.unit == "month":
                index = spec.anchor.month - 1 + k * spec.count
                year, month = spec.anchor.year + index // 12, index % 12 + 1
                day = min(spec.anchor.day, stdcalendar.monthrange(year, month)[1])
                when = date(year, month, day)
            else:
                step = spec.count * (7 if spec.unit == "week" else 1)
                when = spec.anchor + timedelta(days=k * step)
            wall = datetime.combine(when, spec.at)
            if wall > wall_hi:
                break
            if wall >= wall_lo:
                walls.append(wall)
            k += 1
    return walls


def oracle(spec: Spec, lo: datetime, hi: datetime, tz: ZoneInfo) -> list[datetime]:
    if isinstance(spec, IntervalSpec):
        step = spec.every
        k = max(0, (lo - spec.anchor) // step - 1)
        out = []
        while spec.anchor + k * step <= hi:
            if spec.anchor + k * step > lo:
                out.append(spec.anchor + k * step)
            k += 1
        return out
    instants: set[datetime] = set()
    for wall in oracle_walls(spec, lo, hi, tz):
        if spec.fixed_time():
            instants.add(fixed_instant(wall, tz))
        else:
            instants.update(real_instants(wall, tz))
    return sorted(u for u in instants if lo < u <= hi)


# --------------------------------------------------------------------------
# Properties

COMMON = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@COMMON
@given(cases())
def test_slots_match_the_oracle(case: tuple[Spec, ZoneInfo, datetime, datetime]) -> None:
    spec, tz, lo, hi = case
    slots = list(spec.slots_between(lo, hi, tz))
    assert slots == oracle(spec, lo, hi, tz)


@COMMON
@given(cases())
def test_count_and_last_agree_with_the_walk(
    case: tuple[Spec, ZoneInfo, datetime, datetime],
) -> None:
    spec, tz, lo, hi = case
    slots = list(spec.slots_between(lo, hi, tz))
    assert spec.count_between(lo, hi, tz) == len(slots)
    assert spec.last_at_or_before(hi, tz, lo) == (max(slots) if slots else None)
    first = spec.next_after(lo, tz)
    if slots:
        assert first == slots[0]
    else:
        assert first is None or first > hi


@COMMON
@given(cases())
def test_next_after_sequences_strictly_increase(
    case: tuple[Spec, ZoneInfo, datetime, datetime],
) -> None:
    spec, tz, after, _ = case
    for _ in range(40):
        nxt = spec.next_after(after, tz)
        if nxt is None:
            break
        assert nxt > after
        assert nxt.tzinfo is UTC
        assert nxt.microsecond == 0
        after = nxt


@settings(max_examples=100, deadline=None)
@given(text=cron_texts(), start=st.sampled_from(ORDINARY))
def test_min_period_is_a_lower_bound_of_wall_clock_gaps(text: str, start: datetime) -> None:
    spec = parse_spec(text)
    slots = list(spec.slots_between(start, start + timedelta(days=2), ZoneInfo("UTC")))
    gaps = [b - a for a, b in pairwise(slots)]
    assert all(gap >= spec.min_period() for gap in gaps)
    assert spec.min_period() <= timedelta(days=1)


@settings(max_examples=300, deadline=None)
@given(spec=specs)
def test_canonical_round_trips(spec: Spec) -> None:
    assert parse_spec(spec.canonical()) == spec
    assert isinstance(spec.describe(), str) and spec.describe()
    assert spec.min_period() > timedelta(0)


# --------------------------------------------------------------------------
# Fuzzing: bad input raises SpecError and nothing else

TOKENS = [
    "*", "*/", "/", "0", "5", "7", "59", "60", "23", "24", "31", "32", "12", "13", "-", ",",
    "L", "LW", "W", "5L", "#", "5#3", "MON", "jan", "FRI#6", "?", "@daily", "@reboot", "@",
    "every", "at", "from", "1h", "30m", "1mo", "2 weeks", "09:00", "25:00", "2024-01-01",
    "2024-02-30", "2024-01-01T00:00:00Z", "-5m", "0s", "1.5s", "day", "months", "\n", "\x00",
    "\uff19", "\u017fun",
]  # fmt: skip


@st.composite
def token_soup(draw: st.DrawFn) -> str:
    tokens = draw(st.lists(st.sampled_from(TOKENS), max_size=8))
    seps = draw(st.lists(st.sampled_from(["", " ", " ", "  "]), min_size=len(tokens)))
    return "".join(t + s for t, s in zip(tokens, seps, strict=False))


def check_parse(text: str) -> None:
    try:
        spec = parse_spec(text)
    except SpecError as exc:
        assert "\n" not in str(exc)
        assert str(exc)
    else:
        assert isinstance(spec, Spec)
        assert parse_spec(spec.canonical()) == spec
        spec.next_after(datetime(2024, 1, 1, tzinfo=UTC), ZoneInfo("America/New_York"))


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_parse_spec_fuzz_text(text: str) -> None:
    check_parse(text)


@settings(max_examples=500, deadline=None)
@given(token_soup())
def test_parse_spec_fuzz_tokens(text: str) -> None:
    check_parse(text)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(TOKENS[:30]), min_size=5, max_size=6).map(" ".join))
def test_parse_spec_fuzz_cron_fields(text: str) -> None:
    check_parse(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.sampled_from(["UTC", "Europe/Paris", "a/../b", "/", "."])))
def test_load_timezone_fuzz(name: str) -> None:
    try:
        tz = load_timezone(name)
    except SpecError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(tz, ZoneInfo)
