"""Two versions of one app for the removal torture (`--app tests.torture.removal_app:app`).

$ONTHEDOT_TEST_VERSION picks the code: version 1 declares `gone` and `stays`; version 2
removes `gone` (and its job function) and adds `fresh`. Slot jobs of `gone` and `fresh` go to
the queue `parked`, which the workers of the test do not serve (`-q default`), so every one is
still queued to be counted.
$ONTHEDOT_TEST_KEEP_REMOVED=1 builds the app with `keep_removed_jobs=True`.
"""

from __future__ import annotations

import os

from onthedot import App


def make_app(database_url: str | None = None, version: int | None = None) -> App:
    version = version or int(os.environ.get("ONTHEDOT_TEST_VERSION", "1"))
    keep = os.environ.get("ONTHEDOT_TEST_KEEP_REMOVED") == "1"
    options = {"keep_removed_jobs": True} if keep else {}
    application = App(database_url, lease=2.0, **options)

    @application.job(name="removal.stays")
    def stays() -> None:
        return None

    application.schedule("stays", "every 1s", stays)
    if version == 1:

        @application.job(name="removal.gone")
        def gone() -> None:
            return None

        application.schedule("gone", "every 1s", gone, queue="parked", catchup="all")
    else:

        @application.job(name="removal.fresh")
        def fresh() -> None:
            return None

        application.schedule("fresh", "every 1s", fresh, queue="parked", catchup="all")
    return application


app = make_app()
