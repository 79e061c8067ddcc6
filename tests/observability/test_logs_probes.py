"""`--log-format json` lines with the job's fields, and `onthedot health --worker`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from onthedot import App
from onthedot.cli.main import cli
from onthedot.storage.interface import WorkerInfo
from tests.observability.helpers import ROOT, start_worker


def test_json_log_lines_carry_the_job_fields(db_url: str, tmp_path: Path) -> None:
    app = App(db_url, log_events=False)
    app.migrate()

    @app.job(name="echo")
    def echo(value: object = None) -> object:
        return value

    @app.job(name="explode", max_attempts=2, backoff=0.0)
    def explode() -> None: ...

    job_id = echo.enqueue("hi")
    failing = explode.enqueue()
    app.close()
    proc = start_worker(db_url, tmp_path, "--burst", root=("--log-format", "json", "-v"))
    assert proc.stop(signal_it=False) == 0, proc.output()[-3000:]
    lines = [json.loads(line) for line in proc.output().splitlines() if line.startswith("{")]
    assert lines, proc.output()
    assert all({"ts", "level", "logger", "message"} <= set(line) for line in lines)
    inside = next(line for line in lines if line["message"] == "echo says hi")
    assert inside["job_id"] == job_id and inside["job"] == "echo"
    assert inside["queue"] == "default" and inside["attempt"] == 1
    started = next(line for line in lines if line.get("event") == "job_started")
    assert {"job_id", "job", "queue", "attempt", "worker_id"} <= set(started)
    retried = next(line for line in lines if line.get("event") == "job_retried")
    assert retried["job_id"] == failing and retried["level"] == "warning"
    assert retried["error"].startswith("RuntimeError: boom on attempt 1")


def test_health_worker(sqlite_url: str) -> None:
    app = App(sqlite_url, log_events=False, lease=2.0)
    app.migrate()
    runner = CliRunner()

    def health() -> tuple[int, str]:
        env = {"ONTHEDOT_DATABASE_URL": sqlite_url}
        result = runner.invoke(cli, ["health", "--worker"], env=env)
        return result.exit_code, result.output.strip()

    code, out = health()
    assert code == 1 and out == f"unhealthy: no worker of host {socket.gethostname()} is registered"
    past = app.clock.now().replace(year=2000)
    app.storage.at(past).register_worker(
        WorkerInfo("w-old", socket.gethostname(), 1, ("default",), 1)
    )
    code, out = health()
    assert code == 1 and "w-old" in out and "last heartbeat" in out and "\n" not in out
    app.storage.register_worker(WorkerInfo("w-other", "elsewhere", 2, ("default",), 1))
    assert health()[0] == 1  # a live worker elsewhere does not make this host healthy
    app.storage.register_worker(WorkerInfo("w-new", socket.gethostname(), 3, ("default",), 1))
    code, out = health()
    assert code == 0 and out.startswith("healthy:"), out
    app.close()


def test_health_without_worker_flag_ignores_workers(sqlite_url: str) -> None:
    App(sqlite_url, log_events=False).migrate()
    env = dict(os.environ, ONTHEDOT_DATABASE_URL=sqlite_url)
    done = subprocess.run(
        [sys.executable, "-m", "onthedot", "health"], cwd=ROOT, env=env, capture_output=True
    )
    assert done.returncode == 0
