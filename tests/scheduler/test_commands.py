"""Command schedules: a program run on a schedule, its exit code and output kept, retried when
it fails, keyed by a stable digest when no key is given."""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import timedelta

from onthedot import JobState
from onthedot.domain.definitions import COMMAND_JOB
from onthedot.schedules.command import OUTPUT_TAIL
from onthedot.testing import drain, tick
from tests.scheduler.helpers import MakeApp, clock_of, utc

T0 = utc(2030, 1, 1)


def test_a_command_schedule_runs_and_keeps_exit_code_and_output(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.schedule("hello", "every 1s", command=["echo", "hi"])
    tick(app)
    (fired,) = tick(app, T0 + timedelta(seconds=1))
    assert drain(app) == 1
    job = app.get_job(fired.job_id or 0)
    assert job is not None
    assert (job.name, job.state, job.schedule_key, job.slot) == (
        COMMAND_JOB,
        JobState.SUCCEEDED,
        "hello",
        T0 + timedelta(seconds=1),
    )
    assert job.result == {"exit_code": 0, "output": "hi\n"}


def test_output_keeps_only_the_tail(make_app: MakeApp) -> None:
    app = make_app(T0)
    script = "import sys; sys.stdout.write('x' * 10000 + 'END')"
    app.schedule("big", "every 1h", command=[sys.executable, "-c", script])
    tick(app)
    tick(app, T0 + timedelta(hours=1))
    drain(app)
    (job,) = app.list_jobs(schedule_key="big")
    assert job.result["exit_code"] == 0
    assert len(job.result["output"]) == OUTPUT_TAIL
    assert job.result["output"].endswith("xEND")


def test_a_shell_command(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.schedule("sum", "every 1h", command="echo $((40 + 2))", shell=True)
    tick(app)
    tick(app, T0 + timedelta(hours=1))
    drain(app)
    (job,) = app.list_jobs(schedule_key="sum")
    assert job.result == {"exit_code": 0, "output": "42\n"}


def test_a_failing_command_is_retried_then_fails(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.schedule("flaky", "every 1h", command=["sh", "-c", "echo oops; exit 3"])
    tick(app)
    (fired,) = tick(app, T0 + timedelta(hours=1))
    attempts = []
    for _ in range(3):
        drain(app)
        job = app.get_job(fired.job_id or 0)
        assert job is not None
        attempts.append((job.attempts, job.state))
        assert job.error is not None and "exit code 3" in job.error and "oops" in job.error
        clock_of(app).advance(timedelta(minutes=30))  # past any retry backoff
    assert attempts == [(1, JobState.QUEUED), (2, JobState.QUEUED), (3, JobState.FAILED)]


def test_a_command_that_does_not_exist_fails_clearly(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.schedule("missing", "every 1h", command=["onthedot-no-such-program-xyz"])
    tick(app)
    tick(app, T0 + timedelta(hours=1))
    drain(app)
    (job,) = app.list_jobs(schedule_key="missing")
    assert job.error is not None and "command not found" in job.error


def test_a_command_without_a_key_gets_a_stable_digest_key(make_app: MakeApp) -> None:
    command = ["pg_dump", "--format=custom", "--file=/backups/nightly/database.dump", "prod"]
    other = [*command[:-1], "staging"]  # the same long prefix
    app = make_app(T0)
    decl = app.schedule(None, "every 1d", command=command)
    decl_other = app.schedule(None, "every 1d", command=other)
    digest = hashlib.sha256(json.dumps(command).encode()).hexdigest()[:16]
    assert decl.key.startswith("command:pg_dump")
    assert decl.key.endswith(f":{digest}")  # the same key in every process and deploy
    assert decl.key != decl_other.key
    assert len(decl.key) <= 200
    # Another deploy declaring the same command finds the same ledger row.
    tick(app)
    again = make_app(T0)
    assert again.schedule(None, "every 1d", command=command).key == decl.key
    assert next(iter(again.storage.list_schedule_rows([decl.key])), None) is not None
    assert app.schedules.check().ok
