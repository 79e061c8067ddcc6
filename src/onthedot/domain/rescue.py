"""Rescue policy: what becomes of a job whose worker stopped heartbeating (lease expired)."""

from __future__ import annotations

from onthedot.domain.jobs import JobState

WORKER_LOST = "WorkerLost: the worker running this job stopped heartbeating; lease expired"


def rescued_state(attempts: int, max_attempts: int) -> JobState:
    """A rescued job runs again while it has attempts left (the lost attempt counts), and is
    failed once it has none: the same rule as a failure the worker saw itself."""
    return JobState.FAILED if attempts >= max_attempts else JobState.QUEUED
