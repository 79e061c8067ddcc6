"""Beat entries written the ways Celery accepts that cron does not: full day and month names,
an interval `schedule(..., relative=True)`, and names that try to break out of a comment."""

from datetime import timedelta

from celery import Celery
from celery.schedules import crontab, schedule

app = Celery("names", broker="memory://")
app.conf.timezone = "UTC"

INJECTED = "\nimport builtins; builtins.ONTHEDOT_PWNED = True\n"

app.conf.beat_schedule = {
    "sundays": {"task": "proj.tasks.ping", "schedule": crontab(minute=0, day_of_week="sunday")},
    "two-days": {
        "task": "proj.tasks.ping",
        "schedule": crontab(minute=0, hour=9, day_of_week="Monday,friday"),
    },
    "midweek": {
        "task": "proj.tasks.ping",
        "schedule": crontab(minute=0, day_of_week="tuesday-thursday"),
    },
    "new-year": {
        "task": "proj.tasks.ping",
        "schedule": crontab(minute=0, hour=0, day_of_month=1, month_of_year="january"),
    },
    "aligned": {"task": "proj.tasks.ping", "schedule": schedule(timedelta(hours=1), relative=True)},
    f"name{INJECTED}": {"task": "proj.tasks.ping", "schedule": 60, "options": {"expires": 5}},
    "option-key": {"task": "proj.tasks.ping", "schedule": 60, "options": {f"k{INJECTED}": 1}},
    f"skipped{INJECTED}": {"task": "proj.tasks.ping", "schedule": 0.5},
}
