"""onthedot: background jobs and recurring schedules that fire on the dot, exactly once per slot.

Public API re-exports only; importing onthedot does no I/O.
"""

from onthedot.app import App
from onthedot.clock import ManualClock, SystemClock
from onthedot.context import JobContext, current_job
from onthedot.domain.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    InvalidJobState,
    JobNotFound,
    JobNotRegistered,
    JobTimeout,
    OnthedotError,
    ScheduleError,
    SchemaOutOfDate,
    WorkerLost,
)
from onthedot.domain.jobs import Job, JobAction, JobFilter, JobState
from onthedot.domain.retry import Backoff
from onthedot.domain.specs import SpecError, calendar, every
from onthedot.jobs import JobFunction

__version__ = "0.1.0"

__all__ = [
    "App",
    "Backoff",
    "ConfigurationError",
    "DatabaseUnavailable",
    "InvalidJobState",
    "Job",
    "JobAction",
    "JobContext",
    "JobFilter",
    "JobFunction",
    "JobNotFound",
    "JobNotRegistered",
    "JobState",
    "JobTimeout",
    "ManualClock",
    "OnthedotError",
    "ScheduleError",
    "SchemaOutOfDate",
    "SpecError",
    "SystemClock",
    "WorkerLost",
    "__version__",
    "calendar",
    "current_job",
    "every",
]
