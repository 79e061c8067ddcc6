"""The app of the schedule-health torture (`--app tests.torture.health_app:app`).

Configuration from the environment, so each worker process can differ:
- $ONTHEDOT_DATABASE_URL: the shared database; $ONTHEDOT_ALERT_WEBHOOK: the test's receiver;
- $ONTHEDOT_TEST_VERSION: 1 (default) registers `legacy.job`, which a runtime schedule of the
  test uses; 2 is the next deploy: it lacks `legacy.job` and declares one more schedule (so it
  is a newer code generation, which fences version 1);
- $ONTHEDOT_TEST_FLAGS: a folder; while its file `fail` exists `health.fail` raises, while
  `slow` exists `health.slow` runs 4 s (past its max_runtime of 2 s).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from onthedot import App


def _flag(name: str) -> bool:
    folder = os.environ.get("ONTHEDOT_TEST_FLAGS")
    return folder is not None and (Path(folder) / name).exists()


def make_app(database_url: str | None = None, version: int | None = None) -> App:
    version = version or int(os.environ.get("ONTHEDOT_TEST_VERSION", "1"))
    application = App(database_url, lease=2.0)

    @application.job(name="health.quick")
    def quick() -> None:
        return None

    @application.job(name="health.slow")
    def slow() -> None:
        if _flag("slow"):
            time.sleep(4.0)

    @application.job(name="health.fail", max_attempts=1)
    def fail() -> None:
        if _flag("fail"):
            raise RuntimeError("the report server said no")

    application.schedule("steady", "every 2s", quick, grace="3s")
    application.schedule("paused", "every 3s", quick, grace="2s")
    application.schedule("skipped", "every 5s", quick, grace="2s")
    application.schedule("overrun", "every 5s", slow, grace="3s", max_runtime="2s")
    application.schedule("fails", "every 4s", fail, grace="3s")
    if version == 1:

        @application.job(name="legacy.job", runtime=True)
        def legacy() -> None:
            return None

    else:

        @application.job(name="health.v2")
        def v2() -> None:
            return None

        application.schedule("v2-only", "every 1h", v2)
    return application


app = make_app()
