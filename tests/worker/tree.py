"""Helpers of the tests that run `onthedot worker` as a user runs it: the supervisor and its
worker processes, as a subprocess, with the app of `nap_app.py`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.worker.nap_app:app"
STARTS = ["fork", "spawn"]  # how the supervisor starts its children ($ONTHEDOT_WORKER_START)


def onthedot(
    url: str,
    log: Path,
    *args: str,
    start: str = "fork",
    env: dict[str, str] | None = None,
    app: str = APP,
) -> subprocess.Popen[bytes]:
    """`onthedot --app <app, nap_app by default> <args>` with the database in the
    environment, its stdout and stderr written to `log`."""
    environment = dict(os.environ, ONTHEDOT_DATABASE_URL=url, PYTHONUNBUFFERED="1")
    environment.pop("ONTHEDOT_APP", None)
    environment["ONTHEDOT_WORKER_START"] = start
    for key, value in (env or {}).items():
        if key == "PYTHONPATH" and os.environ.get(key):
            value = f"{value}{os.pathsep}{os.environ[key]}"  # in front of the caller's
        environment[key] = value
    command = [sys.executable, "-m", "onthedot", "--app", app, *args]
    with log.open("wb") as handle:
        return subprocess.Popen(command, cwd=ROOT, env=environment, stdout=handle, stderr=handle)


def wait_or_kill(proc: subprocess.Popen[bytes], seconds: float) -> int:
    """The exit status of `proc` within `seconds`; else it is killed (its children die with
    it) and the test fails."""
    try:
        return proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"still running after {seconds}s: {proc.args}") from None


def workers(url: str) -> list[dict[str, Any]]:
    """The registered workers (onthedot_workers rows)."""
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute("SELECT id, pid, queues, concurrency, scheduler FROM onthedot_workers")
        names = [c.name for c in cur.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def json_lines(log: Path) -> list[dict[str, Any]]:
    """Every line of `log` as a JSON object (fails on the first line that is not one)."""
    out = []
    for line in log.read_text().splitlines():
        if line.strip():
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                raise AssertionError(f"not a JSON line: {line!r}") from None
            assert isinstance(value, dict), line
            out.append(value)
    return out


def started_jobs(url: str) -> dict[int, int]:
    """job id -> pid of the process that started it (`nap_started`)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return dict(conn.execute("SELECT job_id, pid FROM nap_started").fetchall())


def running_by_worker(url: str) -> dict[str, int]:
    """How many jobs each worker holds (claimed, started or not)."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT worker_id, count(*) FROM onthedot_jobs WHERE state = 'running' GROUP BY 1"
        ).fetchall()
    return {str(worker): int(count) for worker, count in rows}
