"""The app of tests/cli/test_newuser.py, as a new user would write one: a job on its own queue,
the docs' `invoice_run` (reading its slot), a sub-minute schedule and a job that fails once.
The database comes from --database / $ONTHEDOT_DATABASE_URL."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import onthedot

app = onthedot.App()


@app.job(name="mail.send", queue="mail", runtime=True)
def send(to: str) -> str:
    return f"sent to {to}"


@app.job(name="billing.invoice_run", schedule="0 6 1 * *", timezone="Europe/Paris")
def invoice_run() -> dict[str, object]:
    ctx = onthedot.current_job()
    assert ctx.slot is not None and ctx.schedule_key is not None
    period = ctx.slot.astimezone(ZoneInfo("Europe/Paris")).strftime("%Y-%m")
    return {
        "period": period,
        "idempotency_key": f"{ctx.schedule_key}:{ctx.slot.isoformat()}",
        "manual": ctx.manual,
    }


@app.job(name="fast", schedule="*/20 * * * * *")
def fast() -> None: ...


@app.job(name="flaky", max_attempts=2, backoff=onthedot.Backoff(base=0.01, jitter=0.5))
def flaky() -> None:
    if onthedot.current_job().attempt == 1:
        raise RuntimeError("first attempt fails")
