"""Moving a Celery beat schedule to onthedot: a Celery app as you may have it today.

pip install celery
onthedot import-beat examples.celery_beat:celery_app

prints the `app.schedule(...)` lines to paste into the module that defines your onthedot App,
and one comment line for each entry with no onthedot equivalent (see docs/migrating.md).
Nothing is written or enqueued, and no broker is contacted.
"""

from __future__ import annotations

from datetime import timedelta

from celery import Celery
from celery.schedules import crontab

celery_app = Celery("shop", broker="memory://")
celery_app.conf.timezone = "Europe/Paris"
celery_app.conf.beat_schedule = {
    "nightly-report": {
        "task": "shop.tasks.report",
        "schedule": crontab(minute=30, hour=2),
        "args": ("daily",),
        "options": {"queue": "reports"},
    },
    "weekday-sync": {
        "task": "shop.tasks.sync",
        "schedule": crontab(minute="*/15", hour="9-17", day_of_week="mon-fri"),
    },
    "heartbeat": {"task": "shop.tasks.ping", "schedule": 30.0},
    "cleanup": {"task": "shop.tasks.cleanup", "schedule": timedelta(hours=6)},
}
