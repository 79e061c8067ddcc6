"""An app with limits for the CLI's tests (tests/cli/test_limits.py)."""

from onthedot import App

app = App(log_events=False)
app.limit("stripe", concurrency=20, rate="100/s")


@app.job(limits=["stripe"], concurrency=1, key="customer_id", name="charge")
def charge(customer_id: int, cents: int) -> None: ...
