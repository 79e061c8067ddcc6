"""The `onthedot` command in-process (click's CliRunner) on both backends: migrate, enqueue,
worker --burst, jobs list/show/retry/cancel, queues, health, and its one-line errors."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from onthedot import App, JobState
from onthedot.cli.main import cli
from tests.e2e.apps.basic import make_app

APP = "tests.cli.test_cli:tracked_app"
_opened: list[App] = []


def tracked_app() -> App:
    """The `--app` target: a fresh App per invocation, closed after the test."""
    application = make_app()
    _opened.append(application)
    return application


@pytest.fixture(autouse=True)
def close_apps() -> Iterator[None]:
    yield
    while _opened:
        _opened.pop().close()


def run(*args: str, app: str | None = APP) -> Result:
    argv = ["--app", app, *args] if app else list(args)
    env = {"ONTHEDOT_APP": None, "ONTHEDOT_DATABASE_URL": None}
    return CliRunner().invoke(cli, argv, env=env, catch_exceptions=False)


def one_line_error(result: Result) -> str:
    """The result's error: exactly one `Error: ...` line and no traceback."""
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    return errors[0]


@pytest.fixture
def migrated(db_url: str) -> Iterator[App]:
    """A migrated app the test inspects with, next to the CLI's own."""
    application = make_app(db_url)
    application.migrate()
    yield application
    application.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- migrate and health -----------------------------------------------------------------------
def test_migrate_is_idempotent(db_url: str) -> None:
    first = run("--database", db_url, "migrate")
    assert first.exit_code == 0, first.output
    assert re.fullmatch(
        r"applied migration\(s\) 1(, \d+)*; schema at version (\d+)\n", first.stdout
    )
    version = first.stdout.rstrip().rsplit(" ", 1)[1]
    again = run("--database", db_url, "migrate")
    assert again.exit_code == 0, again.output
    assert again.stdout == f"schema already at version {version}; nothing to do\n"


def test_health_ok(migrated: App, db_url: str) -> None:
    result = run("--database", db_url, "health")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("healthy: ")
    assert f"({migrated.storage.backend}), schema version" in result.stdout


def test_health_unreachable_database() -> None:
    url = f"postgresql://postgres@127.0.0.1:{_free_port()}/postgres"
    result = run("--database", url, "health")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("unhealthy: PostgreSQL at ")
    assert "is unreachable" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_health_schema_behind_on_postgresql(pg_url: str) -> None:
    result = run("--database", pg_url, "health")  # a fresh, empty schema
    assert result.exit_code == 1
    assert "schema at version 0" in result.stderr
    assert "run `onthedot migrate`" in result.stderr
    assert run("--database", pg_url, "migrate").exit_code == 0
    assert run("--database", pg_url, "health").exit_code == 0


def test_health_on_a_new_sqlite_file_migrates_it(sqlite_url: str) -> None:
    # An empty file (a read never creates a missing one: tests/cli/test_newuser.py).
    open(sqlite_url.removeprefix("sqlite:///"), "wb").close()
    result = run("--database", sqlite_url, "health")  # SQLite migrates itself on first use
    assert result.exit_code == 0, result.output


# -- configuration errors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("nonsense", "Error: malformed database URL 'nonsense'"),
        ("mysql://u@h/db", "Error: unsupported database URL scheme 'mysql'"),
        ("postgresql://u@h:port/db", "Error: malformed PostgreSQL URL"),
        ("sqlite://relative.db", "Error: malformed SQLite URL"),
    ],
)
def test_a_malformed_database_url_is_one_line(url: str, expected: str) -> None:
    for app in (APP, None):
        result = run("--database", url, "jobs", "list", app=app)
        assert result.exit_code == 1
        assert one_line_error(result).startswith(expected)
    health = run("--database", url, "health")
    assert health.exit_code == 1
    assert health.stderr.startswith("unhealthy: ")
    assert len(health.stderr.strip().splitlines()) == 1


