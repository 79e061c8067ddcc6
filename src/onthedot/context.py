"""The running job's context, readable from inside the job function."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class JobContext:
    """Who am I: the job's id, attempt, queue and, for scheduled jobs, the schedule key and the
    slot instant (use it to make side effects idempotent). A "run now" (`schedules trigger`)
    carries the instant it was asked for as its slot, with `manual` True."""

    job_id: int
    name: str
    attempt: int
    max_attempts: int
    queue: str
    schedule_key: str | None
    slot: datetime | None
    worker_id: str
    _cancelled: Callable[[], bool]
    manual: bool = False  # an operator's "run now", not a slot of the spec

    @property
    def cancel_requested(self) -> bool:
        """True once an operator asked to cancel this running job (checked at each heartbeat)."""
        return self._cancelled()


_current: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar(
    "onthedot_job", default=None
)


def current_job() -> JobContext:
    """The context of the job running in this thread or task. Raises outside a job."""
    ctx = _current.get()
    if ctx is None:
        raise RuntimeError("current_job() called outside a running onthedot job")
    return ctx


def set_current(ctx: JobContext | None) -> contextvars.Token[JobContext | None]:
    return _current.set(ctx)


def reset_current(token: contextvars.Token[JobContext | None]) -> None:
    _current.reset(token)
