"""A user's tasks module, as the deploy files expect it: an App with a job."""

from __future__ import annotations

import os

import onthedot

app = onthedot.App()


@app.job(name="myproject.work")
def work(n: int) -> int:
    """Returns the process id, so that a test sees which worker process ran it."""
    return os.getpid() + 0 * n
