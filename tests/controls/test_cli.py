"""The CLI twins of the runtime-schedule API and the operator controls."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner, Result

from onthedot.cli.main import cli
from onthedot.testing import tick
from tests.controls.cliapp import make_app

APP = "tests.controls.cliapp:make_app"


def run(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--app", APP, "--database", db_url, *args])


def prepared(db_url: str) -> None:
    app = make_app()
    app.use_database(db_url)
    app.migrate()
    tick(app)  # the ledger row of the declared schedule, as a worker would create it
    app.close()


def test_create_update_delete_over_the_cli(db_url: str) -> None:
    prepared(db_url)
    r = run(
        db_url,
        "schedules",
        "create",
        "nightly",
        "0 3 * * *",
        "work",
        "--args",
        "[7]",
        "--timezone",
        "Europe/Paris",
        "--overlap",
        "skip",
        "--actor",
        "ops",
    )
    assert r.exit_code == 0, r.output
    assert "created nightly" in r.output
    r = run(db_url, "schedules", "list", "--json")
    views = {v["key"]: v for v in json.loads(r.output)}
    assert views["nightly"]["timezone"] == "Europe/Paris"
    assert views["nightly"]["source"] == "dynamic"
    r = run(db_url, "schedules", "update", "nightly", "--spec", "0 4 * * *")
    assert r.exit_code == 0 and "0 4 * * *" in r.output
    r = run(db_url, "schedules", "delete", "nightly")
    assert r.exit_code == 0 and "cancelled 0 queued job(s)" in r.output
    audit = json.loads(run(db_url, "schedules", "audit", "nightly", "--json").output)
    assert [a["action"] for a in audit] == ["deleted", "updated", "created"]
    assert audit[-1]["actor"] == "ops"


def test_cli_errors_are_one_line(db_url: str) -> None:
    prepared(db_url)
    r = run(db_url, "schedules", "create", "bad", "*/0 * * * *", "nope")
    assert r.exit_code == 1
    assert r.output.startswith("Error: schedule 'bad' is invalid")
    assert len(r.output.strip().splitlines()) == 1
    r = run(db_url, "schedules", "create", "bad", "* * * * *", "work", "--args", "{oops")
    assert r.exit_code != 0 and "not valid JSON" in r.output
    r = run(db_url, "schedules", "pause", "missing")
    assert r.exit_code == 1 and "no schedule with key 'missing'" in r.output


def test_operator_controls_over_the_cli(db_url: str) -> None:
    prepared(db_url)
    r = run(
        db_url,
        "schedules",
        "pause",
        "declared",
        "--until",
        "2h",
        "--note",
        "upgrade",
        "--actor",
        "alice",
    )
    assert r.exit_code == 0 and "paused declared until" in r.output
    views = {v["key"]: v for v in json.loads(run(db_url, "schedules", "list", "--json").output)}
    assert views["declared"]["status"] == "paused"
    assert views["declared"]["paused_by"] == "alice"
    assert run(db_url, "schedules", "resume", "declared").exit_code == 0
    r = run(db_url, "schedules", "skip", "declared", "--note", "holiday")
    assert r.exit_code == 0
    skipped = r.output.strip().rsplit(" ", 1)[-1]
    assert run(db_url, "schedules", "unskip", "declared", skipped).exit_code == 0
    r = run(db_url, "schedules", "trigger", "declared")
    assert r.exit_code == 0 and int(r.output.strip()) > 0
    now = datetime.now(UTC).replace(microsecond=0)
    start = (now - timedelta(minutes=3)).isoformat()
    end = (now - timedelta(seconds=1)).isoformat()
    r = run(db_url, "schedules", "backfill", "declared", "--start", start, "--end", end, "--json")
    preview = json.loads(r.output)
    assert preview["dry_run"] is True and len(preview["slots"]) in (2, 3)
    r = run(db_url, "schedules", "backfill", "declared", "--start", start, "--end", end, "--run")
    assert r.exit_code == 0 and "enqueued" in r.output
    assert run(db_url, "schedules", "reset", "declared").exit_code == 0
    actions = [a["action"] for a in json.loads(run(db_url, "schedules", "audit", "--json").output)]
    assert actions == ["reset", "backfilled", "manual", "unskipped", "skipped", "resumed", "paused"]
    r = run(db_url, "schedules", "explain", "declared")
    assert r.exit_code == 0 and "verdict:" in r.output


def test_the_cli_creates_no_runtime_schedule_of_a_shell_command(db_url: str) -> None:
    """Issue 24 item 1: `schedules create` refuses `onthedot.command` in one line."""
    prepared(db_url)
    r = run(
        db_url,
        *("schedules", "create", "pwn", "every 1h", "onthedot.command"),
        *("--args", '["id > pwned.txt"]', "--kwargs", '{"shell": true}'),
    )
    assert r.exit_code == 1
    assert r.output == (
        "Error: schedule 'pwn' is invalid: a runtime schedule cannot run shell commands "
        "(onthedot.command): declare command schedules in code, app.schedule(key, spec, "
        "command=...)\n"
    )
    assert "pwn" not in run(db_url, "schedules", "list").output
