"""Rescue policy: what becomes of a job whose worker stopped heartbeating (lease expired).

A worker that dies (a job called `os._exit`, a segfault, the kernel's OOM killer) takes every
job it held with it, the ones running beside the culprit and the ones it had claimed but not
started. Charging each of them an attempt would fail innocent jobs beside one poison job, and
handing them back together would have the same group claimed and killed again. So a job lost
from a shared claim is not charged (its execution is counted in `lost`, which extends its
allowance) and becomes `solo`: from then on a worker claims it only when it holds nothing else
(`claim_alone`), and that claim's attempt is charged. A poison job thus kills its worker alone
and fails within its `max_attempts`; its neighbours run again and succeed.

When a job is rescued is `LeaseWatch`'s rule: its lease ended by the database clock *and* the
rescuer saw it unrenewed for a whole lease on its own monotonic clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from onthedot.domain.jobs import JobState

WORKER_LOST = "WorkerLost: the worker running this job stopped heartbeating; lease expired"


@dataclass(frozen=True, slots=True)
class Rescue:
    state: JobState  # queued again, or failed
    lost: int  # added to the job's uncharged lost executions (0 or 1)
    solo: bool  # run alone from now on (a solo job stays solo)


def rescued_state(attempts: int, max_attempts: int) -> JobState:
    """A charged lost attempt: the job runs again while it has attempts left, and is failed once
    it has none (the same rule as a failure the worker saw itself)."""
    return JobState.FAILED if attempts >= max_attempts else JobState.QUEUED


def decide_rescue(attempts: int, max_attempts: int, lost: int, charged: bool) -> Rescue:
    """`attempts` counts every execution, `lost` those lost uncharged; `charged` tells whether
    this claim's attempt counts (a claim alone, or a storage caller that did not share it)."""
    if not charged:
        return Rescue(JobState.QUEUED, 1, True)
    return Rescue(rescued_state(attempts - lost, max_attempts), 0, False)


@dataclass(frozen=True, slots=True)
class Lease:
    """A running job's lease as a rescuer read it: `until` is the stored end, which every
    renewal changes."""

    job_id: int
    until: datetime


class LeaseWatch:
    """When a lease is rescued: not merely once the database clock says it ended, since a step of
    that clock (an NTP step, a VM resuming; on SQLite the host clock, read by each process)
    makes a live worker's leases look ended. A rescuer takes a job only once it has itself seen
    the job's lease unrenewed for a whole lease on its own monotonic clock (a live worker renews
    every third of a lease), and the database clock says it ended.

    So no clock step alone rescues a live worker's job, and no job is rescued sooner than a
    lease after the renewal the rescuer saw, which is what a worker proving its claims counts
    on (`worker/leases.py`). The watch starts half a lease before the end, by the database
    clock, so a dead worker's job is rescued one and a half to two leases after its last
    renewal. A rescuer's `now` must never run fast: its clock's `monotonic()`, which leaves out
    a suspended machine's sleep."""

    def __init__(self, lease: float) -> None:
        self.lease = lease
        self._seen: dict[int, tuple[datetime, float]] = {}  # job id -> (until, first seen)

    def due(self, leases: Sequence[Lease], now: float, *, complete: bool = True) -> list[Lease]:
        """Note `leases` (all the leases ending within half a lease, if `complete`; else only
        the first of them) as seen at monotonic `now`; return those seen unchanged for a
        whole lease."""
        previous = self._seen
        seen = {} if complete else dict(previous)
        due = []
        for lease in leases:
            before = previous.get(lease.job_id)
            since = before[1] if before is not None and before[0] == lease.until else now
            seen[lease.job_id] = (lease.until, since)
            if now - since >= self.lease:
                due.append(lease)
        self._seen = seen
        return due

    def forget(self, job_ids: Iterable[int]) -> None:
        """Stop watching these (rescued)."""
        for job_id in job_ids:
            self._seen.pop(job_id, None)

    def watching(self) -> bool:
        return bool(self._seen)

    def next_due(self, now: float) -> float | None:
        """The monotonic instant after `now` at which the next watched lease becomes due (one
        due already but not rescued, its lease not ended by the database clock yet, waits for
        the next regular look)."""
        later = [since + self.lease for _, since in self._seen.values() if since + self.lease > now]
        return min(later) if later else None