def test_an_unknown_app_is_a_clear_usage_error(sqlite_url: str) -> None:
    result = run("--database", sqlite_url, "jobs", "list", app="no_such_module_xyz:app")
    assert result.exit_code == 2
    assert one_line_error(result).startswith(
        "Error: cannot import module 'no_such_module_xyz' named by --app"
    )
    result = run("--database", sqlite_url, "queues", app="tests.e2e.apps.basic:nope")
    assert result.exit_code == 2
    assert "has no attribute 'nope'" in one_line_error(result)
    result = run("--database", sqlite_url, "worker", "--burst", app=None)
    assert result.exit_code == 2
    assert "no app given" in one_line_error(result)


# -- enqueue and worker -----------------------------------------------------------------------
def test_enqueue_then_worker_burst(migrated: App, db_url: str) -> None:
    result = run(
        "--database",
        db_url,
        "enqueue",
        "basic.greet",
        "--args",
        '["Ann"]',
        "--kwargs",
        '{"punctuation": "?"}',
        "--priority",
        "3",
        "--queue",
        "mail",
    )
    assert result.exit_code == 0, result.output
    job_id = int(result.stdout)
    second = int(run("--database", db_url, "enqueue", "basic.greet", "--args", '["Bo"]').stdout)
    job = migrated.get_job(job_id)
    assert job is not None
    assert (job.args, job.kwargs, job.queue, job.priority) == (
        ["Ann"],
        {"punctuation": "?"},
        "mail",
        3,
    )

    worker = run("--database", db_url, "worker", "--burst", "-q", "default,mail", "-c", "2")
    assert worker.exit_code == 0, worker.output
    assert "stopped (burst: queues empty); 2 attempt(s) ran" in worker.stderr
    results = [migrated.get_job(i) for i in (job_id, second)]
    assert [(j.state, j.result) for j in results if j] == [
        (JobState.SUCCEEDED, "hello Ann?"),
        (JobState.SUCCEEDED, "hello Bo!"),
    ]


def test_enqueue_errors(migrated: App, db_url: str) -> None:
    def enqueue(*args: str) -> Result:
        return run("--database", db_url, "enqueue", *args)

    line = one_line_error(enqueue("basic.greet", "--args", '["Ann",'))
    assert "--args is not valid JSON" in line
    line = one_line_error(enqueue("basic.greet", "--kwargs", "{punctuation: 1}"))
    assert "--kwargs is not valid JSON" in line
    assert "--args must be a JSON array" in one_line_error(enqueue("basic.greet", "--args", "{}"))
    line = one_line_error(enqueue("basic.greet", "--kwargs", "[1]"))
    assert "--kwargs must be a JSON object" in line
    unknown = enqueue("nope.job")
    assert unknown.exit_code == 1
    assert one_line_error(unknown).startswith(
        "Error: no job named 'nope.job' is registered in this app (registered: "
    )
    bad_args = enqueue("basic.greet", "--args", "[1, 2, 3]")
    assert bad_args.exit_code == 1
    assert "job 'basic.greet': too many positional arguments" in one_line_error(bad_args)
    assert migrated.list_jobs() == [], "nothing was enqueued"


# -- jobs and queues ----------------------------------------------------------------------------
def test_jobs_list_table_and_json(migrated: App, db_url: str) -> None:
    greet = migrated.jobs["basic.greet"]
    first = greet.enqueue("Ann", queue="mail")
    second = greet.enqueue("Bo", punctuation=".", delay="1h")
    table = run("--database", db_url, "jobs", "list")
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["ID", "STATE", "QUEUE", "ATT", "RUN", "AT", "NAME"]
    assert lines[1].split()[:4] == [str(second), "queued", "default", "0/3"]
    assert lines[2].split()[:4] == [str(first), "queued", "mail", "0/3"]
    assert lines[1].endswith("basic.greet")

    listed = json.loads(run("--database", db_url, "jobs", "list", "--json").stdout)
    assert [j["id"] for j in listed] == [second, first]
    one = listed[1]
    for key in (
        "id",
        "name",
        "queue",
        "state",
        "attempts",
        "args",
        "run_at",
        "schedule_key",
        "slot",
    ):
        assert key in one
    assert (one["name"], one["queue"], one["state"], one["attempts"]) == (
        "basic.greet",
        "mail",
        "queued",
        0,
    )
    assert (one["args"], one["schedule_key"], one["slot"]) == (["Ann"], None, None)
    assert one["run_at"].endswith("Z")
    assert listed[0]["kwargs"] == {"punctuation": "."}

    only_mail = json.loads(
        run("--database", db_url, "jobs", "list", "--queue", "mail", "--json").stdout
    )
    assert [j["id"] for j in only_mail] == [first]
    bad_state = run("--database", db_url, "jobs", "list", "--state", "sleeping")
    assert "unknown state 'sleeping'" in one_line_error(bad_state)


