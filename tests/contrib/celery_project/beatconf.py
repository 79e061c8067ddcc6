"""A Celery app with a beat_schedule covering every kind of entry import-beat meets."""

from datetime import timedelta

from celery import Celery
from celery.schedules import crontab, schedule, solar

app = Celery("proj", broker="memory://")
app.conf.timezone = "Europe/Paris"


class Every5Minutes(schedule):
    """A custom schedule class."""


# A real solar schedule needs the `ephem` library; its class is what import-beat looks at.
sunrise = solar.__new__(solar)
sunrise.event = "sunrise"

app.conf.beat_schedule = {
    "report": {
        "task": "proj.tasks.report",
        "schedule": crontab(minute=0, hour=2),
        "args": ("daily", 3),
        "kwargs": {"fmt": "pdf"},
        "options": {"queue": "reports", "expires": 600},
    },
    "office-hours": {
        "task": "proj.tasks.poll",
        "schedule": crontab(minute="*/15", hour="9-17", day_of_week="mon-fri"),
    },
    "first-monday": {
        "task": "proj.tasks.poll",
        "schedule": crontab(minute=0, hour=8, day_of_month="1-7", day_of_week="mon"),
    },
    "heartbeat": {"task": "proj.tasks.ping", "schedule": 30.0},
    "sync": {"task": "proj.tasks.sync", "schedule": timedelta(minutes=90), "relative": True},
    "hourly": {"task": "proj.tasks.ping", "schedule": schedule(timedelta(hours=2))},
    "sunrise": {"task": "proj.tasks.ping", "schedule": sunrise},
    "custom": {"task": "proj.tasks.ping", "schedule": Every5Minutes(timedelta(minutes=5))},
    "priority": {"task": "proj.tasks.ping", "schedule": 60, "options": {"priority": 9}},
}
