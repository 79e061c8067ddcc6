"""Shared by the observability tests: promtool, HTTP GETs, worker processes."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from tests.conftest import IN_CI
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.observability.obsapp:app"


def promtool_check(text: str) -> None:
    """`promtool check metrics` must accept `text` (lint included)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        if IN_CI:
            pytest.fail("promtool is missing (Debian package prometheus; see .ci/run)")
        pytest.skip("promtool is not installed")
    done = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"promtool: {done.stdout}{done.stderr}"


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of sample `name` whose labels include `labels`, or None."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        found = re.match(r"^([a-zA-Z_:]+)(\{(.*)\})? (\S+)$", line)
        if not found or found.group(1) != name:
            continue
        have = dict(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', found.group(3) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            return float(found.group(4))
    return None


@dataclass
class WorkerProc:
    popen: subprocess.Popen[bytes]
    log: Path
    handle: IO[bytes]

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, *, signal_it: bool = True) -> int:
        """SIGTERM (unless `signal_it` is false: a burst worker ends by itself), then wait."""
        if signal_it and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(60)
        finally:
            self.handle.close()


def start_worker(
    url: str, tmp: Path, *args: str, env: dict[str, str] | None = None, root: tuple[str, ...] = ()
) -> WorkerProc:
    log = tmp / f"worker-{len(list(tmp.glob('worker-*.log')))}.log"
    environment = dict(os.environ)
    environment.pop("ONTHEDOT_APP", None)
    environment.update(ONTHEDOT_DATABASE_URL=url, PYTHONUNBUFFERED="1", **(env or {}))
    command = [sys.executable, "-m", "onthedot", "--app", APP, *root, "worker", "--processes", "1"]
    command += args
    handle = log.open("wb")
    popen = subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=handle, stderr=subprocess.STDOUT
    )
    return WorkerProc(popen, log, handle)


def metrics_url(proc: WorkerProc) -> str:
    """The base URL the worker printed for --metrics-port 0."""

    def printed() -> str | None:
        if proc.popen.poll() is not None:
            pytest.fail(f"worker exited early:\n{proc.output()[-3000:]}")
        found = re.search(r"metrics on (http://[0-9.]+:[0-9]+)/metrics", proc.output())
        return found.group(1) if found else None

    return wait_for(printed, "the worker's metrics address", 60)
