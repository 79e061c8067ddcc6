"""The numbers the overview and the workers page show: jobs by state and queue, workers alive,
schedules paused, late or invalid. Read through the App's verbs only; `/metrics` renders the
same rules (observability/metrics_db.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from onthedot.domain.jobs import QueueStats
from onthedot.domain.serving import Unserved, UnservedQueue
from onthedot.domain.serving import alive as worker_alive
from onthedot.domain.workers import WorkerRow
from onthedot.schedules.views import ScheduleView, is_late

if TYPE_CHECKING:
    from onthedot.app import App

STATES = ("queued", "running", "succeeded", "failed", "cancelled")


@dataclass(frozen=True, slots=True)
class Health:
    queues: list[QueueStats]
    workers: list[WorkerRow]
    schedules: list[ScheduleView]
    lease: float
    late_after: float
    now: datetime
    totals: dict[str, int] = field(default_factory=dict)
    unserved: list[Unserved | UnservedQueue] = field(default_factory=list)  # nobody runs these

    @classmethod
    def read(cls, app: App, now: datetime, late_after: float) -> Health:
        queues = app.queue_stats()
        totals = {s: sum(getattr(q, s) for q in queues) for s in STATES}
        totals["ready"] = sum(q.ready for q in queues)
        return cls(
            queues=queues,
            workers=app.operations.workers(),
            unserved=app.unserved_jobs(),
            schedules=app.schedules.views(),
            lease=app.lease,
            late_after=late_after,
            now=now,
            totals=totals,
        )

    def alive(self, worker: WorkerRow) -> bool:
        """A worker whose heartbeat is younger than the lease (after that its jobs are
        rescued by any other worker): `domain.serving.alive`."""
        return worker_alive(worker, self.lease)

    @property
    def alive_workers(self) -> list[WorkerRow]:
        return [w for w in self.workers if self.alive(w)]

    @property
    def stale_workers(self) -> list[WorkerRow]:
        return [w for w in self.workers if not self.alive(w)]

    @property
    def oldest_ready_age(self) -> float | None:
        ages = [q.oldest_ready_age for q in self.queues if q.oldest_ready_age is not None]
        return max(ages) if ages else None

    def late(self, view: ScheduleView) -> bool:
        return is_late(view, self.now, self.late_after)

    @property
    def late_schedules(self) -> list[ScheduleView]:
        return [v for v in self.schedules if self.late(v)]

    @property
    def paused_schedules(self) -> list[ScheduleView]:
        return [v for v in self.schedules if v.get("status") == "paused"]

    @property
    def invalid_schedules(self) -> list[ScheduleView]:
        return [v for v in self.schedules if v.get("status") == "invalid"]
