"""Every verb of the Storage protocol, written once; a backend adds its dialect, its
connections and the few operations its database does its own way."""

from __future__ import annotations

from onthedot.storage.sql.health import HealthVerbs
from onthedot.storage.sql.history import HistoryVerbs
from onthedot.storage.sql.jobs import JobVerbs
from onthedot.storage.sql.ledger import LedgerVerbs
from onthedot.storage.sql.limits import LimitVerbs
from onthedot.storage.sql.reads import ReadVerbs
from onthedot.storage.sql.workers import WorkerVerbs


class SqlStorage(
    JobVerbs, WorkerVerbs, ReadVerbs, LedgerVerbs, HistoryVerbs, HealthVerbs, LimitVerbs
):
    """The verbs' bodies over `self.d` (a Dialect) and the backend's connections."""
