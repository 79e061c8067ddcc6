"""Expectations: parsing (`grace`, `max_runtime` incl. "auto", `deadline`, `ping`), the default
grace, deadlines in a schedule's zone (DST included), the learned runtime limit, overrides."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from onthedot.domain.definitions import Declaration, validate
from onthedot.domain.expectations import (
    AUTO_FLOOR,
    Deadline,
    Expectations,
    default_grace,
    parse_expectations,
    percentile,
    redact,
    stored_expectations,
)
from onthedot.domain.specs import parse_spec

PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")


def test_the_issue_example_parses() -> None:
    found, problems = parse_expectations(
        {"grace": "10m", "max_runtime": "30m", "deadline": "06:00", "ping": "https://hc-ping.com/x"}
    )
    assert problems == []
    assert found == Expectations(
        timedelta(minutes=10), timedelta(minutes=30), Deadline(at=time(6)), "https://hc-ping.com/x"
    )
    assert found.to_json() == {
        "grace": "10m",
        "max_runtime": "30m",
        "deadline": "06:00",
        "ping": "https://hc-ping.com/x",
    }
    assert parse_expectations(found.to_json()) == (found, [])


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("grace", "-1m", "invalid grace '-1m': a duration cannot be negative"),
        ("max_runtime", "fast", "invalid max_runtime 'fast'"),
        ("max_runtime", "fast", "(or 'auto': a multiple of its own p95)"),
        ("max_runtime", 0, "invalid max_runtime 0: it must be longer than zero"),
        ("deadline", "25:00", "invalid deadline '25:00': a time of day is HH:MM or HH:MM:SS"),
        ("deadline", "6:0", "invalid deadline '6:0'"),
        ("deadline", "soon", "(or a time of day in the schedule's zone, like 06:00)"),
        ("ping", "ftp://x/y", "ping URL 'ftp://x/…' must be an http:// or https:// URL"),
        ("ping", "https://", "must be an http:// or https:// URL with a host"),
        ("ping", "https://h/a b", "ping URL must not contain spaces or control characters"),
        ("ping", "https://h/\x00", "ping URL contains a NUL character"),
        ("ping", 42, "ping must be a URL string, got int"),
    ],
)
def test_bad_expectations_are_one_line_each(field: str, value: object, message: str) -> None:
    found, problems = parse_expectations({field: value})
    assert len(problems) == 1 and "\n" not in problems[0]
    assert message in problems[0]
    assert found == Expectations()


def test_validation_reports_every_bad_expectation_with_its_key() -> None:
    decl = Declaration(
        key="k",
        spec="0 2 * * *",
        job="j",
        grace="x",
        max_runtime="-3s",
        deadline="99:99",
        ping="mailto:ops@example.com",
    )

    class Job:
        def check_arguments(self, args: object, kwargs: object) -> None: ...

    sched, problems = validate(decl, {"j": Job()})
    assert sched is None
    assert [p.key for p in problems] == ["k"] * 4
    assert [p.message.split(" ")[1] for p in problems[:3]] == ["grace", "max_runtime", "deadline"]


def test_max_runtime_auto_and_time_values() -> None:
    found, problems = parse_expectations(
        {"max_runtime": " Auto ", "deadline": time(6, 30, 15), "grace": 0}
    )
    assert problems == []
    assert found.max_runtime == "auto" and found.grace == timedelta(0)
    assert found.deadline == Deadline(at=time(6, 30, 15))
    assert found.to_json() == {"grace": "0s", "max_runtime": "auto", "deadline": "06:30:15"}


@pytest.mark.parametrize(
    ("spec", "grace"),
    [
        ("every 10s", timedelta(minutes=1)),  # at least a minute
        ("*/5 * * * *", timedelta(minutes=5)),  # one period
        ("every 90m", timedelta(hours=1)),  # at most an hour
        ("0 2 * * *", timedelta(hours=1)),
    ],
)
def test_default_grace_is_one_period_within_a_minute_and_an_hour(
    spec: str, grace: timedelta
) -> None:
    assert default_grace(parse_spec(spec)) == grace
    assert Expectations().late_after(parse_spec(spec)) == grace
    assert Expectations(grace=timedelta(seconds=3)).late_after(parse_spec(spec)) == timedelta(
        seconds=3
    )


def test_a_deadline_is_the_first_such_local_time_after_the_slot() -> None:
    six = Deadline(at=time(6))
    slot = datetime(2024, 1, 10, 1, 0, tzinfo=UTC)  # 02:00 in Paris
    assert six.instant(slot, PARIS) == datetime(2024, 1, 10, 5, 0, tzinfo=UTC)
    late_slot = datetime(2024, 1, 10, 6, 0, tzinfo=UTC)  # 07:00 in Paris: tomorrow's 06:00
    assert six.instant(late_slot, PARIS) == datetime(2024, 1, 11, 5, 0, tzinfo=UTC)
    # Summer time: 06:00 CEST is 04:00Z; on the day clocks change too.
    assert six.instant(datetime(2024, 3, 31, 0, tzinfo=UTC), PARIS) == datetime(
        2024, 3, 31, 4, tzinfo=UTC
    )
    assert Deadline(after=timedelta(hours=4)).instant(slot, PARIS) == slot + timedelta(hours=4)


def test_a_deadline_inside_a_dst_gap_is_the_first_instant_after_it() -> None:
    # 02:30 does not exist in New York on 2024-03-10: the deadline is 03:00 EDT (07:00Z).
    half_past_two = Deadline(at=time(2, 30))
    assert half_past_two.instant(datetime(2024, 3, 10, 5, 0, tzinfo=UTC), NEW_YORK) == datetime(
        2024, 3, 10, 7, 0, tzinfo=UTC
    )


def test_auto_runtime_limit_is_a_multiple_of_the_p95_once_known() -> None:
    auto = Expectations(max_runtime="auto")
    assert auto.runtime_limit([1.0, 2.0, 3.0, 4.0]) is None  # fewer than 5 runs: no limit yet
    durations = [10.0, 12.0, 11.0, 30.0, 13.0, 12.0]
    assert percentile(durations, 95) == 30.0
    assert auto.runtime_limit(durations) == timedelta(seconds=90)
    assert auto.runtime_limit([0.1] * 10) == AUTO_FLOOR
    fixed = Expectations(max_runtime=timedelta(minutes=30))
    assert fixed.runtime_limit([]) == timedelta(minutes=30)
    assert Expectations().runtime_limit(durations) is None
    assert percentile([], 50) == 0.0 and percentile([5.0, 1.0, 3.0], 50) == 3.0


def test_overrides_win_field_by_field_and_none_turns_one_off() -> None:
    code = Expectations(
        timedelta(minutes=10), timedelta(minutes=30), Deadline(at=time(6)), "https://a/x"
    )
    assert code.with_overrides(None) == code
    assert code.with_overrides({"grace": "1m"}).grace == timedelta(minutes=1)
    off = code.with_overrides({"max_runtime": None, "deadline": None, "grace": None})
    assert off == Expectations(None, None, None, "https://a/x")
    # A stored override that no longer parses is ignored, never raised.
    assert code.with_overrides({"grace": "nonsense"}) == code
    assert stored_expectations({"grace": "5m", "job": "x"}).grace == timedelta(minutes=5)
    assert stored_expectations({"grace": "bad"}) == Expectations()
    assert stored_expectations(None) == Expectations()


def test_ping_urls_are_shown_without_their_secret() -> None:
    assert redact("https://hc-ping.com/5f2c-uuid") == "https://hc-ping.com/…"
    assert redact("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"
    assert redact("https://h.example/?token=s") == "https://h.example/…"
