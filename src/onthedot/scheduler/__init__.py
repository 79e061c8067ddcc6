"""Transitional: `worker/loop.py` builds its scheduler through here until the worker is handed
a scheduler factory (`App.scheduler`). The scheduler itself is `onthedot.schedules.scheduler`.
Delete this package once nothing imports `onthedot.scheduler`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from onthedot.schedules.scheduler import Scheduler as _Scheduler


class _SchedulerFactory(Protocol):
    """What `App.scheduler` is: the worker passes its App here as the factory's owner."""

    def scheduler(
        self, *, worker_id: str = ..., stopping: threading.Event | None = None
    ) -> _Scheduler: ...


def Scheduler(
    app: _SchedulerFactory, *, worker_id: str, stopping: threading.Event | None = None
) -> _Scheduler:
    return app.scheduler(worker_id=worker_id, stopping=stopping)
