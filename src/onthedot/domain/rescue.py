"""Rescue policy: what becomes of a job whose worker stopped heartbeating (lease expired).

A worker that dies (a job called `os._exit`, a segfault, the kernel's OOM killer) takes every
job it held with it, the ones running beside the culprit and the ones it had claimed but not
started. Charging each of them an attempt would fail innocent jobs beside one poison job, and
handing them back together would have the same group claimed and killed again. So a job lost
from a shared claim is not charged (its execution is counted in `lost`, which extends its
allowance) and becomes `solo`: from then on a worker claims it only when it holds nothing else
(`claim_alone`), and that claim's attempt is charged. A poison job thus kills its worker alone
and fails within its `max_attempts`; its neighbours run again and succeed.
"""

from __future__ import annotations

from dataclasses import dataclass

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
