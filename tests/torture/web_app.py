"""The app the web-security torture tests serve with `onthedot web`: its database comes from
$ONTHEDOT_DATABASE_URL, and its events are logged (failed logins show up in the output)."""

from __future__ import annotations

import onthedot

app = onthedot.App(lease=5.0)


@app.job(name="ping", runtime=True)
def ping() -> str:
    return "pong"
