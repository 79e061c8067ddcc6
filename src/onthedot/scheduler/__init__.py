"""Transitional: `worker/loop.py` imports its Scheduler from here until the worker is handed a
scheduler factory (`App.scheduler`). The scheduler itself is `onthedot.schedules.scheduler`."""

from onthedot.schedules.scheduler import Scheduler

__all__ = ["Scheduler"]
