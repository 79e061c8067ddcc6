"""The project's onthedot App: its own jobs and schedules, one of them running a Django task."""

import onthedot
from onthedot.contrib.django import schedule_task

app = onthedot.App(log_events=False)

schedule_task(
    app, "nightly-orders", "0 2 * * *", "shop.tasks.count_orders", timezone="Europe/Paris"
)


@app.job
def ping() -> str:
    return "pong"
