"""When a rescuer takes a job (`domain.rescue.LeaseWatch`, issue 24 item 8): only once it has
itself seen the job's lease unrenewed for a whole lease on its own monotonic clock, so a step of
the wall clock alone never rescues a live worker's job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from onthedot.domain.rescue import Lease, LeaseWatch

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _lease(job_id: int, seconds: float) -> Lease:
    return Lease(job_id, T0 + timedelta(seconds=seconds))


def test_a_lease_is_due_once_seen_unchanged_for_a_whole_lease() -> None:
    watch = LeaseWatch(10.0)
    assert watch.next_due(0.0) is None and not watch.watching()
    assert watch.due([_lease(1, 0)], now=100.0) == []
    assert watch.next_due(100.0) == 110.0 and watch.watching()
    assert watch.due([_lease(1, 0)], now=109.9) == []
    assert watch.due([_lease(1, 0), _lease(2, 5)], now=110.0) == [_lease(1, 0)]
    # Job 1 is due already (not rescued yet: its lease had not ended by the database clock):
    # the next look is job 2's due instant, or the regular one.
    assert watch.next_due(110.0) == 120.0
    watch.forget([1])  # rescued
    assert watch.due([_lease(2, 5)], now=115.0) == []
    assert watch.due([_lease(2, 5)], now=120.0) == [_lease(2, 5)]
    assert watch.next_due(120.0) is None
    watch.forget([2, 3])
    assert not watch.watching()


def test_a_renewed_lease_starts_the_watch_again() -> None:
    watch = LeaseWatch(10.0)
    watch.due([_lease(1, 0)], now=100.0)
    assert watch.due([_lease(1, 3)], now=108.0) == []  # renewed: seen anew from 108
    assert watch.due([_lease(1, 3)], now=117.9) == []
    assert watch.due([_lease(1, 3)], now=118.0) == [_lease(1, 3)]


def test_a_lease_out_of_a_read_that_hit_its_limit_is_remembered() -> None:
    watch = LeaseWatch(10.0)
    watch.due([_lease(1, 0), _lease(2, 0)], now=100.0)
    # A read cut at its limit may leave out a lease that is still there: not forgotten.
    assert watch.due([_lease(1, 0)], now=105.0, complete=False) == []
    assert watch.due([_lease(2, 0)], now=110.0) == [_lease(2, 0)]
    watch.forget([2])  # rescued
    assert not watch.watching()  # job 1 was forgotten by the complete read


@given(
    renewals=st.lists(st.floats(min_value=0.01, max_value=3.33), min_size=1, max_size=40),
    step=st.floats(min_value=-3600, max_value=3600),
)
def test_a_live_worker_is_never_rescued_whatever_the_wall_clock_does(
    renewals: list[float], step: float
) -> None:
    """The holder renews at least every third of a lease (10 s); the rescuer reads after each
    renewal and between them; the stored ends (`until`) carry any wall-clock step."""
    watch = LeaseWatch(10.0)
    now = 1000.0
    for n, gap in enumerate(renewals):
        until = _lease(1, step + n * 7.0)
        assert watch.due([until], now=now) == []
        assert watch.due([until], now=now + gap) == []
        now += gap
