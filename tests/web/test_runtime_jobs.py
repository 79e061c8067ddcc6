"""Issue 24 item 1: the web admin must not run shell commands. A runtime schedule fires only a
job its code opened with `@app.job(runtime=True)`, never `onthedot.command`: over real HTTP
(the admin's forms, forged posts, "run now" on a row an older version stored), on SQLite and
PostgreSQL. Before the fix the forged form made a worker run `touch PWNED`."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from onthedot import App, JobFilter
from onthedot.domain.definitions import COMMAND_JOB, Declaration, validate
from onthedot.domain.ledger import LedgerRow
from onthedot.testing import drain, tick
from tests.web.helpers import TestClient, flashes, post

_SELECT = re.compile(r'<select name="job"[^>]*>(.*?)</select>', re.S)
_OPTION = re.compile(r'<option value="([^"]*)"')


def _job_choices(html: str) -> list[str]:
    found = _SELECT.search(html)
    assert found, "no job select in the form"
    return [v for v in _OPTION.findall(found.group(1)) if v]


def _command_jobs(app: App) -> int:
    return len(app.list_jobs(JobFilter(name=COMMAND_JOB, limit=100)))


def store_as_an_older_version(app: App, key: str, command: str) -> None:
    """A runtime schedule of `command` written the way a version before this rule stored one
    (the row itself, without today's validation)."""
    sched, problems = validate(
        Declaration(key=key, spec="every 1h", job=None, command=command, shell=True), app.jobs
    )
    assert sched is not None, problems
    sched = replace(sched, source="dynamic")
    now = datetime.now(UTC).replace(microsecond=0)
    app.storage.upsert_dynamic(
        LedgerRow(
            key=key,
            source="dynamic",
            fingerprint=sched.fingerprint,
            spec=sched.spec.canonical(),
            timezone=sched.timezone,
            cursor=now - timedelta(hours=2),
            next_due_at=now - timedelta(hours=1),
            definition=sched.definition_json(),
            repaired_reason="created",
        )
    )


def test_the_form_offers_only_jobs_open_to_runtime_schedules(app: App, client: TestClient) -> None:
    page = client.get("/schedules")
    assert _job_choices(page.text) == ["echo"]  # not `explode`, never `onthedot.command`
    app.schedules.create("rt", "@hourly", "echo")
    edit = client.get("/schedules/rt")
    assert _job_choices(edit.text) == ["echo"]


def test_a_forged_command_schedule_is_refused_and_nothing_runs(
    app: App, client: TestClient, tmp_path: Path
) -> None:
    pwned = tmp_path / "PWNED"
    forged = {
        "key": "pwn",
        "spec": "every 1h",
        "job": COMMAND_JOB,
        "args": f'["touch {pwned}"]',
        "kwargs": '{"shell": true}',
    }
    page = post(client, "/schedules/create", forged)
    [(kind, message)] = flashes(page.text)
    assert kind == "error"
    assert message == (
        "schedule 'pwn' is invalid: a runtime schedule cannot run shell commands "
        "(onthedot.command): declare command schedules in code, app.schedule(key, spec, "
        "command=...)"
    )
    refused = post(client, "/schedules/create", {**forged, "job": "explode", "args": "[]"})
    assert flashes(refused.text) == [
        (
            "error",
            "schedule 'pwn' is invalid: job 'explode' is not open to runtime schedules: "
            "register it with @app.job(runtime=True)",
        )
    ]
    assert [v["key"] for v in app.schedules.list() if v["key"] == "pwn"] == []
    assert post(client, "/schedules/pwn/trigger").status_code in (200, 404)
    drain(app)
    assert _command_jobs(app) == 0 and not pwned.exists()


def test_an_edit_cannot_turn_a_runtime_schedule_into_a_command(
    app: App, client: TestClient, tmp_path: Path
) -> None:
    app.schedules.create("rt", "every 1h", "echo", args=["hello"])
    pwned = tmp_path / "PWNED"
    page = post(
        client,
        "/schedules/rt/update",
        {"job": COMMAND_JOB, "args": f'["touch {pwned}"]', "kwargs": '{"shell": true}'},
    )
    [(kind, message)] = flashes(page.text)
    assert kind == "error" and "cannot run shell commands" in message and "\n" not in message
    other = post(client, "/schedules/rt/update", {"job": "explode", "args": "[]"})
    assert "job 'explode' is not open to runtime schedules" in flashes(other.text)[0][1]
    definition = app.schedules.get_definition("rt")
    assert (definition.job, definition.args) == ("echo", ("hello",))
    post(client, "/schedules/rt/trigger")
    drain(app)
    assert _command_jobs(app) == 0 and not pwned.exists()


def test_run_now_on_a_command_schedule_an_older_version_stored_is_refused(
    app: App, client: TestClient, tmp_path: Path
) -> None:
    pwned = tmp_path / "PWNED"
    store_as_an_older_version(app, "legacy", f"touch {pwned}")
    page = post(client, "/schedules/legacy/trigger")
    [(kind, message)] = flashes(page.text)
    assert kind == "error"
    assert message.startswith("schedule 'legacy' is not valid in this code: a runtime schedule")
    assert "cannot run shell commands" in message
    backfill = post(
        client,
        "/schedules/legacy/backfill",
        {"start": "2020-01-01T00:00Z", "end": "2020-01-02T00:00Z", "run": "1"},
    )
    assert "cannot run shell commands" in flashes(backfill.text)[0][1]
    tick(app)  # its slot is due: the scheduler leaves it alone
    listed = client.get("/schedules").text
    assert 'data-key="legacy"' in listed and "invalid" in listed
    drain(app)
    assert _command_jobs(app) == 0 and not pwned.exists()
    # The operator can still get rid of it.
    deleted = post(client, "/schedules/legacy/delete", {"confirm": "1"})
    assert flashes(deleted.text) == [("ok", "deleted legacy; cancelled 0 queued job(s)")]
