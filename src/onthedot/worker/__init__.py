"""The worker: claim, execute, persist outcomes, heartbeat, stop gracefully.

`Worker` (lifecycle.py) composes the claimer, the executors, the completer and the keeper; it
takes a `WorkerDeps` (deps.py), never the App."""

from onthedot.worker.deps import RunnableJob, SchedulerFactory, SchedulerLike, WorkerDeps
from onthedot.worker.lifecycle import Worker

__all__ = ["RunnableJob", "SchedulerFactory", "SchedulerLike", "Worker", "WorkerDeps"]
