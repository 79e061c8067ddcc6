from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from onthedot.domain.durations import SpecError, format_duration, parse_duration
from onthedot.domain.specs import SpecError as ReexportedSpecError

S = timedelta(seconds=1)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("30s", 30 * S),
        ("15m", 15 * 60 * S),
        ("2h", 2 * 3600 * S),
        ("1d", 86400 * S),
        ("1w", 7 * 86400 * S),
        ("1h30m", 5400 * S),
        ("1h 30m", 5400 * S),
        (" 1h30m ", 5400 * S),
        ("1 h 30 m", 5400 * S),
        ("1d2h3m4s", (86400 + 7200 + 180 + 4) * S),
        ("90", 90 * S),
        (" 90 ", 90 * S),
        ("1.5h", 5400 * S),
        ("0.5s", timedelta(milliseconds=500)),
        ("2 weeks", 14 * 86400 * S),
        ("3 days", 3 * 86400 * S),
        ("10 minutes", 600 * S),
        ("1 hour", 3600 * S),
        ("45 sec", 45 * S),
        ("1H30M", 5400 * S),
        (90, 90 * S),
        (1.5, timedelta(milliseconds=1500)),
        (0.1, timedelta(milliseconds=100)),
        (timedelta(minutes=5), 300 * S),
    ],
)
def test_parse_duration_valid(value: str | int | float | timedelta, expected: timedelta) -> None:
    assert parse_duration(value) == expected


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("abc", "use a number with a unit"),
        ("", "empty"),
        ("   ", "empty"),
        ("10x", "unknown unit 'x'"),
        ("1mo", "months and years have no fixed length"),
        ("1y", "months and years have no fixed length"),
        ("30m1h", "from the largest to the smallest"),
        ("1h1h", "from the largest to the smallest"),
        ("1h30", "use a number with a unit"),
        ("-5m", "negative"),
        ("0", "longer than zero"),
        ("0s", "longer than zero"),
        ("0.0000001s", "microsecond"),
        ("1e5", "unknown unit"),
        ("\uff11\uff10s", "use a number with a unit"),  # full-width digits
        (-1, "negative"),
        (0, "longer than zero"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        (1e300, "too long"),
        (10**20, "too long"),
        ("99999999999999w", "too long"),
        (True, "boolean"),
        (timedelta(seconds=-1), "negative"),
        (timedelta(0), "longer than zero"),
    ],
)
def test_parse_duration_invalid(value: object, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_duration(value)  # type: ignore[arg-type]
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert message.startswith("invalid duration ")


def test_message_names_value_and_what() -> None:
    with pytest.raises(SpecError) as info:
        parse_duration("abc", what="catch-up window")
    assert str(info.value) == (
        "invalid catch-up window 'abc': use a number with a unit like 30s, 15m, 2h or 1d"
    )


def test_message_is_one_line_for_multiline_input() -> None:
    with pytest.raises(SpecError) as info:
        parse_duration("1h\n2x")
    assert "\n" not in str(info.value)
    assert "\\n" in str(info.value)


def test_zero_only_when_allowed() -> None:
    assert parse_duration("0s", allow_zero=True) == timedelta(0)
    assert parse_duration(0, allow_zero=True) == timedelta(0)
    assert parse_duration(timedelta(0), allow_zero=True) == timedelta(0)
    with pytest.raises(SpecError):
        parse_duration("-1s", allow_zero=True)


def test_spec_error_is_shared() -> None:
    assert ReexportedSpecError is SpecError
    assert issubclass(SpecError, ValueError)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(seconds=90), "1m30s"),
        (timedelta(seconds=5400), "1h30m"),
        (timedelta(days=1), "1d"),
        (timedelta(days=14), "2w"),
        (timedelta(days=8, seconds=1), "1w1d1s"),
        (timedelta(seconds=30), "30s"),
        (timedelta(hours=25), "1d1h"),
        (timedelta(milliseconds=1500), "1.5s"),
        (timedelta(microseconds=1), "0.000001s"),
        (timedelta(0), "0s"),
        (timedelta(seconds=-90), "-1m30s"),
    ],
)
def test_format_duration(value: timedelta, text: str) -> None:
    assert format_duration(value) == text


@given(st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=10**6)))
def test_format_parse_round_trip(value: timedelta) -> None:
    assert parse_duration(format_duration(value)) == value


@given(
    st.one_of(
        st.text(),
        st.text(alphabet="0123456789.smhdw hoursecminuteday-+ ", max_size=20),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.timedeltas(),
    )
)
def test_parse_duration_raises_only_spec_error(value: str | int | float | timedelta) -> None:
    try:
        result = parse_duration(value)
    except SpecError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(result, timedelta)
        assert result > timedelta(0)
