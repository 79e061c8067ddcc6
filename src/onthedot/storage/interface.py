"""The storage contract: `Storage`, every role's verbs over one database (the roles are in
storage/roles.py, schedule health's in storage/health.py, flow control's in storage/limits.py),
and the records they take and return (storage/records.py, re-exported here). Every backend
implements it all and passes the conformance suite in `tests/storage/contract/`; a consumer
depends on the roles it uses."""

from __future__ import annotations

from typing import Protocol

from onthedot.domain.workers import WorkerInfo, WorkerRow
from onthedot.storage.health import HealthStorage
from onthedot.storage.limits import LimitStorage
from onthedot.storage.records import (
    KEEP,
    CallerConnection,
    EnqueuedSlot,
    Keep,
    OperatorPatch,
    Renewal,
    RescuedJob,
    SyncTransaction,
    TickResult,
    TickTransaction,
)
from onthedot.storage.roles import (
    AdminReads,
    Claiming,
    JobStore,
    LedgerStore,
    Lifecycle,
    WorkerStore,
)

__all__ = [
    "KEEP",
    "AdminReads",
    "CallerConnection",
    "Claiming",
    "EnqueuedSlot",
    "JobStore",
    "Keep",
    "LedgerStore",
    "Lifecycle",
    "LimitStorage",
    "OperatorPatch",
    "Renewal",
    "RescuedJob",
    "Storage",
    "SyncTransaction",
    "TickResult",
    "TickTransaction",
    "WorkerInfo",
    "WorkerRow",
    "WorkerStore",
]


class Storage(
    Lifecycle,
    JobStore,
    Claiming,
    WorkerStore,
    AdminReads,
    LedgerStore,
    HealthStorage,
    LimitStorage,
    Protocol,
):
    """Every verb over one database. Thread-safe."""
