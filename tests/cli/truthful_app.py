"""The app of tests/cli/test_truthful.py: a job that always fails, one that waits until it is
cancelled, and a quick one. The database comes from --database."""

from __future__ import annotations

import asyncio

import onthedot

app = onthedot.App()


@app.job(name="boom", max_attempts=3, backoff=onthedot.Backoff(base=0, jitter=0))
def boom() -> None:
    raise RuntimeError("boom")


@app.job(name="waits")
async def waits() -> None:
    await asyncio.sleep(600)  # until cancelled (or the worker stops)


@app.job(name="quick")
def quick() -> str:
    return "done"
