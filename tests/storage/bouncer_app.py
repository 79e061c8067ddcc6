"""The app of tests/storage/test_pgbouncer_unnamed.py: one no-op job, the database from
$ONTHEDOT_DATABASE_URL."""

from __future__ import annotations

import os

from onthedot import App

app = App(os.environ.get("ONTHEDOT_DATABASE_URL"))


@app.job(name="bouncer.noop")
def noop(i: int) -> int:
    return i
