"""The worker: claim, execute, persist outcomes, heartbeat, stop gracefully.

`Worker` (lifecycle.py) composes the claimer, the executors, the completer and the keeper; it
takes a `WorkerDeps` (deps.py), never the App.

The names below are imported on first use: the supervisor and the command line import small
modules of this package (`channel`, `cpus`, `children`) without the whole worker, which an
`onthedot worker --burst` with nothing to do never needs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onthedot.worker.deps import RunnableJob, SchedulerFactory, SchedulerLike, WorkerDeps
    from onthedot.worker.lifecycle import Worker

__all__ = ["RunnableJob", "SchedulerFactory", "SchedulerLike", "Worker", "WorkerDeps"]

_WHERE = {
    "RunnableJob": "deps",
    "SchedulerFactory": "deps",
    "SchedulerLike": "deps",
    "WorkerDeps": "deps",
    "Worker": "lifecycle",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'onthedot.worker' has no attribute {name!r}")
    return getattr(importlib.import_module(f"onthedot.worker.{module}"), name)
