"""`onthedot web` and `onthedot dev` as real processes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from onthedot import App, JobFilter, JobState

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 60.0


def _env(db_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_WEB_")}
    env.update(ONTHEDOT_DATABASE_URL=db_url, PYTHONUNBUFFERED="1", **extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(check: Callable[[], object], what: str) -> object:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        try:
            found = check()
        except httpx.TransportError:
            found = None
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def _start(
    args: list[str], env: dict[str, str], log: Path, started: list[subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "onthedot", *args], cwd=ROOT, env=env, stdout=out, stderr=out
        )
    started.append(proc)
    return proc


def test_web_refuses_a_public_address_without_credentials(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "onthedot", "web", "--host", "0.0.0.0"],
        cwd=ROOT,
        env=_env(f"sqlite:///{tmp_path}/x.db"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: refusing to serve the web admin on '0.0.0.0'")
    assert "ONTHEDOT_WEB_USER" in lines[0] and "ONTHEDOT_WEB_TOKEN" in lines[0]
    half = subprocess.run(
        [sys.executable, "-m", "onthedot", "dev", "--host", "::"],
        cwd=ROOT,
        env=_env(f"sqlite:///{tmp_path}/x.db", ONTHEDOT_WEB_USER="ann"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert half.returncode == 1 and half.stderr.count("\n") == 1
    assert "set both ONTHEDOT_WEB_USER and ONTHEDOT_WEB_PASSWORD" in half.stderr


def test_web_serves_the_admin(
    app: App, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    port = _free_port()
    log = tmp_path / "web.log"
    env = _env(app.database_url, ONTHEDOT_WEB_TOKEN="t0k")
    proc = _start(
        ["--app", "tests.web.devapp:app", "web", "--port", str(port), "--read-only"],
        env,
        log,
        processes,
    )
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": "Bearer t0k"}
    page = _wait(lambda: httpx.get(url + "/schedules", headers=auth, timeout=5), "the web admin")
    assert isinstance(page, httpx.Response) and page.status_code == 200
    assert "read-only" in page.text and "ping" in page.text
    assert httpx.get(url + "/", timeout=5).status_code == 401
    assert httpx.post(url + "/queues/x/pause", headers=auth, timeout=5).status_code == 403
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=DEADLINE) == 0
    assert f"on http://127.0.0.1:{port}/" in log.read_text()


def test_dev_runs_a_worker_the_scheduler_and_the_admin(
    app: App, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    log = tmp_path / "dev.log"
    proc = _start(
        ["--app", "tests.web.devapp:app", "dev", "--port", "0"],
        _env(app.database_url),
        log,
        processes,
    )
    found = _wait(
        lambda: re.search(r"web admin at (http://127\.0\.0\.1:\d+/)", log.read_text()),
        "the URL",
    )
    assert isinstance(found, re.Match)
    url = found.group(1)
    done = _wait(
        lambda: app.list_jobs(JobFilter(name="ping", state=JobState.SUCCEEDED, limit=1)),
        "a scheduled job to run",
    )
    assert isinstance(done, list)
    page = httpx.get(url + "jobs?state=succeeded&name=ping", timeout=10)
    assert page.status_code == 200 and f'<tr id="job-{done[0].id}">' in page.text
    workers = httpx.get(url + "workers", timeout=10).text
    assert '<span class="badge alive">alive</span>' in workers
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=DEADLINE) == 0
    assert "onthedot dev stopped" in log.read_text()
