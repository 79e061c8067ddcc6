"""Bad timing input, fuzzed with hypothesis: the only exception the spec parsers may raise is
the documented validation error (`SpecError`, a `ValueError`), with a one-line message, and
`app.schedules.check()` reports problems instead of raising.

Covered: malformed cron (wrong field counts, junk tokens), out-of-range fields, `*/0` steps,
unknown time zones, zero and negative intervals and durations, jitter not shorter than the
period, and random declarations of every schedule option. Valid input must still parse, so a
parser that rejects everything fails here too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onthedot import App
from onthedot.domain.durations import SpecError, parse_duration
from onthedot.domain.specs import Spec, every, load_timezone, parse_spec

FIELD_RANGES = [(0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]  # seconds first
ZONES = sorted(available_timezones())
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=60),
    st.binary(max_size=20),
    st.timedeltas(min_value=timedelta(days=-5), max_value=timedelta(days=5)),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def rejected(call: Any, *args: Any) -> str:
    """Call; it must raise SpecError with one non-empty line. Return the message."""
    with pytest.raises(SpecError) as info:
        call(*args)
    message = str(info.value)
    assert message and "\n" not in message, repr(message)
    assert len(message) < 400, message  # hostile input is quoted short, never echoed whole
    return message


def only_spec_errors(call: Any, *args: Any) -> Any:
    """Call; it may succeed or raise SpecError (one line), nothing else."""
    try:
        return call(*args)
    except SpecError as exc:
        assert str(exc) and "\n" not in str(exc), repr(str(exc))
        return None


# -- cron -----------------------------------------------------------------------------------------
FIELD = st.one_of(
    st.just("*"),
    st.integers(0, 99).map(str),
    st.tuples(st.integers(0, 70), st.integers(0, 70)).map(lambda t: f"{t[0]}-{t[1]}"),
    st.integers(0, 30).map(lambda n: f"*/{n}"),
    st.sampled_from(["L", "LW", "5L", "5#3", "MON-FRI", "JAN", "?", "#", "/", ",", "-", "**"]),
)


@SETTINGS
@given(st.lists(FIELD, min_size=0, max_size=9))
def test_cron_of_any_shape_parses_or_raises_only_spec_error(fields: list[str]) -> None:
    spec = only_spec_errors(parse_spec, " ".join(fields))
    if len(fields) not in (5, 6):
        assert spec is None, f"{fields} has {len(fields)} fields yet parsed"
    elif spec is not None:
        assert isinstance(spec, Spec)
        spec.next_after(datetime(2025, 3, 9, tzinfo=UTC), ZoneInfo("America/New_York"))


@SETTINGS
@given(
    st.booleans(),
    st.integers(0, 5),
    st.data(),
)
def test_out_of_range_cron_fields_are_rejected(seconds: bool, index: int, data: Any) -> None:
    first = 0 if seconds else 1
    index = max(index, first)
    lo, hi = FIELD_RANGES[index]
    bad = data.draw(
        st.one_of(st.integers(hi + 1, hi + 1000), st.integers(0, lo - 1) if lo else st.nothing())
    )
    fields = ["*"] * 6
    fields[index] = data.draw(st.sampled_from([str(bad), f"{lo}-{bad}", f"{bad}/2", f"1,{bad}"]))
    text = " ".join(fields[first:])
    message = rejected(parse_spec, text)
    assert "cron" in message


@SETTINGS
@given(st.booleans(), st.integers(0, 5), st.sampled_from(["*/0", "0-59/0", "1/0", "*/00", "*/"]))
def test_zero_and_empty_steps_are_rejected(seconds: bool, index: int, step: str) -> None:
    first = 0 if seconds else 1
    fields = ["*"] * 6
    fields[max(index, first)] = step
    rejected(parse_spec, " ".join(fields[first:]))


def test_the_classic_mistakes_are_each_one_clear_line() -> None:
    for text in ("* * * *", "* * * * * * *", "60 * * * *", "* 24 * * *", "* * 32 * *",
                 "* * * 13 *", "* * * * 8", "*/0 * * * *", "61 * * * * *", "@reboot",
                 "@every 5m", "every", "every5m", "", "   ", "¼ * * * *"):  # fmt: skip
        rejected(parse_spec, text)


# -- time zones -----------------------------------------------------------------------------------
@SETTINGS
@given(
    st.one_of(
        st.text(max_size=80),
        st.sampled_from(
            [
                "../../etc/passwd",
                "/etc/localtime",
                "UTC\x00",
                "Europe/../UTC",
                "Nowhere/Atlantis",
                "utc ",
                "",
                "Europe/Paris" * 30,
            ]
        ),
        st.text(alphabet="\udc80\udcff/abcXYZ_", max_size=20),
        ANY_VALUE,
    )
)
def test_unknown_time_zones_raise_only_spec_error(name: Any) -> None:
    try:
        real = isinstance(name, str) and bool(name) and ZoneInfo(name).key == name
    except Exception:
        real = False
    if real:
        assert load_timezone(name).key == name
    else:
        rejected(load_timezone, name)


def test_every_known_zone_loads() -> None:
    assert all(load_timezone(name).key == name for name in ZONES)


# -- intervals and durations ---------------------------------------------------------------------
@SETTINGS
@given(
    st.one_of(st.integers(max_value=0), st.floats(max_value=0)),
    st.sampled_from(["s", "m", "h", "d", "w", " seconds", ""]),
)
def test_zero_and_negative_intervals_are_rejected(value: float, unit: str) -> None:
    rejected(parse_spec, f"every {value}{unit}")
    rejected(parse_spec, f"every -{abs(value) or 1}{unit}")
    rejected(every, value)
    rejected(every, timedelta(seconds=value) if abs(value) < 1e9 else -1)
    rejected(parse_duration, value)
    rejected(parse_duration, f"-{abs(value) or 5}{unit or 's'}")


@SETTINGS
@given(ANY_VALUE)
def test_parse_duration_raises_only_spec_error(value: Any) -> None:
    result = only_spec_errors(parse_duration, value)
    if result is not None:
        assert isinstance(result, timedelta) and result > timedelta(0)


@SETTINGS
@given(st.one_of(ANY_VALUE, st.text(alphabet="every 0123456789.smhdw-at:", max_size=30)))
def test_parse_spec_raises_only_spec_error_for_any_value(value: Any) -> None:
    spec = only_spec_errors(parse_spec, value)
    if spec is not None:
        assert parse_spec(spec.canonical()) == spec


# -- declarations ---------------------------------------------------------------------------------
def _app() -> App:
    app = App("sqlite:///:memory:", log_events=False)
    app.job(name="t.job")(lambda x=0: None)
    return app


@SETTINGS
@given(st.integers(1, 3600), st.integers(0, 7200))
def test_jitter_not_shorter_than_the_period_is_an_error(period: int, jitter: int) -> None:
    app = _app()
    app.schedule("k", f"every {period}s", "t.job", jitter=f"{jitter}s")
    report = app.schedules.check()
    if 0 < jitter < period:
        assert report.ok, report.render()
    else:
        assert not report.ok
        assert all(p.key == "k" for p in report.errors)
        assert "jitter" in report.render()
        with pytest.raises(Exception) as info:  # the documented ScheduleError
            app.schedules.declared()
        assert type(info.value).__name__ == "ScheduleError"


DECLARATION = st.fixed_dictionaries(
    {
        "spec": st.one_of(
            st.sampled_from(
                [
                    "every 1s",
                    "*/3 * * * * *",
                    "0 9 * * MON-FRI",
                    "@daily",
                    "every 2 weeks at 09:00",
                    "*/0 * * * *",
                    "every 0s",
                ]
            ),
            ANY_VALUE,
        ),
        "job": st.one_of(st.just("t.job"), ANY_VALUE),
    },
    optional={
        "args": ANY_VALUE,
        "kwargs": ANY_VALUE,
        "timezone": st.one_of(st.sampled_from(["UTC", "Europe/Paris", "Mars/Olympus"]), ANY_VALUE),
        "catchup": st.one_of(st.sampled_from(["latest", "all", "none"]), ANY_VALUE),
        "catchup_window": ANY_VALUE,
        "overlap": st.one_of(st.sampled_from(["allow", "skip", "serialize"]), ANY_VALUE),
        "jitter": ANY_VALUE,
        "queue": ANY_VALUE,
        "priority": ANY_VALUE,
        "grace": ANY_VALUE,
        "max_per_tick": ANY_VALUE,
    },
)


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "", "x" * 300]), DECLARATION), max_size=4))
def test_check_reports_problems_of_random_declarations_and_never_raises(
    declarations: list[tuple[str, dict[str, Any]]],
) -> None:
    app = _app()
    for key, options in declarations:
        options = dict(options)
        app.schedule(key, options.pop("spec"), options.pop("job"), **options)
    report = app.schedules.check()
    for problem in report.problems:
        assert "\n" not in str(problem) and problem.message, str(problem)
    assert report.checked == len(declarations)
    if report.ok:
        for sched in app.schedules.declared().values():
            sched.spec.next_after(datetime(2030, 1, 1, tzinfo=UTC), sched.tz)
    else:
        with pytest.raises(Exception) as info:
            app.schedules.declared()
        assert type(info.value).__name__ == "ScheduleError"
