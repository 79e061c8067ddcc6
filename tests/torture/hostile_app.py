"""The app the hostile-environment torture tests run in real worker processes
(`python -m onthedot --app tests.torture.hostile_app:app worker`).

Configuration comes from the environment: $ONTHEDOT_DATABASE_URL (the database) and
$ONTHEDOT_TEST_LEASE (the lease in seconds, default 2). Jobs:
- `hostile.deep(depth)` / `hostile.adeep(depth)`: return a list nested `depth` levels deep
  (sync / async);
- `hostile.meet(folder, n)`: succeeds only while another `meet` job of the same folder runs at
  the same time (each writes its file and waits for the other's): proof of two live threads;
- `hostile.note(folder, n, ms=0)`: sleeps `ms` milliseconds, appends `n` and its pid to
  `folder/runs` (one line per execution, so a job run twice shows up twice), returns `n`.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from onthedot import App


def deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep(depth: int) -> list[Any]:
    return deep_list(depth)


async def adeep(depth: int) -> list[Any]:
    await asyncio.sleep(0)
    return deep_list(depth)


def meet(folder: str, n: int) -> str:
    here = Path(folder)
    (here / f"meet-{n}").touch()
    deadline = time.monotonic() + 30
    while len(list(here.glob("meet-*"))) < 2:
        if time.monotonic() > deadline:
            raise RuntimeError("no other executor thread ran the other meet job")
        time.sleep(0.01)
    return "met"


def note(folder: str, n: int, ms: int = 0) -> int:
    time.sleep(ms / 1000)
    with (Path(folder) / "runs").open("a") as handle:
        handle.write(f"{n} {os.getpid()}\n")
    return n


def make_app(database_url: str | None = None) -> App:
    application = App(database_url, lease=float(os.environ.get("ONTHEDOT_TEST_LEASE", "2")))
    application.job(name="hostile.deep", max_attempts=3)(deep)
    application.job(name="hostile.adeep", max_attempts=3)(adeep)
    application.job(name="hostile.meet", max_attempts=1)(meet)
    application.job(name="hostile.note", max_attempts=3)(note)
    return application


app = make_app()
