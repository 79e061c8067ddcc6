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

$ONTHEDOT_TEST_SCHEDULES=N declares N schedules `s0`... `every 1s` (catch-up "all", a one-hour
window) whose jobs go to the queue `slots`, which no worker of these tests serves. With
$ONTHEDOT_TEST_FREEZE_TICK=PATH, the process stops itself (SIGSTOP) inside the first tick
transaction that holds due rows once the file PATH exists (deleting it): frozen mid-tick, its
rows locked, as a paused VM or a swap storm would leave it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from onthedot import App
from onthedot.schedules.scheduler import Scheduler


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


def slot() -> None:
    """A scheduled job (never run in these tests: its queue has no worker)."""


def freeze_inside_ticks(trigger: Path) -> None:
    """Once `trigger` exists, the next tick that locked due rows stops this process before it
    decides (inside its transaction). A test hook of this app only."""
    decide = Scheduler._decide

    def deciding(self: Scheduler, now: Any, rows: Iterable[Any]) -> Any:
        rows = list(rows)
        if rows and trigger.exists():
            trigger.unlink()
            os.kill(os.getpid(), signal.SIGSTOP)
        return decide(self, now, rows)

    Scheduler._decide = deciding  # type: ignore[method-assign]


def make_app(database_url: str | None = None) -> App:
    application = App(database_url, lease=float(os.environ.get("ONTHEDOT_TEST_LEASE", "2")))
    application.job(name="hostile.deep", max_attempts=3)(deep)
    application.job(name="hostile.adeep", max_attempts=3)(adeep)
    application.job(name="hostile.meet", max_attempts=1)(meet)
    application.job(name="hostile.note", max_attempts=3)(note)
    slot_job = application.job(name="hostile.slot", queue="slots")(slot)
    for i in range(int(os.environ.get("ONTHEDOT_TEST_SCHEDULES", "0") or 0)):
        application.schedule(f"s{i}", "every 1s", slot_job, catchup="all", catchup_window="1h")
    if os.environ.get("ONTHEDOT_TEST_FREEZE_TICK"):
        freeze_inside_ticks(Path(os.environ["ONTHEDOT_TEST_FREEZE_TICK"]))
    return application


app = make_app()
