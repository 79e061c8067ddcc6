"""Schedules: the declared registry, runtime schedules, operator controls, read views and the
scheduler, peers composed by the App (`app.schedules` is their facade)."""

from onthedot.schedules.audit import AuditTrail, default_actor
from onthedot.schedules.backfill import BACKFILL_BOUND, BackfillResult
from onthedot.schedules.controls import OperatorControls
from onthedot.schedules.facade import Schedules
from onthedot.schedules.registry import CheckReport, ScheduleRegistry
from onthedot.schedules.runtime import POLICY_FIELDS, RuntimeSchedules
from onthedot.schedules.scheduler import Scheduler
from onthedot.schedules.views import ScheduleViews

__all__ = [
    "BACKFILL_BOUND",
    "POLICY_FIELDS",
    "AuditTrail",
    "BackfillResult",
    "CheckReport",
    "OperatorControls",
    "RuntimeSchedules",
    "ScheduleRegistry",
    "ScheduleViews",
    "Scheduler",
    "Schedules",
    "default_actor",
]
