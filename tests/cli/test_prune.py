"""`onthedot prune [--dry-run] [--json]` in-process on both backends: what would go per job and
state, then deleting it; the app's retention and its jobs' keep= decide."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta

import pytest
from click.testing import CliRunner, Result

from onthedot import App
from onthedot.cli.main import cli
from onthedot.domain.jobs import NewJob, Outcome, OutcomeKind

_opened: list[App] = []


def prune_app() -> App:
    """The `--app` target: failures kept 30 days, the rest 1 day; job `chatty` 1 hour."""
    app = App(
        os.environ["H9_PRUNE_DB"], log_events=False, retention={"succeeded": "1d", "failed": "30d"}
    )

    @app.job(name="chatty", keep="1h")
    def chatty() -> None: ...

    _opened.append(app)
    return app


@pytest.fixture
def app(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.setenv("H9_PRUNE_DB", db_url)
    application = prune_app()
    application.migrate()
    yield application
    while _opened:
        _opened.pop().close()


def run(*args: str) -> Result:
    argv = ["--app", "tests.cli.test_prune:prune_app", "prune", *args]
    return CliRunner().invoke(cli, argv, env={"ONTHEDOT_APP": None, "ONTHEDOT_DATABASE_URL": None})


def finish(app: App, name: str, kind: OutcomeKind, ago: timedelta) -> int:
    then = app.storage.at(app.storage.db_now() - ago)
    [job_id] = then.enqueue([NewJob(name=name, args=[], kwargs={})])
    [c] = then.claim_jobs("w", "default", 1, 30)
    assert then.finish_jobs("w", [Outcome(c.id, kind, attempt=1)]) == 1
    return job_id


def test_dry_run_then_prune(app: App) -> None:
    old_chatty = finish(app, "chatty", OutcomeKind.SUCCEEDED, timedelta(hours=2))
    young_chatty = finish(app, "chatty", OutcomeKind.SUCCEEDED, timedelta(minutes=10))
    old_ok = finish(app, "report", OutcomeKind.SUCCEEDED, timedelta(days=2))
    kept_failure = finish(app, "report", OutcomeKind.FAILED, timedelta(days=2))

    dry = run("--dry-run")
    assert dry.exit_code == 0, dry.output
    lines = dry.output.splitlines()
    assert lines[0].split() == ["JOB", "STATE", "FINISHED", "BEFORE", "JOBS"]
    assert [line.split()[0:2] + line.split()[3:] for line in lines[1:3]] == [
        ["chatty", "succeeded", "1"],
        ["report", "succeeded", "1"],
    ]
    assert lines[-1] == "would delete 2 job(s)"
    assert all(app.get_job(i) is not None for i in (old_chatty, old_ok))

    as_json = json.loads(run("--dry-run", "--json").output)
    assert as_json["dry_run"] is True and as_json["jobs"] == 2
    assert {(g["job"], g["state"], g["jobs"]) for g in as_json["groups"]} == {
        ("chatty", "succeeded", 1),
        ("report", "succeeded", 1),
    }

    done = run()
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[-1] == "deleted 2 job(s)"
    assert app.get_job(old_chatty) is None and app.get_job(old_ok) is None
    assert app.get_job(young_chatty) is not None and app.get_job(kept_failure) is not None
    again = run("--dry-run")
    assert again.output == "would delete nothing: no finished job is past its retention\n"


def test_prune_needs_the_app(db_url: str) -> None:
    result = CliRunner().invoke(cli, ["--database", db_url, "prune"], env={"ONTHEDOT_APP": None})
    assert result.exit_code != 0
    assert "no app given" in result.output
