"""Database URL options out of range (issue 12, item 16), through the real `onthedot` command:
each is refused at once with one line naming the option and what it accepts, and a valid value
still works. Nothing is created for a refused SQLite URL."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.torture.harness import ROOT, worker_env

SQLITE_BAD = {
    "busy_timeout=1e309": "busy_timeout",
    "busy_timeout=-1": "busy_timeout",
    "busy_timeout=nan": "busy_timeout",
    "busy_timeout=abc": "busy_timeout",
    "busy_timeout=": "busy_timeout",
    "busy_timeout=1&busy_timeout=2": "busy_timeout",
    "synchronous=bogus": "synchronous",
}
POSTGRES_BAD = {
    "connect_timeout=abc": "connect_timeout",
    "connect_timeout=-5": "connect_timeout",
    "connect_timeout=1e309": "connect_timeout",
    "sslmode=bogus": "sslmode",
    "keepalives=7": "keepalives",
    "keepalives_idle=-1": "keepalives_idle",
}


def onthedot(url: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "onthedot", "--database", url, *args]
    return subprocess.run(
        command, cwd=cwd, env=worker_env(url), capture_output=True, text=True, timeout=60
    )


def _refused(url: str, option: str, cwd: Path) -> float:
    started = time.monotonic()
    done = onthedot(url, "jobs", "list", cwd=cwd)
    took = time.monotonic() - started
    assert done.returncode == 1, (url, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, (url, done.stderr)
    assert lines[0].startswith("Error: ") and repr(option) in lines[0], (url, lines[0])
    return took


@pytest.mark.parametrize("query", list(SQLITE_BAD))
def test_sqlite_options(query: str, tmp_path: Path) -> None:
    _refused(f"sqlite:///x.db?{query}", SQLITE_BAD[query], tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_sqlite_valid_options(tmp_path: Path) -> None:
    url = "sqlite:///x.db?busy_timeout=0.5&synchronous=FULL"
    assert onthedot(url, "migrate", cwd=tmp_path).returncode == 0
    done = onthedot(url, "jobs", "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("query", list(POSTGRES_BAD))
def test_postgres_options(query: str, pg_url: str, tmp_path: Path) -> None:
    started = time.monotonic()
    onthedot(pg_url, "jobs", "list", cwd=tmp_path)  # connects, reads the schema version, exits
    reference = time.monotonic() - started  # the same command with a good URL, on this machine
    took = _refused(f"{pg_url}&{query}", POSTGRES_BAD[query], tmp_path)
    # refused by the option check, not after the pool's 10 s connection timeout
    assert took < reference + 6, f"{query}: {took:.1f}s (a good URL: {reference:.1f}s)"
