"""Catch-up policies through the tick path: latest, all, none (grace), and the window."""

from __future__ import annotations

from datetime import timedelta

import pytest

from onthedot import App
from onthedot.testing import tick
from tests.scheduler.helpers import MakeApp, history, job_slots, row, utc

T0 = utc(2030, 1, 1)  # on the grid of every interval below


def s(seconds: int) -> timedelta:
    return timedelta(seconds=seconds)


def noop_app(make_app: MakeApp) -> App:
    app = make_app(T0)

    @app.job(name="noop")
    def noop() -> None:
        return None

    return app


def view(app: App, key: str) -> dict[str, object]:
    return next(v for v in app.schedules.views() if v["key"] == key)


def test_latest_enqueues_the_newest_and_counts_the_rest_as_coalesced(make_app: MakeApp) -> None:
    app = noop_app(make_app)
    app.schedule("k", "every 10s", "noop")  # catchup="latest" is the default
    assert tick(app) == []
    fired = tick(app, T0 + s(65))
    assert [f.slot for f in fired] == [T0 + s(60)]
    ledger = row(app, "k")
    assert (ledger.coalesced_total, ledger.missed_total) == (5, 0)
    assert (ledger.cursor, ledger.last_slot, ledger.last_outcome) == (
        T0 + s(60),
        T0 + s(60),
        "enqueued",
    )
    assert ledger.last_job_id == fired[0].job_id
    assert ledger.next_due_at == T0 + s(70)
    assert history(app, "k") == [(T0 + s(60), "enqueued")]  # coalesced slots are not rows
    assert view(app, "k")["coalesced"] == 5
    assert tick(app, T0 + s(69)) == []  # nothing more is due before 70


def test_all_enqueues_oldest_first_bounded_per_tick(make_app: MakeApp) -> None:
    app = noop_app(make_app)
    app.schedule("k", "every 10s", "noop", catchup="all", max_per_tick=3)
    tick(app)
    now = T0 + s(65)
    assert [f.slot for f in tick(app, now)] == [T0 + s(10), T0 + s(20), T0 + s(30)]
    assert row(app, "k").cursor == T0 + s(30)
    assert row(app, "k").next_due_at == T0 + s(40)  # already due: the next tick takes it
    assert [f.slot for f in tick(app, now)] == [T0 + s(40), T0 + s(50), T0 + s(60)]
    assert tick(app, now) == []
    assert job_slots(app, "k") == [T0 + s(10 * i) for i in range(1, 7)]
    assert (row(app, "k").coalesced_total, row(app, "k").missed_total) == (0, 0)


def test_all_default_bound_is_100_per_tick(make_app: MakeApp) -> None:
    app = noop_app(make_app)
    app.schedule("k", "every 1s", "noop", catchup="all")
    tick(app)
    now = T0 + s(250)
    sizes = [len(tick(app, now)) for _ in range(4)]
    assert sizes == [100, 100, 50, 0]
    assert job_slots(app, "k") == [T0 + s(i) for i in range(1, 251)]


def test_none_enqueues_only_slots_within_the_grace(make_app: MakeApp) -> None:
    app = noop_app(make_app)
    app.schedule("k", "every 10s", "noop", catchup="none", grace="15s")
    tick(app)
    fired = tick(app, T0 + s(65))
    # 50 is exactly one grace period late (still on time), 60 is 5 s late.
    assert [f.slot for f in fired] == [T0 + s(50), T0 + s(60)]
    ledger = row(app, "k")
    assert ledger.missed_total == 4
    assert (ledger.last_missed_from, ledger.last_missed_to) == (T0 + s(10), T0 + s(40))
    assert ledger.coalesced_total == 0


def test_none_with_the_default_grace_fires_a_slightly_late_slot(make_app: MakeApp) -> None:
    app = noop_app(make_app)
    app.schedule("k", "every 1h", "noop", catchup="none")
    tick(app)
    assert [f.slot for f in tick(app, T0 + s(3600 + 59))] == [T0 + s(3600)]
    assert tick(app, T0 + s(2 * 3600 + 61)) == []  # 61 s late: missed
    assert row(app, "k").missed_total == 1
    assert row(app, "k").last_missed_from == T0 + s(7200)


def test_window_counts_missed_slots_on_the_ledger(make_app: MakeApp) -> None:
    app = noop_app(make_app)
    app.schedule("k", "every 10s", "noop", catchup_window="1m")
    tick(app)
    fired = tick(app, T0 + s(300))
    assert [f.slot for f in fired] == [T0 + s(300)]
    ledger = row(app, "k")
    # Older than now - 1m (240): 10..230 missed; 240..290 coalesced into 300.
    assert ledger.missed_total == 23
    assert (ledger.last_missed_from, ledger.last_missed_to) == (T0 + s(10), T0 + s(230))
    assert ledger.coalesced_total == 6
    # A second outage adds to the total; the range shown is the most recent one.
    tick(app, T0 + s(600))
    ledger = row(app, "k")
    assert ledger.missed_total == 46
    assert (ledger.last_missed_from, ledger.last_missed_to) == (T0 + s(310), T0 + s(530))
    assert view(app, "k")["missed"] == 46


def test_window_with_all_starts_at_the_window_edge(make_app: MakeApp) -> None:
    app = noop_app(make_app)
    app.schedule("k", "every 1s", "noop", catchup="all", catchup_window="1h")
    tick(app)
    now = T0 + timedelta(days=400)
    fired = tick(app, now)
    assert [f.slot for f in fired] == [now - s(3600) + s(i) for i in range(100)]
    ledger = row(app, "k")
    assert ledger.missed_total == 400 * 86400 - 3600 - 1
    assert (ledger.last_missed_from, ledger.last_missed_to) == (T0 + s(1), now - s(3601))


def test_missed_slots_are_counted_arithmetically_across_dst(make_app: MakeApp) -> None:
    """A year of a six-field every-second cron in a DST zone: 31 million slots counted, not
    walked, and every real second counted once (wildcard specs fire in both occurrences)."""
    app = noop_app(make_app)
    app.schedule("k", "* * * * * *", "noop", timezone="Europe/Paris")
    tick(app)
    now = T0 + timedelta(days=365)
    assert [f.slot for f in tick(app, now)] == [now]
    ledger = row(app, "k")
    assert ledger.missed_total == 365 * 86400 - 86400 - 1
    assert ledger.coalesced_total == 86400


@pytest.mark.parametrize("policy", ["latest", "all"])
def test_window_zero_only_with_none(make_app: MakeApp, policy: str) -> None:
    app = noop_app(make_app)
    app.schedule("bad", "every 10s", "noop", catchup=policy, catchup_window="0s")
    app.schedule("good", "every 10s", "noop", catchup="none", catchup_window=0)
    report = app.schedules.check()
    assert [(p.key, p.level) for p in report.problems] == [("bad", "error")]
    assert "catchup_window can be zero only with catchup='none'" in report.problems[0].message
