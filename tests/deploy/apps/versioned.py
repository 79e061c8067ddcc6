"""Two versions of one app, chosen by $ONTHEDOT_TEST_VERSION, for rolling-deploy tests.

v1 declares `report` every 2 s and `legacy` every 2 s. v2 changes `report` to every 3 s and
removes `legacy`. Each job records which version ran it.
"""

from __future__ import annotations

import os

import onthedot

VERSION = int(os.environ.get("ONTHEDOT_TEST_VERSION", "1"))
app = onthedot.App(lease=float(os.environ.get("ONTHEDOT_TEST_LEASE", "2")))


@app.job(name="deploy.report")
def report() -> dict[str, int]:
    return {"version": VERSION}


if VERSION == 1:
    app.schedule("report", "every 2s", report)
    app.schedule("legacy", "every 2s", report)
else:
    app.schedule("report", "every 3s", report)
