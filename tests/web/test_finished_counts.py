"""`storage.finished_counts(since, bucket_seconds=...)`: the buckets the overview's charts draw, on
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from onthedot import App
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.storage.interface import WorkerInfo


def _noop() -> None:
    pass


def _finish(app: App, kinds: list[OutcomeKind], at: datetime) -> None:
    job = app.job(name="noop")(_noop)
    ids = job.enqueue_many([[] for _ in kinds], run_at=at)
    app.storage.at(at).register_worker(WorkerInfo("w", "h", 1, ("default",), 1))
    claimed = app.storage.at(at).claim_jobs("w", "default", len(ids), 60.0)
    outcomes = [Outcome(c.id, k) for c, k in zip(claimed, kinds, strict=True)]
    assert app.storage.at(at).finish_jobs("w", outcomes) == len(ids)


def test_buckets_of_any_size(app: App) -> None:
    base = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)
    _finish(app, [OutcomeKind.SUCCEEDED] * 2 + [OutcomeKind.FAILED], base + timedelta(seconds=5))
    _finish(app, [OutcomeKind.SUCCEEDED], base + timedelta(minutes=1, seconds=30))
    _finish(app, [OutcomeKind.CANCELLED], base + timedelta(hours=1, minutes=10))
    since = base - timedelta(hours=1)
    hourly = app.storage.finished_counts(since=since)
    assert sorted(hourly) == [
        (base, "failed", 1),
        (base, "succeeded", 3),
        (base + timedelta(hours=1), "cancelled", 1),
    ]
    minutes = app.storage.finished_counts(since=since, bucket_seconds=60)
    assert sorted(minutes) == [
        (base, "failed", 1),
        (base, "succeeded", 2),
        (base + timedelta(minutes=1), "succeeded", 1),
        (base + timedelta(hours=1, minutes=10), "cancelled", 1),
    ]
    assert app.storage.finished_counts(since=base + timedelta(hours=2)) == []
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="bucket_seconds"):
            app.storage.finished_counts(since=since, bucket_seconds=bad)  # type: ignore[arg-type]


def test_incremental_throughput_equals_a_full_read(app: App) -> None:
    """The overview reads finished minutes once, then only the new ones: its counts must stay
    equal to a full read of the day as jobs keep finishing."""
    from onthedot.web.throughput import Throughput

    now = datetime.now(UTC).replace(microsecond=0)
    reader = Throughput()

    def full(at: datetime) -> list[tuple[datetime, str, int]]:
        start = datetime.fromtimestamp((int(at.timestamp()) // 60 * 60) - 86400 + 60, UTC)
        return sorted(app.storage.finished_counts(since=start, bucket_seconds=60))

    _finish(app, [OutcomeKind.SUCCEEDED] * 2, now - timedelta(minutes=30))
    _finish(app, [OutcomeKind.FAILED], now - timedelta(hours=25))  # outside the day
    _finish(app, [OutcomeKind.FAILED], now)
    assert sorted(reader.counts(app.storage, now)) == full(now)
    assert sum(n for _, _, n in reader.counts(app.storage, now)) == 3
    _finish(app, [OutcomeKind.SUCCEEDED, OutcomeKind.CANCELLED], now)
    assert sorted(reader.counts(app.storage, now)) == full(now)
    later = now + timedelta(minutes=7)
    _finish(app, [OutcomeKind.SUCCEEDED], later)
    assert sorted(reader.counts(app.storage, later)) == full(later)
    assert sum(n for _, _, n in reader.counts(app.storage, later)) == 6
