"""A worker's keeper on a real storage of both backends, for tests of its turns."""

from __future__ import annotations

from datetime import timedelta

from onthedot import SystemClock
from onthedot.clock import Clock
from onthedot.domain.retention import Retention
from onthedot.observability.events import EventBus
from onthedot.storage.interface import Storage
from onthedot.worker.maintenance import PRUNE_STEP, DatabaseBackoff, Keeper
from onthedot.worker.state import Flags, Pipeline, RunningJobs


def keeper(
    storage: Storage,
    *,
    worker_id: str,
    lease: float,
    pipeline: Pipeline | None = None,
    events: EventBus | None = None,
    clock: Clock | None = None,
    retention: Retention | timedelta = timedelta(days=7),
    prune_step: int = PRUNE_STEP,
) -> Keeper:
    """A keeper whose turns the test calls itself (no thread)."""
    events = events or EventBus()
    flags = Flags()
    return Keeper(
        worker_id=worker_id,
        storage=storage,
        clock=clock or SystemClock(),
        events=events,
        lease=lease,
        retention=retention,
        pipeline=pipeline or Pipeline(max_inflight=1),
        running=RunningJobs(),
        flags=flags,
        backoff=DatabaseBackoff(events, flags),
        enforce_timeouts=lambda now: None,
        refresh_paused=lambda now: None,
        prune_step=prune_step,
    )
