"""Polling helpers the tests share: wait for a condition, read a job that must exist."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

from onthedot import App, Job

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T], what: str, timeout: float = 30.0, *, every: float = 0.02
) -> T:
    """Poll `predicate` every `every` seconds until it returns something truthy, and return
    that; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)
    return value


def get_job(app: App, job_id: int) -> Job:
    job = app.get_job(job_id)
    assert job is not None, f"job {job_id} vanished"
    return job
