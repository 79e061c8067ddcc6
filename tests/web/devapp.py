"""An app for the `onthedot web` and `onthedot dev` process tests: the database comes from
$ONTHEDOT_DATABASE_URL; a schedule fires every second so `dev` has something to run."""

from __future__ import annotations

import onthedot

app = onthedot.App(log_events=False, lease=5.0)


@app.job(name="ping", schedule="every 1s", catchup="none")
def ping() -> str:
    return "pong"
