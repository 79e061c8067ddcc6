"""`/metrics`: the Prometheus text format, with the numbers the App reports."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from onthedot import App
from onthedot.storage.interface import WorkerInfo
from onthedot.testing import drain, tick
from tests.web.helpers import TestClient

SAMPLE = re.compile(r"^([a-z_]+)(\{[^}]*\})? (-?[0-9.e+-]+|NaN)$")


def _samples(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        found = SAMPLE.match(line)
        assert found, f"not a Prometheus sample: {line!r}"
        out[found.group(1) + (found.group(2) or "")] = float(found.group(3))
    return out


def test_metrics(app: App, client: TestClient) -> None:
    app.enqueue("echo", 1)
    app.enqueue("explode", "x")
    drain(app)
    app.resolve("echo").enqueue_with([2], queue='we"ird\\q')
    app.storage.set_queue_paused('we"ird\\q', True, "ops")
    app.schedule("a", "* * * * *", "echo")
    app.schedule("b", "* * * * *", "echo")
    past = datetime.now(UTC) - timedelta(hours=2)
    tick(app, past)
    app.schedules.pause("b", actor="ops")
    app.storage.register_worker(WorkerInfo("w-live", "h", 1, ("default",), 1))
    app.storage.at(past).register_worker(WorkerInfo("w-old", "h", 2, ("default",), 1))
    page = client.get("/metrics")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = _samples(page.text)
    assert samples['onthedot_jobs{queue="default",state="succeeded"}'] == 1
    assert samples['onthedot_jobs{queue="default",state="failed"}'] == 1
    weird = 'queue="we\\"ird\\\\q"'
    assert samples[f'onthedot_jobs{{{weird},state="queued"}}'] == 1
    assert samples[f"onthedot_queue_ready{{{weird}}}"] == 1
    assert samples[f"onthedot_queue_paused{{{weird}}}"] == 1
    assert samples[f"onthedot_queue_oldest_ready_age_seconds{{{weird}}}"] >= 0
    assert samples["onthedot_workers_alive"] == 1
    assert samples["onthedot_workers_stale"] == 1
    assert samples["onthedot_schedules_paused"] == 1
    assert samples["onthedot_schedules_late"] == 1  # "a": nobody ticked it for two hours
    missed = sum(v["missed"] for v in app.schedules.views())
    assert samples["onthedot_schedules_missed_total"] == missed
    assert page.text.count("# TYPE ") == page.text.count("# HELP ")
