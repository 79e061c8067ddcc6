"""The numbers the overview and `/metrics` share: jobs by state and queue, workers alive,
schedules paused, late or invalid. Read through the App's verbs only."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from onthedot.domain.jobs import QueueStats
from onthedot.domain.serving import Unserved, UnservedQueue
from onthedot.domain.serving import alive as worker_alive
from onthedot.storage.interface import WorkerRow
from onthedot.web.rendering import to_datetime

if TYPE_CHECKING:
    from onthedot.app import App
    from onthedot.schedules.views import ScheduleView

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
            workers=app.storage.list_workers(),
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


def is_late(view: ScheduleView, now: datetime, late_after: float) -> bool:
    """An active schedule whose next slot is overdue by more than `late_after` seconds: no
    worker running the scheduler is ticking it."""
    due = to_datetime(view.get("next_due_at"))
    return (
        view.get("status") == "active"
        and due is not None
        and (now - due).total_seconds() > late_after
    )


def prometheus(health: Health) -> str:
    """The Prometheus text exposition format (version 0.0.4)."""
    out: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            out.append(f"{name}{labels} {_num(value)}")

    metric(
        "onthedot_jobs",
        "gauge",
        "Jobs by queue and state.",
        [(_labels(queue=q.queue, state=s), getattr(q, s)) for q in health.queues for s in STATES],
    )
    metric(
        "onthedot_queue_ready",
        "gauge",
        "Queued jobs whose run time has come.",
        [(_labels(queue=q.queue), q.ready) for q in health.queues],
    )
    metric(
        "onthedot_queue_oldest_ready_age_seconds",
        "gauge",
        "Age of the oldest ready job of each queue (0 when none is ready).",
        [(_labels(queue=q.queue), q.oldest_ready_age or 0.0) for q in health.queues],
    )
    metric(
        "onthedot_queue_paused",
        "gauge",
        "1 when the queue is paused.",
        [(_labels(queue=q.queue), int(q.paused)) for q in health.queues],
    )
    metric(
        "onthedot_workers_alive",
        "gauge",
        "Workers heartbeating within the lease.",
        [("", len(health.alive_workers))],
    )
    metric(
        "onthedot_workers_stale",
        "gauge",
        "Registered workers past the lease.",
        [("", len(health.stale_workers))],
    )
    metric(
        "onthedot_schedules_paused",
        "gauge",
        "Schedules paused by an operator.",
        [("", len(health.paused_schedules))],
    )
    metric(
        "onthedot_schedules_late",
        "gauge",
        "Active schedules overdue (nobody ticking).",
        [("", len(health.late_schedules))],
    )
    metric(
        "onthedot_schedules_invalid",
        "gauge",
        "Schedules failing validation.",
        [("", len(health.invalid_schedules))],
    )
    metric(
        "onthedot_schedule_missed_total",
        "counter",
        "Slots a schedule missed (paused, or past its catch-up window).",
        [(_labels(schedule=v["key"]), v.get("missed") or 0) for v in health.schedules],
    )
    metric(
        "onthedot_schedules_missed_total",
        "counter",
        "Slots missed by all schedules.",
        [("", sum(v.get("missed") or 0 for v in health.schedules))],
    )
    return "\n".join(out) + "\n"


def _labels(**labels: str) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    return repr(float(value))
