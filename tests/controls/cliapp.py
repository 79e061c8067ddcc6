"""An app for CLI tests: `--app tests.controls.cliapp:make_app` builds a fresh one each time."""

from __future__ import annotations

import onthedot


def make_app() -> onthedot.App:
    app = onthedot.App(log_events=False)

    @app.job(name="work", runtime=True)
    def work(n: int = 0) -> int:
        return n

    app.schedule("declared", "* * * * *", work)
    return app
