"""An app whose limit is declared wrong: importing it fails (tests/cli/test_limits.py)."""

from onthedot import App

app = App(log_events=False)


@app.job(rate="ten", key="host")
def call_api(host: str) -> None: ...