def test_jobs_show_retry_cancel(migrated: App, db_url: str) -> None:
    def jobs(*args: str) -> Result:
        return run("--database", db_url, "jobs", *args)

    failing = migrated.jobs["basic.fail"].enqueue()
    deadline = time.monotonic() + 30
    # burst returns while the retry waits for its backoff (50 ms): run until it failed for good
    while migrated.get_job(failing).state is not JobState.FAILED:  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the job never failed"
        migrated.worker(burst=True, install_signals=False).run()

    shown = jobs("show", str(failing))
    assert shown.exit_code == 0, shown.output
    assert "state: failed" in shown.stdout
    assert "error: ValueError: always fails" in shown.stdout
    assert "traceback:\nTraceback" in shown.stdout
    data = json.loads(jobs("show", str(failing), "--json").stdout)
    assert (data["id"], data["state"], data["attempts"]) == (failing, "failed", 2)
    assert len(data["errors"]) == 2

    retried = jobs("retry", str(failing))
    assert retried.exit_code == 0, retried.output
    assert retried.stdout == f"job {failing} is queued\n"
    again = jobs("retry", str(failing))
    assert again.exit_code == 1
    assert one_line_error(again) == (
        f"Error: job {failing} is queued: only failed or cancelled jobs can be retried"
    )
    cancelled = jobs("cancel", str(failing))
    assert cancelled.stdout == f"job {failing} is cancelled\n"
    twice = jobs("cancel", str(failing))
    assert twice.exit_code == 1
    assert "is already cancelled" in one_line_error(twice)

    running = migrated.jobs["basic.greet"].enqueue("Cy")
    [claimed] = migrated.storage.claim_jobs("cli-test-worker", "default", 10, 60.0)
    assert claimed.id == running
    requested = jobs("cancel", str(running))
    assert requested.stdout == f"job {running} is running: cancellation requested\n"
    assert migrated.get_job(running).cancel_requested  # type: ignore[union-attr]

    for command in ("show", "retry", "cancel"):
        missing = jobs(command, "999999")
        assert missing.exit_code == 1
        assert one_line_error(missing) == "Error: no job with id 999999"


def test_queues_table_and_json(migrated: App, db_url: str) -> None:
    greet = migrated.jobs["basic.greet"]
    greet.enqueue_many([["a"], ["b"]], queue="mail")
    greet.enqueue("c", delay="1h")
    migrated.storage.set_queue_paused("mail", True, "test")
    table = run("--database", db_url, "queues")
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split() == [
        "QUEUE",
        "READY",
        "QUEUED",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "CANCELLED",
    ]
    assert lines[1].split() == ["default", "0", "1", "0", "0", "0", "0"]
    assert lines[2].split() == ["mail", "2", "2", "0", "0", "0", "0", "(paused)"]
    stats = {
        s["queue"]: s for s in json.loads(run("--database", db_url, "queues", "--json").stdout)
    }
    assert set(stats) == {"default", "mail"}
    assert (stats["mail"]["ready"], stats["mail"]["queued"], stats["mail"]["paused"]) == (
        2,
        2,
        True,
    )
    assert (stats["default"]["ready"], stats["default"]["queued"]) == (0, 1)
    assert stats["mail"]["oldest_ready_age"] >= 0


def test_worker_refuses_a_schema_that_is_behind(pg_url: str) -> None:
    result = run("--database", pg_url, "worker", "--burst")  # a fresh, empty schema
    assert result.exit_code == 1
    line = one_line_error(result)
    assert "schema" in line and "is at version 0" in line and "run `onthedot migrate`" in line
