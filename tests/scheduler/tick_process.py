"""A scheduler in a process of its own, for test_processes.py.

`python -m tests.scheduler.tick_process CONFIG_JSON`: builds the app the config describes,
prepares and syncs its scheduler at `start`, prints `ready`, waits for a line on stdin, then
ticks at each of `times` with a manual clock and prints `done N`.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

from onthedot import App, ManualClock


def main(config_text: str) -> None:
    config = json.loads(config_text)
    clock = ManualClock(config["start"])
    app = App(config["url"], clock=clock, log_events=False, lease=2.0, pool_size=2)
    app.job(name="work")(lambda: None)
    for key, text, zone in config["specs"]:
        app.schedule(key, text, "work", timezone=zone, catchup="all", catchup_window="1d")
    scheduler = app.scheduler(worker_id=f"process-{config['index']}")
    scheduler.prepare()
    scheduler.sync()
    print("ready", flush=True)
    sys.stdin.readline()
    ticks = 0
    for text in config["times"]:
        clock.set(datetime.fromisoformat(text))
        scheduler.tick()
        ticks += 1
    app.close()
    print(f"done {ticks}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
