"""Issue 14, "a new user never stumbles": the real `onthedot` command (a subprocess, as a user
runs it) on both backends: reads that never create a database and say which one they use, a
worker serving every queue of the app, "run now" carrying its instant as its slot, displays
that tell the truth, output that does not read like Python, a busy port, the CLI options that
match the API, and the README."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from onthedot import App
from onthedot.storage.interface import OperatorPatch
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
ONTHEDOT = str(Path(sys.executable).parent / "onthedot")
APP = "tests.cli.newuser_app:app"


def onthedot(
    *args: str, cwd: Path, db_url: str | None = None, app: str | None = APP, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the installed `onthedot` console script in `cwd`, as a user's shell would."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    env["PYTHONPATH"] = str(ROOT)
    argv = [ONTHEDOT]
    if app:
        argv += ["--app", app]
    if db_url:
        argv += ["--database", db_url]
    return subprocess.run(
        [*argv, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


@pytest.fixture
def migrated(db_url: str, tmp_path: Path) -> str:
    ok(onthedot("migrate", cwd=tmp_path, db_url=db_url))
    return db_url


# -- 1. which database ------------------------------------------------------------------------
def test_a_read_never_creates_a_database_and_says_which_is_missing(tmp_path: Path) -> None:
    missing = tmp_path / "onthedot.db"
    for args in (
        ["jobs", "list"],
        ["jobs", "show", "1"],
        ["queues"],
        ["schedules", "history", "fast"],
        ["schedules", "audit"],
    ):
        line = error_line(onthedot(*args, cwd=tmp_path, app=None))
        assert f"no database at {missing}" in line and "onthedot migrate" in line, line
    line = error_line(onthedot("schedules", "list", cwd=tmp_path))
    assert f"no database at {missing}" in line
    health = onthedot("health", cwd=tmp_path, app=None)
    assert health.returncode == 1
    assert health.stderr.startswith(f"unhealthy: no database at {missing}")
    assert not missing.exists(), "a read created the database"


def test_every_command_can_say_which_database_it_uses(migrated: str, tmp_path: Path) -> None:
    health = ok(onthedot("health", cwd=tmp_path, db_url=migrated, app=None))
    if migrated.startswith("sqlite"):
        assert f"({tmp_path / 'onthedot.db'})" in health  # the absolute path
    listed = onthedot("-v", "jobs", "list", cwd=tmp_path, db_url=migrated, app=None)
    assert listed.returncode == 0
    assert listed.stderr.startswith("onthedot: database ")
    worker = onthedot("worker", "--burst", cwd=tmp_path, db_url=migrated)
    start = worker.stderr.splitlines()[0]
    assert "database " in start and (migrated.split("?")[0].split("//")[1] in start)


def test_commands_needing_declarations_say_so_without_app(migrated: str, tmp_path: Path) -> None:
    ok(onthedot("schedules", "pause", "fast", cwd=tmp_path, db_url=migrated))  # the ledger row
    for args in (["schedules", "list"], ["schedules", "explain", "fast"]):
        line = error_line(onthedot(*args, cwd=tmp_path, db_url=migrated, app=None))
        assert "no app given: this command needs your app's jobs and schedules" in line
        assert "--app" in line


# -- 2. a worker serves every queue of the app --------------------------------------------------
def test_a_plain_worker_serves_every_queue_of_the_app(migrated: str, tmp_path: Path) -> None:
    job = ok(onthedot("enqueue", "mail.send", "--args", '["ann"]', cwd=tmp_path, db_url=migrated))
    narrowed = onthedot("worker", "--burst", "-q", "default", cwd=tmp_path, db_url=migrated)
    assert "on queue(s) default," in narrowed.stderr.splitlines()[0]
    shown = json.loads(
        ok(onthedot("jobs", "show", job.strip(), "--json", cwd=tmp_path, db_url=migrated))
    )
    assert shown["state"] == "queued", "-q default must leave the mail job alone"
    plain = onthedot("worker", "--burst", cwd=tmp_path, db_url=migrated)
    assert plain.returncode == 0, plain.stderr
    assert "on queue(s) default, mail," in plain.stderr.splitlines()[0]
    shown = json.loads(
        ok(onthedot("jobs", "show", job.strip(), "--json", cwd=tmp_path, db_url=migrated))
    )
    assert shown["state"] == "succeeded" and shown["result"] == "sent to ann"


def test_a_plain_worker_serves_the_queues_of_runtime_schedules(
    migrated: str, tmp_path: Path
) -> None:
    create = ("schedules", "create", "reports", "every 1h", "mail.send", "--args", '["x"]')
    ok(onthedot(*create, "--queue", "reports", cwd=tmp_path, db_url=migrated))
    plain = onthedot("worker", "--burst", cwd=tmp_path, db_url=migrated)
    assert plain.returncode == 0, plain.stderr
    assert "on queue(s) default, mail, reports," in plain.stderr.splitlines()[0]


def test_queues_warns_of_ready_jobs_in_a_queue_no_live_worker_serves(
    migrated: str, tmp_path: Path
) -> None:
    enqueue = ("enqueue", "mail.send", "--args", '["ann"]')
    ok(onthedot(*enqueue, "--queue", "elsewhere", cwd=tmp_path, db_url=migrated))
    alone = ok(onthedot("queues", cwd=tmp_path, db_url=migrated))
    assert "no live worker knows it" in alone  # no worker alive: the job-name warning applies
    assert "no live worker serves" not in alone
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    env["PYTHONPATH"] = str(ROOT)
    argv = [ONTHEDOT, "--app", APP, "--database", migrated, "worker", "-q", "default"]
    worker = subprocess.Popen(
        [*argv, "--processes", "1"], cwd=tmp_path, env=env, stderr=subprocess.DEVNULL
    )
    try:
        reader = App(migrated, log_events=False)
        try:
            wait_for(lambda: len(reader.storage.list_workers()) == 1, "the worker to register")
        finally:
            reader.close()
        shown = ok(onthedot("queues", cwd=tmp_path, db_url=migrated))
    finally:
        worker.terminate()
        worker.wait(30)
    assert (
        "warning: 1 ready job waits in queue `elsewhere` and no live worker serves it: "
        "start one with -q elsewhere" in shown
    )


# -- 3. run now ------------------------------------------------------------------------------------
def test_run_now_before_any_worker_carries_its_instant_and_is_manual(
    migrated: str, tmp_path: Path
) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    triggered = onthedot(
        "schedules", "trigger", "billing.invoice_run", cwd=tmp_path, db_url=migrated
    )
    job_id = int(ok(triggered).strip())
    assert triggered.stderr == "", "an operator command prints no log line"
    ok(onthedot("worker", "--burst", cwd=tmp_path, db_url=migrated))
    job = json.loads(
        ok(onthedot("jobs", "show", str(job_id), "--json", cwd=tmp_path, db_url=migrated))
    )
    assert job["state"] == "succeeded", job
    slot = datetime.fromisoformat(job["slot"].replace("Z", "+00:00"))
    assert before <= slot <= datetime.now(UTC)
    assert job["result"]["manual"] is True
    assert job["result"]["period"] == slot.astimezone(ZoneInfo("Europe/Paris")).strftime("%Y-%m")
    history = ok(
        onthedot("schedules", "history", "billing.invoice_run", cwd=tmp_path, db_url=migrated)
    )
    assert re.search(rf"{job['slot']}\s+manual\s+job {job_id} \(succeeded\)", history), history


def test_invoice_run_works_for_scheduled_backfilled_and_manual_runs(db_url: str) -> None:
    """The docs' example, in process on both databases: `ctx.slot` is set for every kind of run,
    `ctx.manual` only for run now."""
    from onthedot import ManualClock
    from onthedot.testing import drain, tick
    from tests.cli.newuser_app import app as declared

    t0 = datetime(2030, 1, 1, tzinfo=UTC)
    app = App(db_url, clock=ManualClock(t0), log_events=False)
    for name in ("billing.invoice_run", "mail.send", "fast", "flaky"):
        app.jobs.register(declared.jobs[name].fn, name=name, queue=declared.jobs[name].queue)
    app.schedule("billing.invoice_run", "0 6 1 * *", "billing.invoice_run", timezone="Europe/Paris")
    app.migrate()
    try:
        tick(app)
        fired = tick(app, datetime(2030, 2, 1, 5, tzinfo=UTC))  # 06:00 in Paris
        app.clock.set(datetime(2030, 2, 3, tzinfo=UTC))  # type: ignore[attr-defined]
        backfilled = app.schedules.backfill(
            "billing.invoice_run", t0 - timedelta(days=40), t0, dry_run=False
        )
        manual = app.schedules.trigger("billing.invoice_run")
        drain(app)
        results = {
            j.id: j.result for j in app.list_jobs(schedule_key="billing.invoice_run", limit=10)
        }
        assert results[fired[0].job_id] == {  # type: ignore[attr-defined]
            "period": "2030-02",
            "idempotency_key": "billing.invoice_run:2030-02-01T05:00:00+00:00",
            "manual": False,
        }
        assert results[backfilled.enqueued[0]]["period"] == "2029-12"  # type: ignore[index]
        assert results[backfilled.enqueued[0]]["manual"] is False  # type: ignore[index]
        assert results[manual] == {
            "period": "2030-02",
            "idempotency_key": "billing.invoice_run:2030-02-03T00:00:00+00:00",
            "manual": True,
        }
        outcomes = [r.outcome for r in app.storage.slot_history("billing.invoice_run")]
        assert outcomes == ["manual", "enqueued", "backfilled"]
    finally:
        app.close()


# -- 4. displays that are true -----------------------------------------------------------------
def test_explain_says_no_scheduler_is_alive_when_a_slot_is_overdue(
    migrated: str, tmp_path: Path
) -> None:
    ok(onthedot("schedules", "reset", "fast", cwd=tmp_path, db_url=migrated))  # makes the row
    inspect = App(migrated, log_events=False)
    try:
        past = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
        inspect.storage.update_operator_state("fast", OperatorPatch(next_due_at=past))
    finally:
        inspect.close()
    text = ok(onthedot("schedules", "explain", "fast", cwd=tmp_path, db_url=migrated))
    assert "nothing holds it back" not in text
    assert "it was due at " in text and "but no live worker runs the scheduler" in text
    # Output that does not read like Python (item 5).
    assert "window=1d " in text and "jitter=none" in text and "day, 0:00:00" not in text
    assert "kwargs={}" in text and "args=[]" in text


def test_a_paused_schedule_lists_no_next_slots(migrated: str, tmp_path: Path) -> None:
    ok(onthedot("schedules", "pause", "fast", cwd=tmp_path, db_url=migrated))
    views = json.loads(ok(onthedot("schedules", "list", "--json", cwd=tmp_path, db_url=migrated)))
    fast = next(v for v in views if v["key"] == "fast")
    assert fast["status"] == "paused" and fast["next"] == []
    text = ok(onthedot("schedules", "explain", "fast", cwd=tmp_path, db_url=migrated))
    assert "next slots:  none while paused" in text
    ok(onthedot("schedules", "pause", "fast", "--until", "2h", cwd=tmp_path, db_url=migrated))
    views = json.loads(ok(onthedot("schedules", "list", "--json", cwd=tmp_path, db_url=migrated)))
    fast = next(v for v in views if v["key"] == "fast")
    assert fast["next"] and all(n > fast["paused_until"] for n in fast["next"])
    resumed = ok(onthedot("schedules", "resume", "fast", cwd=tmp_path, db_url=migrated))
    assert re.fullmatch(r"resumed fast; next slot \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", resumed)


def test_a_backfill_preview_offers_no_slot_before_the_schedule_existed(
    migrated: str, tmp_path: Path
) -> None:
    ok(
        onthedot(
            "schedules",
            "create",
            "hourly",
            "every 1m",
            "mail.send",
            "--args",
            '["x"]',
            cwd=tmp_path,
            db_url=migrated,
        )
    )
    now = datetime.now(UTC).replace(microsecond=0)
    preview = ok(
        onthedot(
            "schedules",
            "backfill",
            "hourly",
            "--start",
            (now - timedelta(hours=2)).isoformat(),
            "--end",
            (now - timedelta(seconds=1)).isoformat(),
            cwd=tmp_path,
            db_url=migrated,
        )
    )
    assert preview.startswith("would enqueue 0 slot(s) of hourly"), preview
    assert "older than the slot history" not in preview, "nothing was pruned"


# -- 5. output that does not read like Python --------------------------------------------------
def test_jobs_show_and_logs_read_like_text(migrated: str, tmp_path: Path) -> None:
    job = ok(onthedot("enqueue", "flaky", cwd=tmp_path, db_url=migrated)).strip()
    mail = ok(
        onthedot("enqueue", "mail.send", "--args", '["https://d"]', cwd=tmp_path, db_url=migrated)
    ).strip()
    worker = onthedot("worker", "--burst", cwd=tmp_path, db_url=migrated)
    assert "note=None" not in worker.stderr and "=None" not in worker.stderr
    delays = re.findall(r"retry_in=([0-9.]+)", worker.stderr)
    assert delays and all(len(d.partition(".")[2]) <= 3 for d in delays), worker.stderr
    shown = ok(onthedot("jobs", "show", mail, cwd=tmp_path, db_url=migrated))
    assert 'args: ["https://d"]' in shown and "None" not in shown
    assert "timeout: -" in shown and "kwargs: {}" in shown
    flaky = ok(onthedot("jobs", "show", job, cwd=tmp_path, db_url=migrated))
    assert re.search(
        r"^error \(attempt 1, \S+Z\): RuntimeError: first attempt fails$", flaky, re.M
    ), flaky
    assert "{'" not in flaky
    table = ok(onthedot("jobs", "list", cwd=tmp_path, db_url=migrated, app=None))
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", table.splitlines()[1]), table


def test_operator_commands_are_quiet_and_the_audit_table_lines_up(
    migrated: str, tmp_path: Path
) -> None:
    for args in (
        ["schedules", "pause", "fast", "--note", "a longer note", "--actor", "a-long-actor-name"],
        ["schedules", "resume", "fast", "--actor", "bo"],
        ["schedules", "skip", "billing.invoice_run"],
    ):
        done = onthedot(*args, cwd=tmp_path, db_url=migrated)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = ok(onthedot("schedules", "audit", cwd=tmp_path, db_url=migrated)).splitlines()
    header, rows = lines[0], lines[1:]
    assert header.split()[:4] == ["AT", "(UTC)", "ACTOR", "ACTION"] and len(rows) == 3
    for column in ("ACTOR", "ACTION", "SCHEDULE"):
        at = header.index(column)
        assert all(row[at - 1] == " " and row[at] != " " for row in rows), lines


# -- 6. a busy port ----------------------------------------------------------------------------
def test_a_busy_port_is_one_error_line(migrated: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        results = [
            onthedot(command, "--port", str(port), cwd=tmp_path, db_url=migrated)
            for command in ("web", "dev")
        ]
    for result in results:
        line = error_line(result)
        assert f"port {port} on 127.0.0.1 is already in use" in line and "--port" in line
        assert "web admin" not in result.stderr.replace(line, ""), result.stderr
        assert "Errno" not in result.stderr


# -- 7. the CLI catches up with the API --------------------------------------------------------
def test_queues_pause_and_resume(migrated: str, tmp_path: Path) -> None:
    ok(onthedot("enqueue", "mail.send", "--args", '["a"]', cwd=tmp_path, db_url=migrated))
    paused = ok(onthedot("queues", "pause", "mail", cwd=tmp_path, db_url=migrated, app=None))
    assert paused.startswith("paused queue mail")
    table = ok(onthedot("queues", cwd=tmp_path, db_url=migrated, app=None))
    assert re.search(r"^mail .*\(paused\)$", table, re.M), table
    ok(onthedot("queues", "resume", "mail", cwd=tmp_path, db_url=migrated, app=None))
    table = ok(onthedot("queues", cwd=tmp_path, db_url=migrated, app=None))
    assert "(paused)" not in table


def test_enqueue_takes_run_at_max_attempts_and_timeout(migrated: str, tmp_path: Path) -> None:
    job = ok(
        onthedot(
            "enqueue",
            "mail.send",
            "--args",
            '["a"]',
            "--run-at",
            "2031-01-31T09:00:00Z",
            "--max-attempts",
            "7",
            "--timeout",
            "30s",
            cwd=tmp_path,
            db_url=migrated,
        )
    ).strip()
    shown = json.loads(ok(onthedot("jobs", "show", job, "--json", cwd=tmp_path, db_url=migrated)))
    assert (shown["run_at"], shown["max_attempts"], shown["timeout"]) == (
        "2031-01-31T09:00:00Z",
        7,
        30.0,
    )
    text = ok(onthedot("jobs", "show", job, cwd=tmp_path, db_url=migrated))
    assert "timeout: 30s" in text
    bad = error_line(
        onthedot("enqueue", "mail.send", "--run-at", "tomorrow", cwd=tmp_path, db_url=migrated)
    )
    assert "--run-at 'tomorrow' is not ISO-8601" in bad


def test_the_until_error_mentions_durations(migrated: str, tmp_path: Path) -> None:
    for value in ("soon", "2x"):
        line = error_line(
            onthedot("schedules", "pause", "fast", "--until", value, cwd=tmp_path, db_url=migrated)
        )
        assert "duration from now like 2h" in line and "ISO-8601" in line, line


# -- 8. README -----------------------------------------------------------------------------------
def test_the_readme_says_how_long_tests_take_and_what_web_needs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"whole suite takes about \d+ minutes", readme), "the test time is given"
    assert "python -m pytest tests/domain" in readme  # a quick subset
    assert 'pip install "onthedot[web]"' in readme
    cli_block = readme.split("## The CLI in short", 1)[1].split("```", 2)[1]
    assert not re.search(r"\| *(jobs|explain|history|retry|cancel)\b", cli_block), cli_block
